"""``cadillac improve``: run the improve cycle, or show the latest one (``--status``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orchestrator.errors import CadillacError
from orchestrator.home import Home

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 140)
REPO = Path(__file__).resolve().parent.parent


def show_improve(folder: Path) -> None:
    from orchestrator.improve import ImproveSummary

    path = folder / "summary.json"
    if not path.is_file():
        raise CadillacError(f"{folder} has no summary.json")
    s = ImproveSummary.model_validate_json(path.read_text(encoding="utf-8"))
    table = Table(title=f"improve {s.id} on {s.repo}", title_justify="left")
    for name in ("iter", "status", "weakness", "train Δ", "95% interval", "holdout Δ", "reason"):
        table.add_column(name, overflow="fold")

    def num(x):
        return "-" if x is None else f"{x:+.3f}"

    for it in s.iterations:
        interval = "-" if not it.interval else f"{it.interval[0]:+.3f} .. {it.interval[1]:+.3f}"
        table.add_row(
            str(it.iteration),
            it.status,
            it.weakness or "-",
            num(it.train_delta),
            interval,
            num(it.holdout_delta),
            it.reason[:120],
        )
    console.print(table)
    state = "running" if s.ended is None else s.stopped_because
    console.print(
        f"base {s.base_commit[:10]} -> tip {s.tip_commit[:10]}; {state}"
        + (f"; {s.apply_note}" if s.apply_note else "")
    )
    console.print(f"records: {folder}")


def improve(args: argparse.Namespace) -> int:
    from orchestrator.improve import ImproveConfig, ImproveCycle, latest_improve_run

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    if args.status:
        show_improve(latest_improve_run(home))
        return 0
    from orchestrator.llm import LLMClient, LLMConfig, check_model
    from orchestrator.matrix import DEFAULT_MATRIX, load_matrix
    from orchestrator.trial import SubprocessMatrix

    model = args.model or os.environ.get("CADILLAC_MODEL", "")
    improver_model = args.improver_model or model
    for name in (model, improver_model):
        check_model(name)
    matrix = Path(args.matrix).resolve() if args.matrix else DEFAULT_MATRIX
    load_matrix(matrix)  # a bad matrix fails now, not after the baseline
    runner = SubprocessMatrix(home.root, matrix, model, args.repeats, args.jobs, args.api_base)
    improver = LLMClient(LLMConfig(model=improver_model, api_base=args.api_base))
    config = ImproveConfig(
        iterations=args.iterations,
        threshold=args.threshold,
        apply=args.apply,
        max_seconds=args.time_budget * 60 if args.time_budget else None,
    )
    cycle = ImproveCycle(
        home,
        Path(args.repo) if args.repo else REPO,
        runner,
        improver,
        config,
        on_event=None if args.json else err.print,
    )
    summary = cycle.run()
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        show_improve(home.runs_dir / f"improve-{summary.id}")
    return 0
