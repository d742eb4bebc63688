"""The nights: ``/nights`` lists every nightly run (its status, score, spend, what it
accepted) under charts of the trends across nights; a night's page (``/runs/nightly-…``)
shows its record and links its improve cycle, its report and its log.

What a night holds is read by the nightly's own reader
(:func:`orchestrator.nightly.report.night_facts`: the record, the improve summary, every
round's builds) after its record was read with :func:`~orchestrator.loop.runs.read_record`
(a night whose record cannot be read is one line saying why). A night that says it is
running is so while the home's nightly lock is held, probed without being taken.

**The report.** ``report.html`` is served as the nightly wrote it, read without following
a link, except for its one inline ``<style>`` block: the page's Content-Security-Policy
allows no inline style, so the block is served from ``report.css`` beside it and the
report links it. The report holds no script; its charts are inline SVG.
"""

from __future__ import annotations

import time
from itertools import groupby
from pathlib import Path
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.lessons import VETOED, told
from orchestrator.improve.records import IterationRecord
from orchestrator.loop.runs import RunUnreadable, check_run_id, lock_held, other_kind, read_record
from orchestrator.nightly.records import NightlyRecord
from orchestrator.nightly.report import night_facts
from orchestrator.sandbox.files import read_regular
from orchestrator.serve.listing import nightly_live, nightly_row
from orchestrator.serve.pages import improve
from orchestrator.serve.pages.matrix import run_folder
from orchestrator.serve.render import page

REPORT_LIMIT = 64 * 2**20
TEXT_LIMIT = 8 * 2**20
TEXT_FILES = {"report.md": "the night's report as Markdown", "nightly.log": "the night's log"}
COLORS = ("#7a1f2b", "#0b6bcb", "#1e7b34", "#946200")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 560, 170, 56, 36, 14, 34


def running_night(home: Home) -> Path | None:
    """The night that is running: none unless the home's nightly lock is held (probed
    without being taken or made)."""
    return nightly_live(home) if lock_held(home.root / "nightly.lock") else None


def night_row(folder: Path, live: Path | None) -> dict:
    """A night as the list shows it: its status and, when its record can be read, its
    figures (the nightly's own :func:`night_facts`)."""
    row = {"run_id": folder.name, "status": "unreadable", "reason": "", "started": None}
    try:
        nightly_row(folder, row, live)
    except RunUnreadable as exc:
        row["reason"] = exc.why
        return row
    facts = night_facts(folder)
    its = facts["iterations"]
    row.update(
        label=facts["label"],
        train=facts["train"],
        holdout=facts["holdout"],
        builds=facts["builds"],
        tokens=facts["tokens"],
        cost_usd=facts["cost"],
        tried=len(its),
        accepted=[it.get("weakness") or "?" for it in its if it.get("status") == "accepted"],
        lifetime=facts["lifetime"],
        facts=facts,
    )
    return row


def night_rows(home: Home) -> list[dict]:
    """Every night in runs/, newest first."""
    if not home.runs_dir.is_dir():
        return []
    live = running_night(home)
    folders = [p for p in home.runs_dir.glob("nightly-*") if p.is_dir() and not p.is_symlink()]
    rows = [night_row(folder, live) for folder in folders]
    return sorted(rows, key=lambda r: (r["started"] or 0.0, r["run_id"]), reverse=True)


