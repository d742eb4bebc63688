"""``cadillac runs show ID --trajectory`` and ``--follow``: a build's rounds in the terminal.

A build's ``trajectory.jsonl`` (:mod:`orchestrator.loop.trajectory`) is printed phase by
phase: a header per phase (its outcome, rounds of its budget, time and check), then each
round (its time and tokens, what the model wrote, every tool call with its arguments and
its result, the check and what was sent back when it failed) and each reflection with
the lessons drawn. Long values are cut (``--full`` shows them whole). ``--json`` gives the
same as one document. ``--follow`` (:mod:`orchestrator.cli.follow`) prints with the same
:class:`Printer`.

Everything in a trajectory was written by a model or printed by its commands: it is
printed as rich ``Text`` (no markup read into it) after :func:`output.inert` made every
control character visible (rich drops a carriage return or a backspace without a trace
and lets ESC through, so an escape sequence would reach the terminal raw).
"""

from __future__ import annotations

import json
import os
import sys

from orchestrator.cli import output
from orchestrator.loop.runs import PhaseSummary, Run, RunSummary, RunUnreadable
from orchestrator.loop.trajectory import (
    ROUND_EVENTS,
    ReflectionRecord,
    RoundRecord,
    ToolStep,
    Trajectory,
    read_trajectory,
)

ARG_LINES = 4
"""Of a tool argument of several lines (a file's content), the lines shown."""
TEXT_CUT = (20, 5)
RESULT_CUT = (8, 4)
"""Of the model's text and of a tool's result, the first and last lines shown."""
LINE_CHARS = 300
VALUE_CHARS = 120

Record = RoundRecord | ReflectionRecord


def status_of(run: Run, summary: RunSummary | None) -> str:
    """The build's status as ``runs list`` has it (:meth:`Run.status`)."""
    return run.status(summary)


def read_summary(run: Run, last: RunSummary | None = None) -> RunSummary | None:
    """The run's summary; ``last`` (what was read before) when it cannot be read now."""
    try:
        return run.summary()
    except RunUnreadable:
        return last  # being replaced as it is read: what was read before stands


def in_order(found: Trajectory) -> list[Record]:
    return sorted([*found.rounds, *found.reflections], key=lambda r: r.ts)


# ---------------------------------------------------------------------------- text
def cut(text: str, head: int, tail: int, full: bool) -> list[str]:
    """``text``'s lines, those past the first ``head`` and before the last ``tail`` left out
    (said how many) and each cut at :data:`LINE_CHARS`, unless ``full``."""
    lines = text.split("\n")
    if full:
        return lines
    lines = [_short_line(x) for x in lines]
    if len(lines) <= head + tail + 1:
        return lines
    left = len(lines) - head - tail
    return [*lines[:head], f"… {left} lines left out …", *lines[-tail:]]


def _short_line(line: str) -> str:
    more = len(line) - LINE_CHARS
    return line if more <= 0 else f"{line[:LINE_CHARS]}… ({more:,} more characters)"


