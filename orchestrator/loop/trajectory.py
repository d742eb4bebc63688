"""A build's trajectory: what the model said and did in every round, as it happened.

``trajectory.jsonl`` in a build's run folder holds one line per round (:class:`RoundRecord`:
the phase and round, the model's message, every tool call with its arguments and its
result, the check's output sent back, tokens and cost) and one per reflection
(:class:`ReflectionRecord`: the reviewer's answer and the lessons drawn from it). The
loop appends a round's line when the round ends, finished or not (a round cut by a crash
or a stop is still written by its ``finally``), so a running build's file grows round by
round and a killed build's holds every round that ended.

``llm.jsonl`` logs every model attempt too, but in the client's terms (the messages new
since an earlier request); this file is the agent's terms, which is what a person reading
a build and ``cadillac runs show --trajectory`` want: it is read without rebuilding
conversations, and a round's tool results, which a phase's last request never carries,
are here. A run written before this file existed has none: :func:`read_trajectory`
returns no rounds, and the readers say the run predates round records.

Everything in these records was written by a model or by what its commands printed:
readers escape it (the dashboard's templates, rich's markup escape) and never follow it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from orchestrator.sandbox.files import append_file

FILE = "trajectory.jsonl"
SCHEMA = 1
ROUND_EVENTS = ("tool", "no_tool_call", "check")
"""The events a round leaves in events.jsonl: a run with one of these and no trajectory.jsonl
was made before round records; one with none has had no round (yet)."""


class ToolStep(BaseModel):
    """One tool call of a round and what it returned to the model."""

    id: str = ""
    name: str
    arguments: str = ""
    """The raw JSON text the model sent."""
    ok: bool = True
    result: str = ""
    """The tool message the model was sent back."""
    seconds: float = 0.0


class CheckStep(BaseModel):
    """The phase's check, run when the model asked to finish the phase."""

    passed: bool
    summary: str
    sent: str = ""
    """What the model was sent about it (the failure it must fix, or the pass)."""


class RoundRecord(BaseModel):
    v: int = SCHEMA
    kind: Literal["round"] = "round"
    ts: float = Field(default_factory=time.time)
    """When the round ended."""
    phase: str
    round: int
    seconds: float = 0.0
    text: str | None = None
    """What the model wrote besides its tool calls."""
    tools: list[ToolStep] = Field(default_factory=list)
    check: CheckStep | None = None
    nudged: bool = False
    """The model called no tool and was told to."""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    ended: str = ""
    """Why the round stopped early, when it did (an error, a stop); empty when it ran out."""


class DrawnLesson(BaseModel):
    id: str | None = None
    """The stored lesson's id; None when it was merged away or deferred."""
    type: str = ""
    polarity: str = "do"
    trigger: str = ""
    fix: str = ""


class ReflectionRecord(BaseModel):
    v: int = SCHEMA
    kind: Literal["reflection"] = "reflection"
    ts: float = Field(default_factory=time.time)
    phase: str
    answer: str = ""
    lessons: list[DrawnLesson] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    """Lines of the answer that were not lessons, and why."""


Line = Annotated[RoundRecord | ReflectionRecord, Field(discriminator="kind")]
LINE = TypeAdapter(Line)


def append(run_dir: Path, record: RoundRecord | ReflectionRecord) -> None:
    """One line, appended and flushed (never through a link at the name)."""
    append_file(run_dir / FILE, record.model_dump_json() + "\n")


class Trajectory(BaseModel):
    """A build's rounds and reflections in the order they happened."""

    rounds: list[RoundRecord] = Field(default_factory=list)
    reflections: list[ReflectionRecord] = Field(default_factory=list)
    recorded: bool = True
    """False when the run has no trajectory.jsonl (it predates round records)."""
    unreadable: int = 0
    """Lines that could not be read (a line cut by a crash, a foreign line)."""
    offset: int = 0
    """Bytes of the file read so far: where a follower goes on reading."""

    def phases(self) -> list[str]:
        seen: list[str] = []
        for r in [*self.rounds, *self.reflections]:
            if r.phase not in seen:
                seen.append(r.phase)
        return seen


def read_lines(data: bytes) -> tuple[list[RoundRecord | ReflectionRecord], int, int]:
    """The records of whole lines in ``data``, how many could not be read, and how many
    bytes were used (a last line without its newline is being written: left for later)."""
    end = data.rfind(b"\n") + 1
    out: list[RoundRecord | ReflectionRecord] = []
    bad = 0
    for line in data[:end].split(b"\n"):
        if not line.strip():
            continue
        try:
            out.append(LINE.validate_json(line))
        except ValidationError:
            bad += 1
    return out, bad, end


def read_trajectory(run_dir: Path, offset: int = 0, into: Trajectory | None = None) -> Trajectory:
    """The run's trajectory from byte ``offset`` on, added to ``into`` when given (a
    follower reads only what is new). Never follows a link at the file's name."""
    from orchestrator.sandbox.files import read_regular

    found = into if into is not None else Trajectory()
    path = run_dir / FILE
    try:
        size = path.lstat().st_size
        if size < offset:  # the file was replaced: read it again from its start
            found.rounds.clear()
            found.reflections.clear()
            offset = 0
        data = read_regular(path, offset=offset)
    except FileNotFoundError:
        found.recorded = False
        return found
    except OSError:
        found.recorded = False
        found.unreadable += 1
        return found
    found.recorded = True
    records, bad, used = read_lines(data)
    for record in records:
        (found.rounds if isinstance(record, RoundRecord) else found.reflections).append(record)
    found.unreadable += bad
    found.offset = offset + used
    return found
