"""``cadillac nightly``, ``cadillac report`` and ``cadillac schedule``: nights and their reports."""

from __future__ import annotations

import argparse
import re
import webbrowser

from orchestrator.cli import output
from orchestrator.cli.args import (
    Parser,
    UsageError,
    command,
    cycle_options,
    home_options,
    load_hooks,
    matrix_options,
    model_options,
    plugin_options,
    sandbox_options,
    spend_options,
    verbosity_options,
)
from orchestrator.cli.improve import (
    cycle_request,
    lifetime_option,
    time_budget_option,
    warn_about_caps,
)
from orchestrator.errors import CadillacError
from orchestrator.home import Home


class ScheduleParser(Parser):
    """The parser of ``schedule print|install|remove``: an option it does not know is most
    likely a nightly argument given before ``--``, and the error says where it goes."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(
                f"unrecognized arguments: {' '.join(extras)}; arguments for cadillac nightly "
                f"go after '--', as in '{self.prog} -- --model openai/gpt-4o'"
            )
        return namespace, extras


def add_parsers(commands) -> None:
    p = command(
        commands,
        "nightly",
        "one improve cycle under a time budget, with a report",
        model_options(),
        matrix_options(),
        cycle_options(),
        sandbox_options(),
        verbosity_options(),
        spend_options(),
        plugin_options(),
        run=nightly,
    )
    time_budget_option(p, default="6h")
    lifetime_option(p)

    p = command(commands, "report", "rebuild the nightly reports", run=report)
    p.add_argument("--open", action="store_true", help="open runs/index.html in a browser")
    p.add_argument("--json", action="store_true", help="list the nights and their reports as JSON")

    sched = command(commands, "schedule", "run the nightly every night")
    sub = sched.add_subparsers(dest="action", metavar="ACTION", parser_class=ScheduleParser)
    sub.required = True
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
    from orchestrator.nightly.run import run_nightly

    home = Home.resolve(getattr(args, "home", None))
    request = cycle_request(args, args.time_budget)
    warn_about_caps(request)
    return run_nightly(home, request, quiet=output.quiet(), hooks=load_hooks(args))


def report(args: argparse.Namespace) -> int:
    from orchestrator.nightly.report import night_summary, rebuild_all

    home = Home.resolve(getattr(args, "home", None)).check()
    folders = rebuild_all(home)
    index = home.runs_dir / "index.html"
    if args.json:
        output.print_json(
            {"index": str(index), "nights": [night_summary(folder) for folder in folders]}
        )
    else:
        for folder in folders:
            print(folder / "report.html")
        print(f"{len(folders)} nightly report(s); index: {index}")
    if args.open:
        try:
            opened = webbrowser.open(index.as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:
            output.warn(f"no browser was found to open the report; it is {index}")
    return 0


def _nightly_parser() -> Parser:
    """A ``cadillac`` parser with this module's commands: the nightly's own options."""
    parser = Parser(prog="cadillac", parents=[home_options()])
    add_parsers(parser.add_subparsers(dest="command", parser_class=Parser))
    return parser


def check_nightly_args(words: list[str]) -> argparse.Namespace:
    """Parse the arguments a schedule will give ``cadillac nightly`` with the nightly's own
    parser, so a typo is refused now, not every night (UsageError naming the argument);
    the nightly's parsed arguments."""
    if any(w == "-h" or (len(w) > 2 and "--help".startswith(w)) for w in words):
        raise UsageError("schedule: --help is not a nightly argument to schedule")
    try:
        parsed = _nightly_parser().parse_args(["nightly", *words])
    except UsageError as exc:
        message = re.sub(r" \(see '[^']*--help'\)$", "", str(exc))
        raise UsageError(
            f"schedule: cadillac nightly would refuse its arguments: {message} "
            "(see 'cadillac nightly --help')"
        ) from None
    if hasattr(parsed, "home"):
        raise UsageError(
            "schedule: --home goes before '--' (the schedule gives it to the nightly itself)"
        )
    if not parsed.model or not parsed.model.strip():
        raise UsageError(
            "schedule: give the nightly its model after '--' (as in 'cadillac schedule print "
            "-- --model openai/gpt-4o'): cron and systemd pass no CADILLAC_MODEL"
        )
    return parsed


def schedule(args: argparse.Namespace) -> int:
    from orchestrator.nightly.schedule import handle

    args.nightly_args = [a for a in (args.nightly_args or []) if a != "--"]
    if args.action != "remove":
        check_nightly_args(args.nightly_args)
    if args.action == "print":  # install makes the home; a printed line would find none
        home = Home.resolve(getattr(args, "home", None))
        if not home.root.is_dir():
            raise CadillacError(
                f"schedule print: the home {home.root} does not exist, so the line would fail "
                "every night: make it, or run 'cadillac schedule install', which makes it"
            )
    return handle(args)