class Printer:
    """Prints records as rich Text on a console, every value made inert first."""

    def __init__(self, console, full: bool = False):
        self.console = console
        self.full = full
        self.phase: str | None = None
        """The phase whose header was printed last."""
        self.ended: set[str] = set()
        """Phases whose outcome was printed (in a header or a closing line)."""

    def say(self, *parts: tuple[str, str] | str, indent: int = 0) -> None:
        from rich.text import Text

        line = Text(" " * indent)
        for part in parts:
            text, style = (part, "") if isinstance(part, str) else part
            line.append(output.inert(text), style=style)
        self.console.print(line, soft_wrap=True)

    def _block(self, lines: list[str], indent: int, style: str = "") -> None:
        for x in lines:
            self.say(("│ ", "dim"), (x, style), indent=indent)

    # ---- phases
    def phase_header(self, name: str, ended: PhaseSummary | None, state: str, budget) -> None:
        self.phase = name
        self.console.print()
        if ended is None:
            of = f" (budget {budget} rounds)" if budget else ""
            self.say(("━━ ", "bold"), (name, "bold"), " ", (state, "yellow"), of)
            return
        self.ended.add(name)
        self.say(("━━ ", "bold"), (name, "bold"), " ", *self._outcome(ended))

    def phase_end(self, ended: PhaseSummary) -> None:
        self.ended.add(ended.phase)
        self.say(("━━ ", "bold"), (f"{ended.phase} ended: ", "bold"), *self._outcome(ended))

    def phase_skipped(self, ended: PhaseSummary) -> None:
        """A phase that ended without a round of its own."""
        self.phase_header(ended.phase, ended, "", None)

    def finish(self, run: Run, summary, status: str, recorded: bool) -> None:
        """The end of the trajectory: a run without one says so, then the status line."""
        if not recorded:
            _predates(self, run, summary, status)
        _status_line(self, run, summary, status)

    def _outcome(self, p: PhaseSummary) -> list[tuple[str, str] | str]:
        style = "green" if p.outcome == "passed" else "red"
        check = f" · check: {p.check}" if p.check else ""
        return [
            (p.outcome, f"bold {style}"),
            f" · {p.rounds}/{p.budget} rounds · {output.seconds(p.seconds)}{check}",
        ]

    # ---- records
    def record(self, r: Record) -> None:
        if isinstance(r, RoundRecord):
            self.round(r)
        else:
            self.reflection(r)

    def round(self, r: RoundRecord) -> None:
        from orchestrator.llm.prices import usd

        cost = "" if r.cost_usd is None else f" · ${usd(r.cost_usd)}"
        tokens = f"{r.tokens_in:,} tokens in, {r.tokens_out:,} out"
        self.say((f"round {r.round}", "bold cyan"), f" · {r.seconds:.1f} s · {tokens}{cost}")
        if r.text and r.text.strip():
            self.say(("model says:", "magenta"), indent=2)
            self._block(cut(r.text.strip("\n"), *TEXT_CUT, self.full), indent=4)
        if r.nudged:
            self.say(("no tool call: the model was told to call one", "yellow"), indent=2)
        for step in r.tools:
            self.tool(step)
        if r.check is not None:
            c = r.check
            verdict = ("check passed", "bold green") if c.passed else ("check failed", "bold red")
            self.say(verdict, ": ", c.summary, indent=2)
            if not c.passed and c.sent.strip():
                self.say(("sent back:", "dim"), indent=4)
                self._block(cut(c.sent.strip("\n"), *RESULT_CUT, self.full), indent=4)
        if r.ended:
            self.say(("ended early: ", "bold red"), r.ended, indent=2)

    def tool(self, step: ToolStep) -> None:
        inline, blocks = self.arguments(step.arguments)
        self.say(("→ ", "bold"), (step.name, "bold"), *inline, indent=2)
        for key, lines in blocks:
            self.say((f"{key}:", "dim"), indent=4)
            self._block(lines, indent=4)
        mark = ("← ok", "green") if step.ok else ("← failed", "bold red")
        result = step.result.strip("\n")
        size = f" · {len(result.splitlines())} lines" if "\n" in result else ""
        self.say(mark, f" · {step.seconds:.2f} s{size}", indent=4)
        if result:
            self._block(cut(result, *RESULT_CUT, self.full), indent=4)

    def arguments(self, raw: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
        """A call's arguments: short ones inline (`` key=value``), those of several lines
        (a file's content, an edit's old and new text) as blocks of their first lines."""
        try:
            values = json.loads(raw) if raw.strip() else {}
        except ValueError:
            values = None
        if not isinstance(values, dict):
            return [" ", self._value(raw)], []
        inline: list[str] = []
        blocks: list[tuple[str, list[str]]] = []
        for key, value in values.items():
            if isinstance(value, str) and ("\n" in value.strip("\n") or len(value) > VALUE_CHARS):
                lines = value.split("\n")
                if lines and not lines[-1]:
                    lines.pop()  # the file's last newline
                shown = lines if self.full else [_short_line(x) for x in lines[:ARG_LINES]]
                if len(shown) < len(lines):
                    shown.append(f"… {len(lines) - len(shown)} more lines")
                label = f"{key} ({len(lines)} line{'s' if len(lines) != 1 else ''})"
                blocks.append((label, shown))
            else:
                inline.append(f" {key}={self._value(json.dumps(value, ensure_ascii=False))}")
        return inline, blocks

    def _value(self, text: str) -> str:
        return text if self.full else output.short(text, VALUE_CHARS)

    def reflection(self, r: ReflectionRecord) -> None:
        n = len(r.lessons)
        drew = f"{n} lesson{'s' if n != 1 else ''} drawn" if n else "no lesson drawn"
        self.say((f"reflection on {r.phase}", "bold magenta"), f": {drew}")
        for lesson in r.lessons:
            ident = lesson.id or "not stored"
            mark = ("don't ", "red") if lesson.polarity == "dont" else ("do ", "green")
            self.say(f"[{ident}] {lesson.type} ", mark, lesson.trigger, indent=2)
            self.say(("→ ", "dim"), lesson.fix, indent=4)
        for why in r.skipped:
            self.say(("skipped: ", "dim"), why, indent=2)
        if self.full and r.answer.strip():
            self.say(("the reviewer's answer:", "dim"), indent=2)
            self._block(r.answer.strip("\n").split("\n"), indent=4)


# ---------------------------------------------------------------------------- the whole
def phase_budgets(run: Run) -> dict[str, int]:
    """Each started phase's budget, from its ``phase_start`` event."""
    found: dict[str, int] = {}
    for e in run.events():
        if e.kind == "phase_start" and e.phase and isinstance(e.data.get("budget"), int):
            found[e.phase] = e.data["budget"]
    return found


def show(run: Run, full: bool, as_json: bool) -> int:
    """The build's trajectory, phase by phase (paged on a terminal), or as one document."""
    summary = run.summary()
    status = status_of(run, summary)
    found = read_trajectory(run.dir)
    if as_json:
        document = {
            "run_id": run.id,
            "status": status,
            "recorded": found.recorded,
            "phases": [p.model_dump(mode="json") for p in summary.phases] if summary else [],
            "rounds": [r.model_dump(mode="json") for r in found.rounds],
            "reflections": [r.model_dump(mode="json") for r in found.reflections],
        }
        sys.stdout.write(output.inert_json(document, indent=2) + "\n")
        return 0
    console = output.out()
    with _paged(console):
        printer = Printer(console, full)
        if found.recorded:
            _all(printer, run, summary, status, found)
        printer.finish(run, summary, status, found.recorded)
    return 0


def _paged(console):
    """rich's pager when standard output is a terminal; else nothing."""
    from contextlib import nullcontext

    if not sys.stdout.isatty():
        return nullcontext()
    os.environ.setdefault("LESS", "FRX")  # as git does: one screen is not paged, colours kept
    pager = os.environ.get("MANPAGER") or os.environ.get("PAGER") or "less"
    styles = "less" in pager and bool(set(os.environ["LESS"]) & {"R", "r"})
    return console.pager(styles=styles)


def _all(printer: Printer, run: Run, summary, status: str, found: Trajectory) -> None:
    ended = {p.phase: p for p in summary.phases} if summary else {}
    budgets = phase_budgets(run)
    order = list(ended)
    for name in [*found.phases(), *budgets]:
        if name not in order:
            order.append(name)
    for name in order:
        printer.phase_header(name, ended.get(name), status, budgets.get(name))
        for record in in_order(found):
            if record.phase == name:
                printer.record(record)
    if found.unreadable:
        printer.say((f"{found.unreadable} line(s) of trajectory.jsonl unreadable", "yellow"))


def _predates(printer: Printer, run: Run, summary, status: str) -> None:
    """A run without trajectory.jsonl: one line says so, then its tool calls by name. A run
    whose events hold no round either has had none yet (or ran none): it says that."""
    events = run.events()
    if not any(e.kind in ROUND_EVENTS for e in events):
        said = "no round has ended yet" if status == "running" else "no round ran"
        printer.say((f"run {run.id}: {said}", "yellow"))
        return
    printer.say(
        (f"run {run.id} has no trajectory.jsonl: it predates round records", "yellow"),
        "; its events (tool calls by name) follow",
    )
    rounds: dict[tuple[str, int | None], list[str]] = {}
    for e in events:
        if e.kind == "tool" and e.phase:
            name = str(e.data.get("tool", "?"))
            rounds.setdefault((e.phase, e.round), []).append(
                name if e.data.get("ok", True) else f"{name} (failed)"
            )
        elif e.kind == "check" and e.phase:
            verdict = "passed" if e.data.get("passed") else "failed"
            said = output.short(str(e.data.get("summary", "")), VALUE_CHARS)
            rounds.setdefault((e.phase, e.round), []).append(f"check {verdict}: {said}")
    ended = {p.phase: p for p in summary.phases} if summary else {}
    for (name, number), calls in rounds.items():
        if name != printer.phase:
            printer.phase_header(name, ended.get(name), status, None)
        printer.say(f"round {number}: " if number else "", ", ".join(calls), indent=2)


def _status_line(printer: Printer, run: Run, summary, status: str) -> None:
    reason = summary.reason if summary and summary.reason else ""
    if status == "interrupted" and not reason:
        reason = "its process is gone (killed); resume it with --resume"
    printer.console.print()
    style = {"passed": "bold green", "running": "bold yellow"}.get(status, "bold red")
    printer.say(f"run {run.id}: ", (status, style), f": {reason}" if reason else "")
