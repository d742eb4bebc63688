"""The runs page: every run in the home, newest first, with filters; and ``/runs/{id}``,
which shows a run on the page of its kind."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.routing import Route

from orchestrator.loop.runs import check_run_id, other_kind
from orchestrator.serve.listing import KINDS, STATUSES, all_runs
from orchestrator.serve.render import page, paged


def rows(request: Request) -> list[dict]:
    """The runs the page's filters let through: ``kind``, ``status`` and ``q`` (words
    that must all be in the run's id, task or description, in any case)."""
    q = request.query_params
    kind, status = q.get("kind") or None, q.get("status") or None
    words = (q.get("q") or "").lower().split()
    now = time.time()
    found = []
    for row in all_runs(request.app.state.home, request.app.state.rows):
        if kind not in (None, row["kind"]) or status not in (None, row["status"]):
            continue
        text = " ".join(str(row.get(k) or "") for k in ("run_id", "task", "what", "reason"))
        if words and not all(w in text.lower() for w in words):
            continue
        started, ended = row.get("started"), row.get("ended")
        if started:
            row["seconds"] = (ended or now) - started
        found.append(row)
    return found


def runs_page(request: Request):
    found = rows(request)
    shown, number, pages, _ = paged(request, found)
    q = request.query_params
    kept = {k: v for k, v in q.items() if k in ("kind", "status", "q") and v}
    template = "_runs_rows.html" if q.get("part") == "rows" else "runs.html"
    return page(
        request,
        template,
        title="Runs",
        rows=shown,
        total=len(found),
        number=number,
        pages=pages,
        kinds=KINDS,
        statuses=STATUSES,
        chosen=kept,
        live=sum(r["status"] == "running" for r in found),
        refresh="?" + urlencode({**kept, "page": number, "part": "rows"}),
    )


def run_page(request: Request):
    """A run on its kind's page."""
    from orchestrator.serve.pages import build, improve, matrix, nights

    home = request.app.state.home
    run_id = check_run_id(request.path_params["run_id"], home.runs_dir)
    kind = other_kind(run_id)
    if kind == "matrix":
        return matrix.show(request, run_id)
    if kind == "improve":
        return improve.show(request, run_id)
    if kind == "nightly":
        return nights.show(request, run_id)
    return build.show(request, run_id)


routes = [Route("/", runs_page), Route("/runs/{run_id}", run_page)]
