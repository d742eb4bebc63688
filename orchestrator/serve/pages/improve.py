"""An improve cycle's page: each iteration (the weakness it worked on, the proposal as a
diff, the looks of the decision with the builds each spent, the p-value and the decision:
accepted, rejected, vetoed by the holdout, and why), the lessons the cycle drew about
cadillac itself, and the lifetime error budget as it left it.

Read from the cycle's folder (``runs/improve-<id>/``, or ``runs/nightly-<date>/improve``
inside a night): ``summary.json`` (:class:`~orchestrator.improve.records.ImproveSummary`)
and, per iteration, ``iter-<i>/weakness.json``, ``proposal.json``, ``patch.diff`` and
``rounds/*.json``. The lessons are the cycle's own in ``self_memory.jsonl`` (and those
tagged ``self`` in ``memory.jsonl``, where earlier versions wrote them): written by
:class:`~orchestrator.improve.lessons.SelfLessons` while the cycle ran, about one of its
weaknesses.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from memory import Lesson
from orchestrator.bench.results import MatrixResults
from orchestrator.home import Home
from orchestrator.improve.lessons import SOURCE, VETOED, told
from orchestrator.improve.proposals import Proposal
from orchestrator.improve.records import ImproveSummary, IterationRecord
from orchestrator.improve.weaknesses import Weakness
from orchestrator.loop.runs import RunUnreadable, read_record
from orchestrator.sandbox.files import read_regular
from orchestrator.serve.listing import improve_live, improve_row
from orchestrator.serve.pages.matrix import run_folder
from orchestrator.serve.render import page

DIFF_LIMIT = 2 * 2**20
"""Of a proposal's patch, what the page shows (the whole is patch.diff in the folder)."""


class Round(BaseModel):
    label: str
    builds: int = 0
    train: float | None = None
    holdout: float | None = None
    cost_usd: float | None = None
    unreadable: str = ""


class IterationView(BaseModel):
    record: IterationRecord
    decision: str
    """accepted, rejected, vetoed (rejected by the holdout), no_proposal or stopped."""
    weakness: Weakness | None = None
    proposal: Proposal | None = None
    answer: str = ""
    """The improver's whole answer, as it came."""
    diff: str | None = None
    diff_cut: bool = False
    rounds: list[Round] = Field(default_factory=list)


class ImproveView(BaseModel):
    name: str
    folder: str
    status: str
    reason: str
    summary: ImproveSummary
    iterations: list[IterationView]
    lessons: list[Lesson]
    seconds: float | None


def _read(path: Path, limit: int = DIFF_LIMIT + 1) -> bytes | None:
    try:
        return read_regular(path, limit)
    except OSError:
        return None


def iteration_view(folder: Path, name: str, record: IterationRecord) -> IterationView:
    here = folder / f"iter-{record.iteration}"
    decision = record.status
    if decision == "rejected" and told(record) == VETOED:
        decision = "vetoed"
    view = IterationView(record=record, decision=decision)
    with suppress(RunUnreadable):  # an iteration without a weakness has none
        view.weakness = read_record(here / "weakness.json", Weakness, name)
    raw = _read(here / "proposal.json")
    try:
        found = json.loads(raw) if raw else {}
        view.proposal = Proposal.model_validate(found.get("proposal"))
        view.answer = str(found.get("answer") or "")
    except (ValueError, AttributeError):  # no proposal.json, or not a proposal's
        pass
    data = _read(here / "patch.diff")
    if data is not None:
        view.diff = data[:DIFF_LIMIT].decode("utf-8", "replace")
        view.diff_cut = len(data) > DIFF_LIMIT
    for path in sorted((here / "rounds").glob("*.json")):
        try:
            r = read_record(path, MatrixResults, name)
        except RunUnreadable as exc:
            view.rounds.append(Round(label=path.stem, unreadable=exc.why))
            continue
        view.rounds.append(
            Round(
                label=path.stem,
                builds=len(r.runs),
                train=r.train_score,
                holdout=r.holdout_score,
                cost_usd=r.cost_usd,
            )
        )
    return view


def cycle_lessons(home: Home, s: ImproveSummary) -> list[Lesson]:
    """The lessons this cycle drew: the improve cycle's, written while it ran, about one of
    its weaknesses (read only; a line that is not a lesson is passed over)."""
    weaknesses = {it.weakness for it in s.iterations if it.weakness}
    if not weaknesses:
        return []
    end = (s.ended or time.time()) + 1
    found = []
    for path, legacy in ((home.self_memory_path, False), (home.memory_path, True)):
        try:
            data = read_regular(path)
        except OSError:
            continue
        for line in data.splitlines():
            if SOURCE.encode() not in line:
                continue
            try:
                lesson = Lesson.model_validate_json(line)
            except ValidationError:
                continue
            mine = lesson.source_task == SOURCE and s.started - 1 <= lesson.ts <= end
            if legacy and "self" not in lesson.tags:
                continue
            if mine and any(f"weakness {w}" in lesson.trigger for w in weaknesses):
                found.append(lesson)
    return found


def improve_view(home: Home, folder: Path, name: str) -> ImproveView:
    row: dict = {"reason": ""}
    improve_row(folder, row, improve_live(home))  # RunUnreadable when summary.json is not
    s = read_record(folder / "summary.json", ImproveSummary, name)
    return ImproveView(
        name=name,
        folder=str(folder),
        status=row["status"],
        reason=row["reason"],
        summary=s,
        iterations=[iteration_view(folder, name, it) for it in s.iterations],
        lessons=cycle_lessons(home, s),
        seconds=(s.ended or time.time()) - s.started,
    )


def cycle_page(request: Request, folder: Path, name: str) -> Response:
    view = improve_view(request.app.state.home, folder, name)
    return page(request, "improve.html", title=f"Improve {name}", view=view)


def show(request: Request, run_id: str) -> Response:
    return cycle_page(request, run_folder(request.app.state.home, run_id), run_id)


routes: list = []