def chart(
    title: str, labels: list[str], series: dict[str, list], money: bool = False, top: float = 0.0
) -> dict:
    """A small line chart: each series' points placed in the SVG's box (the template draws
    them, with the axis from 0 to ``top``, or a little above the highest figure); a night
    without a figure leaves a gap in its line."""
    values = [v for points in series.values() for v in points if v is not None]
    top = top or max(max(values, default=0.0) * 1.1, 0.01 if money else 1.0)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (inner_w * i / (len(labels) - 1) if len(labels) > 1 else inner_w / 2)

    def y(v: float) -> float:
        return TOP + inner_h * (1 - v / top)

    def said(v: float) -> str:
        return f"${v:,.2f}" if money else (f"{v:.3f}" if top <= 1 else f"{v:,.0f}")

    lines = []
    for (name, points), color in zip(series.items(), COLORS, strict=False):
        dots = [
            {"x": round(x(i), 1), "y": round(y(v), 1), "title": f"{labels[i]}: {name} {said(v)}"}
            for i, v in enumerate(points)
            if v is not None
        ]
        paths = [
            " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in stretch)
            for gap, stretch in groupby(enumerate(points), key=lambda p: p[1] is None)
            if not gap
        ]
        lines.append({"name": name, "color": color, "dots": dots, "paths": paths})
    step = max(1, -(-len(labels) // 8))
    return {
        "title": title,
        "width": WIDTH,
        "height": HEIGHT,
        "lines": lines,
        "ticks": [{"y": round(y(v), 1), "text": said(v)} for v in (0.0, top / 2, top)],
        "labels": [
            {"x": round(x(i), 1), "text": label[-10:]}
            for i, label in enumerate(labels)
            if i % step == 0 or i == len(labels) - 1
        ],
        "box": {"left": LEFT, "right": WIDTH - RIGHT, "top": TOP, "bottom": HEIGHT - BOTTOM},
    }


def trends(rows: list[dict]) -> list[dict]:
    """The charts across the readable nights, oldest first."""
    nights = [r for r in reversed(rows) if "facts" in r]
    if not nights:
        return []
    labels = [r["label"] for r in nights]
    return [
        chart(
            "Score at the start of each night",
            labels,
            {"train": [r["train"] for r in nights], "holdout": [r["holdout"] for r in nights]},
            top=1.0,
        ),
        chart("Cost per night", labels, {"cost": [r["cost_usd"] for r in nights]}, money=True),
        chart("Builds per night", labels, {"builds": [r["builds"] for r in nights]}),
    ]


def nights_page(request: Request) -> Response:
    rows = night_rows(request.app.state.home)
    return page(request, "nights.html", title="Nights", rows=rows, charts=trends(rows))


def _night_folder(request: Request) -> Path:
    home = request.app.state.home
    run_id = check_run_id(request.path_params["run_id"], home.runs_dir)
    if other_kind(run_id) != "nightly":
        raise CadillacError(f"{run_id} is not a nightly run (see /nights)")
    return run_folder(home, run_id)


def show(request: Request, run_id: str) -> Response:
    home = request.app.state.home
    folder = run_folder(home, run_id)
    record = read_record(folder / "nightly.json", NightlyRecord, run_id)
    row = night_row(folder, running_night(home))
    decisions = []
    for it in row["facts"]["iterations"]:
        try:
            r = IterationRecord.model_validate(it)
        except ValueError:
            continue
        vetoed = r.status == "rejected" and told(r) == VETOED
        decisions.append({"record": r, "decision": "vetoed" if vetoed else r.status})
    files = [name for name in TEXT_FILES if (folder / name).is_file()]
    return page(
        request,
        "night.html",
        title=f"Night {run_id}",
        run_id=run_id,
        record=record,
        row=row,
        decisions=decisions,
        cycle=(folder / "improve" / "summary.json").exists(),
        report=(folder / "report.html").is_file(),
        files={name: TEXT_FILES[name] for name in files},
        seconds=(record.ended or time.time()) - record.started,
    )


def night_improve(request: Request) -> Response:
    """The improve cycle of a night (``runs/nightly-<date>/improve``)."""
    folder = _night_folder(request)
    name = f"{folder.name}/improve"
    if not (folder / "improve").is_dir():
        raise CadillacError(f"night {folder.name} has no improve cycle")
    return improve.cycle_page(request, folder / "improve", name)


def _split_style(html: bytes) -> tuple[bytes, bytes, bytes]:
    """(what comes before the report's first ``<style>`` block, its CSS, what comes after)."""
    start = html.find(b"<style>")
    end = html.find(b"</style>", start)
    if start < 0 or end < 0:
        return html, b"", b""
    return html[:start], html[start + len(b"<style>") : end], html[end + len(b"</style>") :]


def _report(folder: Path) -> bytes:
    try:
        return read_regular(folder / "report.html", REPORT_LIMIT)
    except OSError:
        raise HTTPException(404, f"night {folder.name} has no report (yet)") from None


def report(request: Request) -> Response:
    """The night's report.html, its style served from report.css beside it."""
    folder = _night_folder(request)
    before, css, after = _split_style(_report(folder))
    link = f'<link rel="stylesheet" href="/nights/{quote(folder.name)}/report.css">' if css else ""
    return HTMLResponse(before + link.encode() + after)


def report_css(request: Request) -> Response:
    _, css, _ = _split_style(_report(_night_folder(request)))
    return Response(css, media_type="text/css")


def text_file(request: Request) -> Response:
    """The night's report.md or log, as plain text (the first 8 MiB)."""
    folder, name = _night_folder(request), request.path_params["name"]
    if name not in TEXT_FILES:
        raise HTTPException(404, f"no {name!r} here: a night shows {', '.join(TEXT_FILES)}")
    try:
        data = read_regular(folder / name, TEXT_LIMIT)
    except OSError:
        raise HTTPException(404, f"night {folder.name} has no {name}") from None
    return PlainTextResponse(data.decode("utf-8", "replace"))


routes = [
    Route("/nights", nights_page),
    Route("/nights/{run_id}/improve", night_improve),
    Route("/nights/{run_id}/report", report),
    Route("/nights/{run_id}/report.css", report_css),
    Route("/nights/{run_id}/text/{name}", text_file),
]
