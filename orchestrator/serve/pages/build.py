"""A build's page: its phases as a timeline, each round's trajectory, the memory that
drove it and what it learned; a running build's page follows it (:mod:`..live`).

What the page holds comes from the run's records alone: ``task.json``, ``summary.json``
(the phases that ended), ``events.jsonl`` (the budgets and where they came from, the
phase going on, the stories), ``trajectory.jsonl`` (the rounds and reflections),
``changes.patch`` (an enhance build's change) and ``stories/<phase>/*.png`` (the browser
stories' screenshots). Lessons are looked up by id in the home's memory, read only.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from orchestrator.loop.runs import Event, Run, RunSummary, TaskRecord, check_run_id
from orchestrator.loop.trajectory import (
    ROUND_EVENTS,
    ReflectionRecord,
    RoundRecord,
    read_trajectory,
)
from orchestrator.sandbox.files import read_regular, what_is
from orchestrator.serve.render import page
from phases import PHASES

PATCH_LIMIT = 2 * 2**20
"""Of an enhance build's patch, what the page shows (the whole is in the run folder)."""
SHOT_LIMIT = 20 * 2**20
SHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.png")
PNG = b"\x89PNG\r\n\x1a\n"


class PhaseView(BaseModel):
    name: str
    state: str = "not started"
    """passed, budget_exhausted, error, skipped, running or not started."""
    rounds: int = 0
    budget: int | None = None
    budget_reason: str = ""
    budget_rows: int | None = None
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    check: str = ""
    finish_summary: str = ""
    applied_lessons: list[str] = Field(default_factory=list)
    steps: list[tuple[int, RoundRecord]] = Field(default_factory=list)
    """(index in the trajectory, round) of this phase's rounds."""
    reflections: list[ReflectionRecord] = Field(default_factory=list)
    shots: list[str] = Field(default_factory=list)


class BuildView(BaseModel):
    run_id: str
    task: TaskRecord
    summary: RunSummary | None
    status: str
    live: bool
    phases: list[PhaseView]
    recorded: bool
    """Whether the run has round records (trajectory.jsonl)."""
    had_rounds: bool = False
    """Whether its events say rounds ran (without round records: a run made before them)."""
    offset: int = 0
    """Bytes of trajectory.jsonl the page holds: where its stream goes on."""
    rounds_shown: int = 0
    events: int = 0
    build_events: list[Event] = Field(default_factory=list)
    lessons: dict[str, dict[str, Any]] = Field(default_factory=dict)
    recalled: list[str] = Field(default_factory=list)
    """The lessons the prompt carried: the summary's, else the start's (a build stopped in
    its first phase has no summary yet)."""
    patch: str | None = None
    patch_cut: bool = False
    stories: list[dict[str, Any]] = Field(default_factory=list)
    seconds: float | None = None


def build_view(home, run_id: str) -> BuildView:
    run = Run.open(home.runs_dir, run_id)
    task = run.task()
    summary = run.summary()
    live = run.live()
    status = run.status(summary)
    events = run.events()
    trajectory = read_trajectory(run.dir)
    phases = {name: PhaseView(name=name) for name in PHASES}
    for e in events:
        if e.kind == "build_start":
            for name, budget in (e.data.get("budgets") or {}).items():
                if name in phases and isinstance(budget, dict):
                    view = phases[name]
                    view.budget = budget.get("rounds")
                    view.budget_reason = str(budget.get("reason") or "")
                    view.budget_rows = budget.get("used_total")
        elif e.kind == "phase_start" and e.phase in phases:
            phases[e.phase].state = "running" if live else "interrupted"
            phases[e.phase].budget = e.data.get("budget", phases[e.phase].budget)
        elif e.kind == "stories" and e.phase in phases:
            phases[e.phase].check = phases[e.phase].check or ""
    for p in summary.phases if summary else []:
        view = phases.setdefault(p.phase, PhaseView(name=p.phase))
        view.state, view.rounds, view.budget = p.outcome, p.rounds, p.budget
        view.seconds, view.check = p.seconds, p.check
        view.finish_summary, view.applied_lessons = p.finish_summary, p.applied_lessons
    for index, r in enumerate(trajectory.rounds):
        view = phases.setdefault(r.phase, PhaseView(name=r.phase))
        view.steps.append((index, r))
        view.tokens_in += r.tokens_in
        view.tokens_out += r.tokens_out
        if r.cost_usd is not None:
            view.cost_usd = (view.cost_usd or 0.0) + r.cost_usd
        if view.state in ("running", "interrupted"):
            view.rounds = max(view.rounds, r.round)
    for r in trajectory.reflections:
        phases.setdefault(r.phase, PhaseView(name=r.phase)).reflections.append(r)
    for view in phases.values():
        view.shots = _shots(run.dir / "stories" / view.name)
    ids = _lesson_ids(summary, events, trajectory.reflections)
    recalled = list(summary.lessons_recalled) if summary else []
    for e in events if not recalled else []:
        if e.kind == "build_start":
            recalled = [str(i) for i in e.data.get("recalled") or []]
    patch, cut = None, False
    if run.patch_path.is_file():
        try:
            data = read_regular(run.patch_path, PATCH_LIMIT + 1)
            patch, cut = data[:PATCH_LIMIT].decode("utf-8", "replace"), len(data) > PATCH_LIMIT
        except OSError:
            patch = None
    stories = [e.data | {"phase": e.phase} for e in events if e.kind == "stories"]
    started = summary.started if summary else task.created
    ended = summary.ended if summary else None
    return BuildView(
        run_id=run_id,
        task=task,
        summary=summary,
        status=status,
        live=live,
        phases=list(phases.values()),
        recorded=trajectory.recorded,
        had_rounds=any(e.kind in ROUND_EVENTS for e in events),
        offset=trajectory.offset,
        rounds_shown=len(trajectory.rounds),
        events=len(events),
        build_events=events,
        lessons=lessons_by_id(home, ids),
        recalled=recalled,
        patch=patch,
        patch_cut=cut,
        stories=stories,
        seconds=(ended or time.time()) - started if started else None,
    )


