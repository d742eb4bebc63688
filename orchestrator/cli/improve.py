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
    spend_options,
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
        spend_options(),
        run=improve,
    )
    p.add_argument(
        "--threshold", type=unit, help="least train lift worth keeping a patch for (default 0.01)"
    )
    p.add_argument("--time-budget", type=positive_float, metavar="MINUTES")
    p.add_argument("--status", action="store_true", help="show the latest improve run")
    p.add_argument("--json", action="store_true")


def show_improve(folder: Path) -> None:
    from orchestrator.improve.records import ImproveSummary

    path = folder / "summary.json"
    if not path.is_file():
        raise CadillacError(f"{folder} has no summary.json")
    s = ImproveSummary.model_validate_json(path.read_text(encoding="utf-8"))
    columns = ("iter", "status", "weakness", "train Δ", "p", "builds", "holdout Δ", "reason")
    table = output.table(f"improve {s.id} on {s.repo}", ())
    for name in columns:
        table.add_column(name, overflow="fold")

    def num(x):
        return "-" if x is None else f"{x:+.3f}"

    for it in s.iterations:
        p = "-" if it.p is None else f"{it.p:.4f}"
        builds = " + ".join(str(n) for n in it.builds.values()) or "-"
        table.add_row(
            str(it.iteration),
            it.status,
            it.weakness or "-",
            num(it.train_delta),
            p,
            builds,
            num(it.holdout_delta),
            it.reason[:120],
        )
    console = output.out()
    console.print(table)
    state = "running" if s.ended is None else s.stopped_because
    cost = "unknown" if s.cost_usd is None else f"${s.cost_usd:.2f}"
    alpha = "" if s.alpha is None else f"; alpha {s.alpha:.4f} per iteration"
    console.print(
        f"base {s.base_commit[:10]} -> tip {s.tip_commit[:10]}; {state}"
        + (f"; {s.apply_note}" if s.apply_note else "")
    )
    console.print(f"{s.builds} builds, {s.tokens:,} tokens, cost {cost}{alpha}")
    console.print(f"records: {folder}")


def cycle_request(args: argparse.Namespace, max_seconds: float | None = None):
    """The CycleRequest of an improve or nightly command line."""
    from orchestrator.improve.setup import CycleRequest
    from orchestrator.llm.client import LLMConfig

    builder = build_config(args, per_build_cost=False).llm
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
        "threshold": getattr(args, "threshold", None),
        "apply": args.apply,
        "max_seconds": max_seconds,
        "max_cost_usd": args.max_cost,
        "max_tokens": args.max_tokens,
        "unsafe_no_sandbox": args.unsafe_no_sandbox,
    }
    if args.matrix:
        fields["matrix"] = Path(args.matrix)
    if args.repo:
        fields["repo"] = Path(args.repo)
    return CycleRequest(**fields)


def warn_about_caps(request) -> None:
    """Say at the start when a dollar cap cannot be kept (a model's price is unknown)."""
    from orchestrator.llm.prices import cap_warning

    models = [e.model for cfg in (request.builder, request.improver) for e in cfg.endpoints()]
    warning = cap_warning(models, request.max_cost_usd, request.max_tokens)
    if warning:
        output.err().print(f"[bold yellow]warning:[/] {warning}")


def improve(args: argparse.Namespace) -> int:
    from orchestrator.improve.cycle import latest_improve_run

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    if args.status:
        show_improve(latest_improve_run(home))
        return 0
    from orchestrator.improve.setup import make_cycle

    request = cycle_request(args, args.time_budget * 60 if args.time_budget else None)
    warn_about_caps(request)
    cycle = make_cycle(home, request, on_event=None if args.json else output.err().print)
    summary = cycle.run()
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        show_improve(home.runs_dir / f"improve-{summary.id}")
    return 0
