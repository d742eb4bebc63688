# PYTHON_ARGCOMPLETE_OK (argcomplete's global completion completes a program that says so)
"""The ``cadillac`` command line: parse, find the home, run one command, print errors as one line.

Each command group is a module here (:mod:`~orchestrator.cli.memory`,
:mod:`~orchestrator.cli.build`, :mod:`~orchestrator.cli.runs`, :mod:`~orchestrator.cli.matrix`,
:mod:`~orchestrator.cli.improve`, :mod:`~orchestrator.cli.nightly`) that adds its parsers
and holds its commands; a command imports what it needs when it runs, so ``cadillac
--help`` stays fast and loads no heavy library. A :class:`CadillacError` (or a file-system
error) becomes ``cadillac: error: <message>`` on stderr and exit status 1; a usage mistake
(an empty task, no command at all: bare ``cadillac`` prints its help) exits 2;
warnings (a corrupt line in a store, say) print as ``cadillac: warning: <message>``
through :func:`orchestrator.cli.output.warn`.

Shell completion is argcomplete's: the shell runs ``cadillac`` with ``_ARGCOMPLETE`` set,
and :func:`complete` answers from the parser (commands, actions, options) and exits. It is
imported only then, so a plain command pays nothing for it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import warnings
from collections.abc import Sequence

from orchestrator import __version__
from orchestrator.cli import (
    build,
    enhance,
    improve,
    index,
    matrix,
    memory,
    nightly,
    output,
    runs,
    serve,
    skills,
)
from orchestrator.cli.args import Parser, UsageError, home_options
from orchestrator.errors import CadillacError

GROUPS = (memory, skills, build, runs, enhance, index, matrix, improve, nightly, serve)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="cadillac",
        description="A self-improving build orchestrator: an LLM builds a task in six phases.",
        parents=[home_options()],
    )
    parser.add_argument("--version", action="version", version=f"cadillac {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for group in GROUPS:
        group.add_parsers(commands)
    return parser


def complete(parser: argparse.ArgumentParser) -> None:
    """When the shell asks for completions (argcomplete's ``_ARGCOMPLETE`` is set), print
    them and exit; else nothing (argcomplete is not even imported)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(parser)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    output.warn(str(message))


def _terminate(signum, frame):
    raise KeyboardInterrupt  # SIGTERM stops a command the way Ctrl-C does


def entry() -> None:
    """The ``cadillac`` program: :func:`main`, then an exit that a late Ctrl-C cannot spoil.

    Once the command has returned, its work is done and said; a Ctrl-C or SIGTERM while
    the interpreter shuts down (joining a finished pool's threads, flushing) would only
    print "Exception ignored ... KeyboardInterrupt" over a result that stands, so both
    are ignored from then on.
    """
    status = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left after the last line: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if argv is None:  # the program itself, not a call from Python: the shell may complete
        complete(parser)
    try:
        args = parser.parse_args(argv)
        if args.command is None:  # a command is missing: a usage mistake, as argparse has it
            parser.print_help()
            return 2
        output.set_verbosity(getattr(args, "verbosity", "normal"))
        warnings.showwarning = _show_warning
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _terminate)
        return args.run(args) or 0
    except UsageError as exc:
        print(f"cadillac: error: {exc}", file=sys.stderr)
        return 2
    except CadillacError as exc:
        print(f"cadillac: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `cadillac memory list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"cadillac: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cadillac: interrupted", file=sys.stderr)
        if argv is None and threading.active_count() > 1:
            # a build thread may sit in a model call that ends only at its timeout: what
            # matters is on disk already, so leave now instead of joining it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    finally:  # the next command run in this process (tests) starts from the default
        output.set_verbosity("normal")
