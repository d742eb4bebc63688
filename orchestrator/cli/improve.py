"""``cadillac improve``: run the improve cycle, or show the latest one (``--status``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import (
    command,
    cycle_options,
    matrix_options,
    model_options,
    positive_float,
    sandbox_options,
    unit,
)
from orchestrator.cli.config import build_config
from orchestrator.errors import CadillacError
from orchestrator.home import Home


def add_parsers(commands) -> None:
    p = command(
        commands,
        "improve",
        "patch cadillac where the matrix finds it weak",
        model_options(),
        matrix_options(),
        cycle_options(),
        sandbox_options(),
        run=improve,
    )
    p.add_argument("--threshold", type=unit, default=0.05, help="least train lift to keep a patch")
    p.add_argument("--time-budget", type=positive_float, metavar="MINUTES")
    p.add_argument("--status", action="store_true", help="show the latest improve run")
    p.add_argument("--json", action="store_true")


def show_improve(folder: Path) -> None:
    from orchestrator.improve.records import ImproveSummary

    path = folder / "summary.json"
    if not path.is_file():
        raise CadillacError(f"{folder} has no summary.json")
    s = ImproveSummary.model_validate_json(path.read_text(encoding="utf-8"))
    columns = ("iter", "status", "weakness", "train Δ", "95% interval", "holdout Δ", "reason")
    table = output.table(f"improve {s.id} on {s.repo}", ())
    for name in columns:
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
    console = output.out()
    console.print(table)
    state = "running" if s.ended is None else s.stopped_because
    console.print(
        f"base {s.base_commit[:10]} -> tip {s.tip_commit[:10]}; {state}"
        + (f"; {s.apply_note}" if s.apply_note else "")
    )
    console.print(f"records: {folder}")


def cycle_request(args: argparse.Namespace, max_seconds: float | None = None):
    """The CycleRequest of an improve or nightly command line."""
    from orchestrator.improve.setup import CycleRequest
    from orchestrator.llm.client import LLMConfig

    builder = build_config(args).llm
    improver = LLMConfig(
        model=args.improver_model or builder.model,
        api_base=args.improver_api_base or (None if args.improver_model else builder.api_base),
    )
    fields = {
        "builder": builder,
        "improver": improver,
        "repeats": args.repeats,
        "jobs": args.jobs,
        "iterations": args.iterations,
        "threshold": getattr(args, "threshold", 0.05),
        "apply": args.apply,
        "max_seconds": max_seconds,
        "unsafe_no_sandbox": args.unsafe_no_sandbox,
    }
    if args.matrix:
        fields["matrix"] = Path(args.matrix)
    if args.repo:
        fields["repo"] = Path(args.repo)
    return CycleRequest(**fields)


def improve(args: argparse.Namespace) -> int:
    from orchestrator.improve.cycle import latest_improve_run

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    if args.status:
        show_improve(latest_improve_run(home))
        return 0
    from orchestrator.improve.setup import make_cycle

    request = cycle_request(args, args.time_budget * 60 if args.time_budget else None)
    cycle = make_cycle(home, request, on_event=None if args.json else output.err().print)
    summary = cycle.run()
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        show_improve(home.runs_dir / f"improve-{summary.id}")
    return 0
