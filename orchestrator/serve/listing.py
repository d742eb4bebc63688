"""Every run in a home, as ``cadillac runs list`` and the dashboard's runs page list them.

A row per run in runs/ (builds, enhance and iterate builds, matrix, improve and nightly
runs) with the same keys whatever its kind: ``run_id``, ``kind``, ``task``, ``status``,
``phases_passed``, ``cost_usd``, ``tokens``, ``started``, ``ended``, ``reason`` and, for
the other kinds, ``what`` (a line describing it). A record that cannot be read makes its
run ``unreadable`` with the reason. Nothing is written: a run's liveness is a lock probed
without being taken (:func:`orchestrator.loop.runs.lock_held`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from orchestrator.home import Home

KINDS = ("build", "enhance", "iterate", "matrix", "improve", "nightly")
"""What ``--kind`` takes: a build's kind (read from its task.json) or the other kinds'
(``BUILD_KINDS`` and ``OTHER_KINDS`` of :mod:`orchestrator.loop.runs`, which ``--help``
does not load; a test holds them equal)."""
STATUSES = ("running", "passed", "failed", "stopped", "interrupted", "finished", "unreadable")
"""What ``--status`` takes: a build's statuses, ``finished`` (matrix, improve, nightly) and
``unreadable``."""


UNSETTLED = ("running", "interrupted", "unreadable")
"""Statuses a row is made again for on every listing (a run's process may end or come back,
a record being written may become readable); the others are kept while the run's records
are unchanged."""


def _stamp(folder: str, names: tuple[str, ...]) -> tuple:
    """The size and modification time of each record: a row made from them stands while
    these stand."""
    out: list = []
    for name in names:
        try:
            st = os.stat(f"{folder}/{name}", follow_symlinks=False)
            out += [st.st_size, st.st_mtime_ns]
        except OSError:
            out += [None, None]
    return tuple(out)


RECORDS = {
    "build": ("task.json", "summary.json"),
    "matrix": ("results.json",),
    "improve": ("summary.json",),
    "nightly": ("nightly.json",),
}


def all_runs(home: Home, cache: dict | None = None) -> list[dict]:
    """A row per run in runs/, newest first: builds as :meth:`Run.row` makes them, and a
    row of the same keys (and ``what``) per matrix, improve and nightly run.

    A run whose record says it is still going is checked where it can be: a build holds
    its run's lock, an improve cycle its repository's lock and a nightly the home's; when
    the lock is free the process is gone and the run reads ``interrupted``; a matrix run
    holds its folder's ``run.lock``.

    With a ``cache`` (a dict the caller keeps: the dashboard's), a settled run's row is
    made once and kept while its records' sizes and times are unchanged: a listing of a
    thousand runs reads only what changed."""
    from orchestrator.loop.runs import BUILD_ID, Run, RunUnreadable, id_time, other_kind

    rows: list[dict] = []
    if not home.runs_dir.is_dir():
        return rows
    others: list[Path] = []
    with os.scandir(home.runs_dir) as entries:
        names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    for name in names:
        folder = f"{home.runs_dir}/{name}"
        kind = other_kind(name)
        if kind is None and not (BUILD_ID.fullmatch(name) or os.path.isfile(f"{folder}/task.json")):
            continue
        stamp = _stamp(folder, RECORDS[kind or "build"]) if cache is not None else None
        kept = cache.get(name) if cache is not None else None
        if kept is not None:
            if kept[0] == stamp:
                rows.append(dict(kept[1]))
                continue
            del cache[name]
        if kind is not None:
            others.append(home.runs_dir / name)
            continue
        row = Run(home.runs_dir, name).row()
        if cache is not None and row["status"] not in UNSETTLED:
            cache[name] = (stamp, dict(row))
        rows.append(row)
    if others:
        cycles = improve_live(home)
        night = nightly_live(home)
        for folder in others:
            kind = other_kind(folder.name)
            row = {
                "run_id": folder.name,
                "kind": kind,
                "task": None,
                "status": "unreadable",
                "phases_passed": None,
                "cost_usd": None,
                "tokens": None,
                "started": id_time(folder.name),
                "ended": None,
                "reason": "",
                "what": "",
            }
            try:
                if kind == "matrix":
                    matrix_row(folder, row)
                elif kind == "improve":
                    improve_row(folder, row, cycles)
                else:
                    nightly_row(folder, row, night)
            except RunUnreadable as exc:
                row["status"], row["reason"] = "unreadable", exc.why
            if cache is not None and row["status"] not in UNSETTLED:
                cache[folder.name] = (_stamp(str(folder), RECORDS[kind]), dict(row))
            rows.append(row)
    return sorted(rows, key=lambda r: (r["started"] or 0.0, r["run_id"]), reverse=True)


def matrix_row(folder: Path, row: dict) -> None:
    from orchestrator.bench.results import MatrixResults
    from orchestrator.loop.runs import lock_held, read_record

    path = folder / "results.json"
    if not path.exists():  # written when the first build ends
        if lock_held(folder / "run.lock"):
            row["status"], row["reason"] = "running", "no results yet: no build has ended"
        else:
            row["status"] = "interrupted"
            row["reason"] = "killed before any build ended (no matrix run holds its lock)"
        return
    r = read_record(path, MatrixResults, folder.name)
    row.update(started=r.started, ended=r.ended, cost_usd=r.cost_usd, reason=r.stopped_because)
    row["tokens"] = r.tokens
    if r.ended is None:
        live = lock_held(folder / "run.lock")
        row["status"] = "running" if live else "interrupted"
        if not live:
            row["reason"] = "its process is gone (no matrix run holds its lock): killed"
    elif r.stopped_because == "interrupted":
        row["status"] = "interrupted"
    else:
        row["status"] = "stopped" if r.stopped_because else "finished"
    score = "no score" if r.score is None else f"score {r.score:.3f}"
    row["what"] = f"{Path(r.matrix).name}, {r.model}: {len(r.runs)} build(s), {score}"


def improve_summaries(home: Home) -> list[tuple[Path, object]]:
    """The readable improve summaries, standalone and inside nightly runs."""
    from orchestrator.improve.records import ImproveSummary
    from orchestrator.loop.runs import RunUnreadable, read_record

    found = []
    for folder in [*home.runs_dir.glob("improve-*"), *home.runs_dir.glob("nightly-*/improve")]:
        try:
            found.append((folder, read_record(folder / "summary.json", ImproveSummary, "")))
        except RunUnreadable:
            continue
    return found


def improve_live(home: Home) -> set[Path]:
    """The improve runs (folders) whose cycle is running: for each repository whose improve
    lock is held, its newest improve run without an end (one cycle at a time per repository;
    an older one without an end was killed)."""
    newest: dict[str, tuple[float, Path]] = {}
    for folder, s in improve_summaries(home):
        if s.ended is None and (s.repo not in newest or s.started > newest[s.repo][0]):
            newest[s.repo] = (s.started, folder)
    from orchestrator.improve.git import cycle_running

    return {folder for repo, (_, folder) in newest.items() if cycle_running(Path(repo))}


def improve_row(folder: Path, row: dict, live: set[Path]) -> None:
    from orchestrator.improve.records import ImproveSummary
    from orchestrator.loop.runs import read_record

    s = read_record(folder / "summary.json", ImproveSummary, folder.name)
    row.update(started=s.started, ended=s.ended, cost_usd=s.cost_usd, reason=s.stopped_because)
    if s.ended is None:
        row["status"] = "running" if folder in live else "interrupted"
        if folder not in live:
            row["reason"] = "its process is gone (no cycle holds the repository's lock)"
    else:
        row["status"] = s.state()
    kept = sum(1 for it in s.iterations if it.status == "accepted")
    row["what"] = f"{s.repo}: {len(s.iterations)} iteration(s), {kept} kept; {row['reason']}"


def nightly_live(home: Home) -> Path | None:
    """The nightly run that is running: the newest one that says so, while the home's nightly
    lock is held (one nightly at a time per home)."""
    from orchestrator.loop.runs import lock_held

    running = []
    for path in home.runs_dir.glob("nightly-*/nightly.json"):
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("status") == "running":
            started = record.get("started")
            running.append((started if isinstance(started, int | float) else 0.0, path.parent))
    if not running or not lock_held(home.root / "nightly.lock"):  # probed, never taken
        return None
    return max(running)[1]


def nightly_row(folder: Path, row: dict, live: Path | None) -> None:
    from orchestrator.loop.runs import read_record
    from orchestrator.nightly.records import NightlyRecord

    r = read_record(folder / "nightly.json", NightlyRecord, folder.name)
    row.update(started=r.started, ended=r.ended, reason=r.reason, status=r.status)
    if r.status == "running" and folder != live:
        row["status"] = "interrupted"
        row["reason"] = "its process is gone (nobody holds the nightly lock)"
    models = ", ".join(
        f"{name} {model}"
        for name, model in (("model", r.model), ("improver", r.improver_model))
        if model
    )
    row["what"] = "; ".join(part for part in (models, row["reason"]) if part)
