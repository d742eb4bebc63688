"""``cadillac runs show ID --follow``: a running build's rounds as they land.

What the trajectory holds is printed first, then :func:`follow` reads what is new from
its byte offset (:func:`orchestrator.loop.trajectory.read_trajectory`) every
:data:`POLL_S` and prints each round and reflection as it lands (with
:class:`~orchestrator.cli.playback.Printer`, so inert as ``--trajectory`` is), a phase's
header when its first round lands and its outcome when it ends, until the build ends: its
summary says it is no longer running, or its process is gone. With ``--json`` each is a
JSON line (:class:`JsonLines`), the last ``{"kind": "end", "status": ...}``. Ctrl-C stops
following (exit 130, as for other commands) and leaves the build going. Never paged.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from orchestrator.cli import output
from orchestrator.cli.playback import (
    Printer,
    Record,
    in_order,
    phase_budgets,
    read_summary,
    status_of,
)
from orchestrator.loop.runs import PhaseSummary, Run
from orchestrator.loop.trajectory import RoundRecord, read_trajectory

POLL_S = 0.5


def follow(run: Run, full: bool, as_json: bool, sleep: Callable[[float], None] = time.sleep) -> int:
    """Print what the trajectory holds, then each round and reflection as it lands, until
    the build ends (its summary says so, or its process is gone); Ctrl-C stops following
    and leaves the build going. Never paged."""
    printer = JsonLines() if as_json else Printer(output.out(), full)
    offset, summary = 0, None
    budgets: dict[str, int] = {}
    try:
        while True:
            summary = read_summary(run, summary)
            status = status_of(run, summary)  # before the read: what landed before the end
            found = read_trajectory(run.dir, offset)
            offset = found.offset or offset
            ended = {p.phase: p for p in summary.phases} if summary else {}
            for record in in_order(found):
                if isinstance(record, RoundRecord) and record.phase != printer.phase:
                    _settle(printer, ended, before=record.phase)
                    if record.phase not in budgets:
                        budgets = phase_budgets(run)
                    done = ended.get(record.phase)
                    printer.phase_header(record.phase, done, status, budgets.get(record.phase))
                printer.record(record)
            _settle(printer, ended)
            if status != "running":
                break
            sleep(POLL_S)
    except KeyboardInterrupt:
        print(
            f"cadillac: interrupted: stopped following run {run.id}; the build goes on",
            file=sys.stderr,
        )
        return 130
    printer.finish(run, summary, status, found.recorded)
    return 0


def _settle(printer, ended: dict[str, PhaseSummary], before: str | None = None) -> None:
    """Say how each phase that ended (before the phase ``before``) ended, once: a closing
    line for the phase being shown, the whole of one that ended without a round (skipped)."""
    for name, p in ended.items():
        if name == before:
            return
        if name in printer.ended:
            continue
        if name == printer.phase:
            printer.phase_end(p)
        else:
            printer.phase_skipped(p)


class JsonLines:
    """What :class:`Printer` says, for ``--follow --json``: a JSON line per round and
    reflection (their records), per phase that ended (``"kind": "phase"``, its summary),
    and an ``end`` line with the build's status."""

    def __init__(self):
        self.phase: str | None = None
        self.ended: set[str] = set()

    def phase_header(self, name: str, ended, state: str, budget) -> None:
        self.phase = name  # its line comes when the phase is over: after its rounds

    def phase_end(self, ended: PhaseSummary) -> None:
        self.ended.add(ended.phase)
        _json_line({"kind": "phase", **ended.model_dump(mode="json")})

    phase_skipped = phase_end

    def record(self, r: Record) -> None:
        _json_line(r.model_dump(mode="json"))

    def finish(self, run: Run, summary, status: str, recorded: bool) -> None:
        reason = summary.reason if summary else ""
        _json_line({"kind": "end", "run_id": run.id, "status": status, "reason": reason})


def _json_line(data: dict) -> None:
    sys.stdout.write(output.inert_json(data) + "\n")
    sys.stdout.flush()