def _shots(folder: Path) -> list[str]:
    """The screenshots in a phase's stories folder: regular files with a plain name."""
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return []
    return [n for n in names if SHOT_NAME.fullmatch(n) and what_is(folder / n) is None][:200]


def _lesson_ids(summary, events, reflections) -> set[str]:
    ids: set[str] = set()
    if summary:
        for name in ("recalled", "applied", "saved", "boosted", "penalised"):
            ids.update(getattr(summary, f"lessons_{name}"))
    for e in events:
        if e.kind == "build_start":
            ids.update(str(i) for i in e.data.get("recalled") or [])
    for r in reflections:
        ids.update(lesson.id for lesson in r.lessons if lesson.id)
    return ids


LESSON_ID = re.compile(rb'"id"\s*:\s*"([^"\\]{1,64})"')


def lessons_by_id(home, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The home's lessons with these ids, as stored (read only; a line that is not a
    lesson is passed over)."""
    if not ids:
        return {}
    try:
        data = read_regular(home.memory_path)
    except OSError:
        return {}
    wanted = {i.encode() for i in ids}
    found: dict[str, dict[str, Any]] = {}
    for line in data.split(b"\n"):
        match = LESSON_ID.search(line)
        if match is None or match.group(1) not in wanted:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            found[str(record.get("id"))] = record
    return found


def show(request: Request, run_id: str) -> Response:
    view = build_view(request.app.state.home, run_id)
    return page(request, "build.html", title=f"Build {run_id}", view=view)


def _run(request: Request) -> Run:
    home = request.app.state.home
    return Run.open(home.runs_dir, check_run_id(request.path_params["run_id"], home.runs_dir))


def tool_text(request: Request) -> Response:
    """A tool's whole result (or its arguments), as plain text."""
    run = _run(request)
    trajectory = read_trajectory(run.dir)
    try:
        r = trajectory.rounds[int(request.path_params["index"])]
        tool = r.tools[int(request.path_params["tool"])]
    except (ValueError, IndexError):
        raise HTTPException(404, "no such tool call in this run") from None
    text = tool.arguments if request.query_params.get("part") == "arguments" else tool.result
    return PlainTextResponse(text)


def shot(request: Request) -> Response:
    """A story's screenshot: a PNG of a phase's stories folder, never through a link."""
    run = _run(request)
    phase, name = request.path_params["phase"], request.path_params["name"]
    if phase not in PHASES or not SHOT_NAME.fullmatch(name):
        raise HTTPException(404, "no such screenshot")
    try:
        data = read_regular(run.dir / "stories" / phase / name, SHOT_LIMIT)
    except OSError:
        raise HTTPException(404, "no such screenshot") from None
    if not data.startswith(PNG):
        raise HTTPException(404, "that file is not a PNG image")
    return Response(data, media_type="image/png")


routes = [
    Route("/runs/{run_id}/tool/{index:int}/{tool:int}", tool_text),
    Route("/runs/{run_id}/shot/{phase}/{name}", shot),
]
