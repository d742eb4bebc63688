"""A running build's page follows it: a stream of server-sent events.

``/runs/{id}/stream?offset=B&rounds=N&events=E`` (what the page had when it was made:
bytes of trajectory.jsonl read, rounds shown, events counted) looks at the run's records
every ``poll_s`` and sends what is new: each new round, rendered by the template the page
uses (``round``), each reflection (``reflection``), and the page's head and timeline again
when an event or the summary changed (``head``). When the build is no longer running it
sends ``end`` and closes. The client (``static/live.js``) puts the fragments in place;
they are made by the same autoescaping templates as the page, so the stream carries no
more of a model's markup than the page does: none.
"""

from __future__ import annotations

import asyncio
import json

from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from orchestrator.loop.runs import Run, check_run_id
from orchestrator.loop.trajectory import RoundRecord, read_trajectory
from orchestrator.serve.render import render


def _number(request: Request, name: str) -> int:
    try:
        return max(0, int(request.query_params.get(name, "0")))
    except ValueError:
        return 0


def _look(run: Run, offset: int) -> tuple[list, int, int, float]:
    """What is new in the trajectory from ``offset``, where it ends, how big events.jsonl
    is and when summary.json last changed (blocking reads: called in a thread)."""
    found = read_trajectory(run.dir, offset)
    records = [*found.rounds, *found.reflections]
    records.sort(key=lambda r: r.ts)
    try:
        events = run.events_path.stat().st_size
    except OSError:
        events = 0
    try:
        changed = run.summary_path.stat().st_mtime_ns
    except OSError:
        changed = 0
    return records, found.offset or offset, events, changed


async def stream(request: Request):
    from orchestrator.serve.pages.build import build_view

    home = request.app.state.home
    poll = request.app.state.config.poll_s
    run_id = check_run_id(request.path_params["run_id"], home.runs_dir)
    run = Run.open(home.runs_dir, run_id)
    offset, index = _number(request, "offset"), _number(request, "rounds")

    async def events():
        nonlocal offset, index
        seen: tuple[int, int] | None = None
        while True:
            records, offset, size, changed = await run_in_threadpool(_look, run, offset)
            for record in records:
                if isinstance(record, RoundRecord):
                    html = render("_round.html", run_id=run_id, index=index, r=record)
                    index += 1
                    data = {"phase": record.phase, "html": html}
                    yield {"event": "round", "data": json.dumps(data)}
                else:
                    html = render("_reflection.html", r=record, lessons={})
                    yield {
                        "event": "reflection",
                        "data": json.dumps({"phase": record.phase, "html": html}),
                    }
            if (size, changed) != seen or records:
                seen = (size, changed)
                view = await run_in_threadpool(build_view, home, run_id)
                head = render("_build_head.html", view=view)
                yield {"event": "head", "data": json.dumps({"html": head})}
                if view.status != "running":
                    yield {"event": "end", "data": json.dumps({"status": view.status})}
                    return
            await asyncio.sleep(poll)

    return EventSourceResponse(events(), ping=15)


routes = [Route("/runs/{run_id}/stream", stream)]
