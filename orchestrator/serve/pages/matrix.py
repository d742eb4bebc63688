"""A matrix run's page: its header (matrix, model, split, scores, spend, why it stopped),
the table of tasks with each build's status, verdict and score, and every build, linked to
its own page when its run folder is in this home (an improve trial's builds are in the
trial's own runs/, named by ``runs_dir``/``runs_dirs``, and are not linked).

Read from ``results.json`` alone (:class:`~orchestrator.bench.results.MatrixResults`), with
the status ``cadillac runs list`` gives it (:func:`orchestrator.serve.listing.matrix_row`).
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response

from orchestrator.bench.results import MatrixResults, TaskRun, TaskStats
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.loop.runs import read_record
from orchestrator.sandbox.files import what_is
from orchestrator.serve.listing import matrix_row
from orchestrator.serve.render import page


class TaskRow(BaseModel):
    task_id: str
    stats: TaskStats | None
    """None: none of the task's builds was scored (skipped, lost)."""
    builds: list[TaskRun] = Field(default_factory=list)


class MatrixView(BaseModel):
    run_id: str
    status: str
    reason: str
    results: MatrixResults
    tasks: list[TaskRow]
    linked: set[str]
    """The builds whose run folder is in this home's runs/ (a build's: it has task.json)."""
    seconds: float | None


def run_folder(home: Home, run_id: str) -> Path:
    """The folder of a run of another kind than a build; CadillacError when there is none."""
    folder = home.runs_dir / run_id
    if what_is(folder) != "a folder":
        raise CadillacError(f"no run {run_id!r} in {home.runs_dir} (see 'cadillac runs list')")
    return folder


def matrix_view(home: Home, run_id: str) -> MatrixView:
    folder = run_folder(home, run_id)
    row: dict = {"reason": ""}
    matrix_row(folder, row)  # its status; RunUnreadable when results.json cannot be read
    if not (folder / "results.json").exists():
        raise CadillacError(f"matrix run {run_id} has no results yet: {row['reason']}")
    r = read_record(folder / "results.json", MatrixResults, run_id)
    stats = {t.task_id: t for t in r.tasks}
    order = [*stats, *dict.fromkeys(b.task_id for b in r.runs if b.task_id not in stats)]
    tasks = [
        TaskRow(
            task_id=task,
            stats=stats.get(task),
            builds=sorted((b for b in r.runs if b.task_id == task), key=lambda b: b.repeat),
        )
        for task in order
    ]
    linked = {
        b.run_id
        for b in r.runs
        if b.run_id not in ("", ".", "..")
        and "/" not in b.run_id
        and what_is(home.runs_dir / b.run_id / "task.json") is None  # a build's, here
    }
    return MatrixView(
        run_id=run_id,
        status=row["status"],
        reason=row["reason"],
        results=r,
        tasks=tasks,
        linked=linked,
        seconds=(r.ended or time.time()) - r.started,
    )


def show(request: Request, run_id: str) -> Response:
    view = matrix_view(request.app.state.home, run_id)
    return page(request, "matrix.html", title=f"Matrix {run_id}", view=view)


routes: list = []
