"""The ``cadillac`` command line: parse, find the home, run one command, print errors as one line.

Command modules are imported only when their command runs, so ``cadillac
--help`` stays fast and loads no heavy library. A :class:`CadillacError` (or a
file-system error) becomes ``cadillac: error: <message>`` on stderr and exit
status 1; a usage mistake exits 2; warnings (a corrupt line in a store, say)
print as ``cadillac: warning: <message>``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from importlib import import_module

from orchestrator import __version__
from orchestrator.errors import CadillacError
from orchestrator.home import ENV_VAR

LESSON_TYPES = ("error_pattern", "architecture", "tool_pattern", "dependency", "performance")
SCORER_NAMES = ("default", "seed")


class UsageError(CadillacError):
    """A malformed command line (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _number(cast: type, valid, rule: str):
    """An argparse type: ``cast`` the text, then require ``valid(number)``."""
    kind = "a whole number" if cast is int else "a number"

    def parse(value: str):
        try:
            number = cast(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not {kind}") from None
        if not valid(number):
            raise argparse.ArgumentTypeError(f"{value!r} {rule}")
        return number

    return parse


_positive = _number(int, lambda n: n >= 1, "must be at least 1")
_unit = _number(float, lambda n: 0.0 <= n <= 1.0, "is not between 0 and 1")
_positive_float = _number(float, lambda n: n > 0, "must be more than 0")


def build_parser() -> argparse.ArgumentParser:
    home = _Parser(add_help=False)
    home.add_argument(
        "--home",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help=f"state folder (default: ${ENV_VAR}, else the current directory)",
    )
    parser = _Parser(
        prog="cadillac",
        description="A self-improving build orchestrator: an LLM builds a task in six phases.",
        parents=[home],
    )
    parser.add_argument("--version", action="version", version=f"cadillac {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    memory = commands.add_parser(
        "memory", parents=[home], help="lessons learned from builds (memory.jsonl)"
    )
    memory.set_defaults(run="memory_list", type=None, tag=None, polarity=None, limit=None)
    memory.set_defaults(json=False)
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION", parser_class=_Parser)

    p = sub.add_parser("list", parents=[home], help="list lessons")
    p.add_argument("--type", choices=LESSON_TYPES)
    p.add_argument("--tag", help="only lessons with this tag")
    p.add_argument("--polarity", choices=("do", "dont"))
    p.add_argument("--limit", type=_positive, help="show at most N lessons")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.set_defaults(run="memory_list")

    p = sub.add_parser("show", parents=[home], help="show one lesson")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="memory_show")

    p = sub.add_parser("add", parents=[home], help="add a lesson by hand")
    p.add_argument("--type", required=True, choices=LESSON_TYPES)
    p.add_argument("--trigger", required=True, help="the situation, in one line")
    p.add_argument("--fix", required=True, help="what to do (with --dont: what never to do)")
    p.add_argument("--dont", action="store_true", help="an anti-pattern (polarity dont)")
    p.add_argument("--tags", type=_csv, help="comma-separated (default: inferred from the text)")
    p.add_argument("--confidence", type=_unit, default=0.5, help="0..1 (default 0.5)")
    p.add_argument("--source-task", default="", help="the task it was learned on")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="memory_add")

    p = sub.add_parser("forget", parents=[home], help="delete a lesson")
    p.add_argument("id")
    p.set_defaults(run="memory_forget")

    p = sub.add_parser("recall", parents=[home], help="the lessons a build of TASK would see")
    p.add_argument("task")
    p.add_argument("--limit", type=_positive, default=10)
    p.add_argument("--explain", action="store_true", help="show each score's parts and layers")
    p.add_argument("--scorer", choices=SCORER_NAMES, default="default")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="memory_recall")

    p = sub.add_parser("stats", parents=[home], help="counts, reuse and confidence")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="memory_stats")

    p = sub.add_parser("path", parents=[home], help="print the memory file's path")
    p.set_defaults(run="memory_path")

    p = commands.add_parser(
        "budgets", parents=[home], help="phase budgets learned from history (phase_budgets.jsonl)"
    )
    p.add_argument("--tags", type=_csv, default=[], help="task tags, e.g. python,flask")
    p.add_argument("--json", action="store_true")
    p.add_argument("--path", action="store_true", help="print the history file's path")
    p.set_defaults(run="budgets")

    model = _Parser(add_help=False)
    model.add_argument("--model", help="litellm model string (default: $CADILLAC_MODEL)")
    model.add_argument("--api-base", help="server URL for a local or proxied model")
    model.add_argument(
        "--fallback-model",
        action="append",
        metavar="MODEL",
        help="tried when the model keeps failing (repeatable)",
    )

    p = commands.add_parser(
        "build", parents=[home, model], help="build TASK through the six phases"
    )
    p.add_argument("task", nargs="?", help='what to build, e.g. "a Flask todo API with SQLite"')
    p.add_argument(
        "--max-cost",
        type=_positive_float,
        metavar="USD",
        help="stop (resumably) before the spend passes this",
    )
    p.add_argument(
        "--resume", metavar="RUN_ID", help="continue a run from its first unpassed phase"
    )
    p.add_argument("--json", action="store_true", help="print only the summary, as JSON")
    p.set_defaults(run="build_commands:build")

    matrix_dir = _Parser(add_help=False)
    matrix_dir.add_argument(
        "--matrix", metavar="DIR", help="a folder of tasks (default: matrices/default)"
    )
    matrix_dir.add_argument("--jobs", type=_positive, default=1, metavar="N", help="builds at once")

    matrix = commands.add_parser("matrix", parents=[home], help="the benchmark matrix")
    sub = matrix.add_subparsers(dest="matrix_command", metavar="ACTION", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser(
        "run", parents=[home, model, matrix_dir], help="build every task K times and score"
    )
    p.add_argument("--repeats", type=_positive, default=1, metavar="K")
    p.add_argument("--split", choices=("train", "holdout", "all"), default="all")
    p.add_argument(
        "--no-learn", action="store_true", help="leave memory and budget history as they are"
    )
    p.add_argument("--json", action="store_true", help="print only the results, as JSON")
    p.set_defaults(run="matrix_commands:matrix_run")

    cycle = _Parser(add_help=False)  # what improve and nightly share
    cycle.add_argument("--iterations", type=_positive, default=5, metavar="N")
    cycle.add_argument("--repeats", type=_positive, default=3, metavar="K", help="builds per task")
    cycle.add_argument("--improver-model", metavar="M", help="model that writes patches")
    cycle.add_argument(
        "--repo", metavar="PATH", help="the repository to patch (default: cadillac's own)"
    )
    cycle.add_argument(
        "--apply", action="store_true", help="fast-forward the checkout to the kept patches"
    )

    p = commands.add_parser(
        "improve",
        parents=[home, model, matrix_dir, cycle],
        help="patch cadillac where the matrix finds it weak",
    )
    p.add_argument("--threshold", type=_unit, default=0.05, help="least train lift to keep a patch")
    p.add_argument("--time-budget", type=_positive_float, metavar="MINUTES")
    p.add_argument("--status", action="store_true", help="show the latest improve run")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="improve_commands:improve")

    p = commands.add_parser(
        "nightly",
        parents=[home, model, matrix_dir, cycle],
        help="one improve cycle under a time budget, with a report",
    )
    p.add_argument("--time-budget", default="6h", metavar="DURATION", help="e.g. 6h, 90m")
    p.set_defaults(run="nightly_commands:nightly")

    p = commands.add_parser("report", parents=[home], help="rebuild the nightly reports")
    p.add_argument("--open", action="store_true", help="open runs/index.html in a browser")
    p.set_defaults(run="nightly_commands:report")

    sched = commands.add_parser("schedule", parents=[home], help="run the nightly every night")
    sub = sched.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    sub.required = True
    for action, text in (
        ("print", "print the crontab line or systemd units"),
        ("install", "install them"),
        ("remove", "take them away"),
    ):
        p = sub.add_parser(action, parents=[home], help=text)
        p.add_argument("--at", default="02:17", metavar="HH:MM", help="time of day (default 02:17)")
        kind = p.add_mutually_exclusive_group()
        kind.add_argument("--cron", dest="kind", action="store_const", const="cron")
        kind.add_argument("--systemd", dest="kind", action="store_const", const="systemd")
        p.add_argument(
            "nightly_args",
            nargs=argparse.REMAINDER,
            help="arguments for cadillac nightly, after --",
        )
        p.set_defaults(run="nightly_commands:schedule", kind="cron")

    runs = commands.add_parser("runs", parents=[home], help="past runs (runs/ in the home)")
    runs.set_defaults(run="build_commands:runs_list", json=False)
    sub = runs.add_subparsers(dest="runs_command", metavar="ACTION", parser_class=_Parser)
    p = sub.add_parser("list", parents=[home], help="list runs, newest first")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="build_commands:runs_list")
    p = sub.add_parser("show", parents=[home], help="one run's task and summary")
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run="build_commands:runs_show")
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"cadillac: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        warnings.showwarning = _show_warning
        module_name, _, func = args.run.rpartition(":")
        module = import_module(f"orchestrator.{module_name or 'state_commands'}")
        return getattr(module, func)(args) or 0
    except UsageError as exc:
        print(f"cadillac: error: {exc}", file=sys.stderr)
        return 2
    except CadillacError as exc:
        print(f"cadillac: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `cadillac memory list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"cadillac: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cadillac: interrupted", file=sys.stderr)
        return 130
