"""How commands print: rich consoles for people, JSON for programs, made when first used.

rich is imported only when a command prints, so ``cadillac --help`` loads no heavy
library. Output that is piped gets a fixed width instead of rich's 80-column default, so
logs and ``grep`` see whole rows.

How much a long command says is set once per command (:func:`set_verbosity`, from
``--quiet`` or ``--verbose``): progress goes to :func:`err`, which ``--quiet`` silences,
results to :func:`out`; errors and warnings (:func:`warn`) are plain prints that no
setting silences, and ``--verbose`` adds a line per tool call of a build
(:func:`show_tool_calls`).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

PIPED_WIDTH = 140


def _console(**options):
    """A rich console for which a reader that left (``| head``) is a normal end.

    rich's own answer to a closed pipe is ``SystemExit(1)``; this one goes quiet and raises
    BrokenPipeError, which the command line turns into exit status 0, as for plain prints.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(highlight=False, **options)


@functools.cache
def out():
    """The console on standard output."""
    return _console(width=None if sys.stdout.isatty() else PIPED_WIDTH)


@functools.cache
def err():
    """The console on standard error: progress and status lines."""
    width = None if sys.stderr.isatty() else PIPED_WIDTH
    return _console(stderr=True, width=width, quiet=_verbosity == "quiet")


VERBOSITY = ("quiet", "normal", "verbose")
"""How much a command that works for a while prints (``--quiet``, neither, ``--verbose``)."""

_verbosity = "normal"


def set_verbosity(level: str) -> None:
    """Set how much the progress console says, for the command about to run: ``quiet``
    makes :func:`err` silent (progress and status lines; errors and warnings are plain
    prints and still appear), ``verbose`` makes :func:`show_tool_calls` print."""
    global _verbosity
    if level not in VERBOSITY:
        raise ValueError(f"verbosity {level!r} is not one of {', '.join(VERBOSITY)}")
    _verbosity = level
    err.cache_clear()


def quiet() -> bool:
    """``--quiet`` was given: print the result line(s) and errors only."""
    return _verbosity == "quiet"


def verbose() -> bool:
    """``--verbose`` was given: say each tool call a build makes too."""
    return _verbosity == "verbose"


def tool_call(name: str, arguments: str, width: int = 160) -> str:
    """One tool call as a line: its name and each argument, long values cut
    (``run command='pytest -q'``; ``write_file path='app.py' content='import os\\n…'``)."""
    try:
        values = json.loads(arguments)
    except ValueError:
        values = None
    if not isinstance(values, dict):
        return short(f"{name} {arguments!r}", width)
    shown = " ".join(f"{key}={short(repr(value), 60)}" for key, value in values.items())
    return short(f"{name} {shown}".rstrip(), width)


def show_tool_calls(builder, label: str = "") -> None:
    """With ``--verbose``, a line on stderr for each tool call of ``builder`` as it starts
    (what the model asked for, the command a ``run`` call runs), after ``label`` (a matrix
    build's task and repeat); else nothing."""
    if not verbose():
        return
    dispatch = builder.toolbox.dispatch
    head = f"  {label} → " if label else "  → "

    def traced(name: str, arguments: str):
        err().print(f"{head}{tool_call(name, arguments)}", markup=False, soft_wrap=True)
        return dispatch(name, arguments)

    builder.toolbox.dispatch = traced


def verbosity() -> str:
    return _verbosity


@dataclass(frozen=True)
class BuildTracer:
    """``on_builder`` of a matrix run: :func:`show_tool_calls` for each build, labelled with
    its task and repeat. Plain data, so a worker process can be handed it: it prints
    from there, at the verbosity of the command that started the run."""

    level: str

    def __call__(self, builder, task, repeat: int) -> None:
        if _verbosity != self.level:
            set_verbosity(self.level)
        show_tool_calls(builder, f"{task.id} #{repeat + 1}")


def table(title: str | None, columns: Iterable[str], right: Iterable[str] = (), **options):
    """A rich table with these columns; those named in ``right`` are right-aligned."""
    from rich.table import Table

    aligned = set(right)
    t = Table(title=title, title_justify="left", **options)
    for name in columns:
        t.add_column(name, justify="right" if name in aligned else "left")
    return t


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def line(text: str) -> None:
    """One line as it is: no rich markup read into it, no wrapping of a long path."""
    out().print(text, markup=False, soft_wrap=True)


WARNING = "cadillac: warning: "
"""The one prefix of every warning line (plugins' too: :meth:`orchestrator.hooks.Hooks.report`)."""


def warn(message: str) -> None:
    """One warning line on stderr, as it is (no markup read into it): every warning of the
    command line goes through here, so each starts with :data:`WARNING`."""
    print(f"{WARNING}{message}", file=sys.stderr, flush=True)


TIME_FIELDS = frozenset({"ts", "last_used_ts", "created", "updated"})
"""Fields that hold Unix times: shown as local dates, kept as numbers in --json."""


def when(stamp: object) -> str:
    """A Unix time as a local date and time (what is not a number is shown as it is)."""
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return str(stamp)
    try:
        return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(stamp)


def fields(values: dict) -> None:
    """A record's fields, a row each (a list as its items joined by commas, a time as a
    date: :data:`TIME_FIELDS`)."""
    t = table(None, (), show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    for key, value in values.items():
        if isinstance(value, list):
            shown = ", ".join(map(str, value))
        elif key in TIME_FIELDS and value is not None:
            shown = when(value)
        else:
            shown = str(value)
        t.add_row(key, shown)
    out().print(t)


def answered_by(summary) -> str:
    """``; answered by M1 13, M2 8`` when a model other than the run's own (a fallback)
    answered some of its calls; "" when the run's model answered them all."""
    counts = getattr(summary, "calls_by_model", None) or {}
    if set(counts) <= {summary.model}:
        return ""
    return "; answered by " + ", ".join(f"{model} {n}" for model, n in counts.items())


def seconds(value: float) -> str:
    """A duration as a person reads it: ``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    value = max(0, int(value))
    if value < 60:
        return f"{value} s"
    if value < 3600:
        return f"{value // 60} min {value % 60:02d} s"
    return f"{value // 3600} h {value % 3600 // 60:02d} min"


class StatusLine:
    """The live status line of a build: its phase and round, what it does and for how long
    (counted while it waits, so a server that never answers shows the time passing), and
    the tokens and cost so far. rich renders it again at every refresh of the status."""

    def __init__(self, progress, clock=None):
        import time

        self.progress = progress
        self.clock = clock or time.time

    def text(self) -> str:
        from orchestrator.llm.prices import usd

        p = self.progress
        cost = "" if p.cost_usd is None else f" · ${usd(p.cost_usd)}"
        return (
            f"{p.phase} · round {p.round}/{p.budget} · {p.action} "
            f"{seconds(self.clock() - p.since)} · {p.tokens:,} tokens{cost}"
        )

    def __rich__(self):
        from rich.text import Text

        return Text(self.text())  # no markup read into a phase's or a tool's name
