"""``cadillac nightly``, ``cadillac report`` and ``cadillac schedule``: nights and their reports."""

from __future__ import annotations

import argparse
import webbrowser

from orchestrator.cli.args import (
    actions,
    command,
    cycle_options,
    matrix_options,
    model_options,
    sandbox_options,
    spend_options,
)
from orchestrator.cli.improve import cycle_request, warn_about_caps
from orchestrator.home import Home


def add_parsers(commands) -> None:
    p = command(
        commands,
        "nightly",
        "one improve cycle under a time budget, with a report",
        model_options(),
        matrix_options(),
        cycle_options(),
        sandbox_options(),
        spend_options(),
        run=nightly,
    )
    p.add_argument("--time-budget", default="6h", metavar="DURATION", help="e.g. 6h, 90m")

    p = command(commands, "report", "rebuild the nightly reports", run=report)
    p.add_argument("--open", action="store_true", help="open runs/index.html in a browser")

    sched = command(commands, "schedule", "run the nightly every night")
    sub = actions(sched, required=True)
    for action, text in (
        ("print", "print the crontab line or systemd units"),
        ("install", "install them"),
        ("remove", "take them away"),
    ):
        p = command(sub, action, text, run=schedule, kind="cron")
        p.add_argument("--at", default="02:17", metavar="HH:MM", help="time of day (default 02:17)")
        kind = p.add_mutually_exclusive_group()
        kind.add_argument("--cron", dest="kind", action="store_const", const="cron")
        kind.add_argument("--systemd", dest="kind", action="store_const", const="systemd")
        p.add_argument(
            "nightly_args",
            nargs=argparse.REMAINDER,
            help="arguments for cadillac nightly, after --",
        )


def nightly(args: argparse.Namespace) -> int:
    from orchestrator.nightly.records import parse_duration
    from orchestrator.nightly.run import run_nightly

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    budget = parse_duration(args.time_budget) if args.time_budget else None
    request = cycle_request(args, budget)
    warn_about_caps(request)
    return run_nightly(home, request)


def report(args: argparse.Namespace) -> int:
    from orchestrator.nightly.report import rebuild_all

    home = Home.resolve(getattr(args, "home", None)).check()
    folders = rebuild_all(home)
    index = home.runs_dir / "index.html"
    for folder in folders:
        print(folder / "report.html")
    print(f"{len(folders)} nightly report(s); index: {index}")
    if args.open:
        webbrowser.open(index.as_uri())
    return 0


def schedule(args: argparse.Namespace) -> int:
    from orchestrator.nightly.schedule import handle

    args.nightly_args = [a for a in (args.nightly_args or []) if a != "--"]
    return handle(args)
