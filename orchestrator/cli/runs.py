"""``cadillac runs``: the runs in the home, one run, and the removal of old ones.

``runs list`` lists every run in runs/ (builds, enhance and iterate builds, matrix,
improve and nightly runs) with its kind and status, newest first; ``--kind``,
``--status`` and ``--limit`` narrow it. ``runs show`` shows one readably (``--json``
prints its records); of a build, ``--trajectory`` prints its rounds
(:mod:`orchestrator.cli.playback`) and ``--follow`` follows a running one
(:mod:`orchestrator.cli.follow`). A record that cannot be read makes its run
``unreadable`` (with the reason) in the list, and ``runs show`` of it an error line.

``runs prune`` removes old runs: those last active more than ``--older-than`` days ago
and/or all but the ``--keep`` newest, never one that is running (a build's or a matrix
run's lock is taken while it goes, so one that starts meanwhile is left alone). An
enhance run of a git repository takes its worktree and branch in the user's repository
with it (:meth:`orchestrator.loop.runs.Run.remove`); ``--dry-run`` says what would go.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from datetime import datetime
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import UsageError, actions, checked_home, command, number, positive
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.serve.listing import (
    KINDS,
    STATUSES,
    all_runs,
    matrix_row,
    nightly_live,
    nightly_row,
)

DAY_S = 86400.0


def add_parsers(commands) -> None:
    runs = command(
        commands,
        "runs",
        "past runs (runs/ in the home)",
        run=runs_list,
        json=False,
        kind=None,
        status=None,
        limit=None,
    )
    sub = actions(runs, dest="runs_command")
    p = command(sub, "list", "list runs of every kind, newest first", run=runs_list)
    p.add_argument("--kind", choices=KINDS, help="only runs of this kind")
    p.add_argument("--status", choices=STATUSES, help="only runs with this status")
    p.add_argument("--limit", type=positive, metavar="N", help="only the N newest (that match)")
    p.add_argument("--json", action="store_true")
    p = command(
        sub, "show", "one run: a build's task and summary, or a run's record", run=runs_show
    )
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--trajectory",
        action="store_true",
        help="a build's rounds, phase by phase: the model's text, each tool call and its "
        "result, the checks and the reflections (paged on a terminal)",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="follow a running build: its rounds as they land, until it ends (implies "
        "--trajectory; with --json, a JSON line per round)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="with --trajectory: long arguments and results whole, not cut",
    )
    p = command(
        sub,
        "prune",
        "remove old runs (with an enhance run's worktree and branch); never a running one",
        run=runs_prune,
    )
    p.add_argument(
        "--older-than",
        type=number(float, lambda n: 0 <= n < math.inf, "must be a number of days, 0 or more"),
        metavar="DAYS",
        help="remove runs last active more than DAYS days ago",
    )
    p.add_argument(
        "--keep",
        type=number(int, lambda n: n >= 0, "must be a whole number, 0 or more"),
        metavar="N",
        help="keep the N newest runs (of --kind), remove the others",
    )
    p.add_argument("--kind", choices=KINDS, help="only runs of this kind")
    p.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")


# ---------------------------------------------------------------------------- runs list
def runs_list(args: argparse.Namespace) -> int:
    """Every run in runs/, newest first (see :func:`all_runs`), narrowed as asked."""
    home = Home.resolve(getattr(args, "home", None)).check()
    rows = [
        r
        for r in all_runs(home)
        if args.kind in (None, r["kind"]) and args.status in (None, r["status"])
    ][: args.limit]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    asked = ", ".join(
        f"{name} {value}" for name, value in (("kind", args.kind), ("status", args.status)) if value
    )
    title = f"{len(rows)} run(s){f' ({asked})' if asked else ''} in {home.runs_dir}"
    columns = ("run", "kind", "status", "phases", "started", "what")
    table = output.table(title, columns)
    for r in rows:
        table.add_row(
            r["run_id"], r["kind"], r["status"], _phases(r), _when(r["started"]), _what(r)
        )
    output.out().print(table)
    return 0


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M") if stamp else ""


def _phases(row: dict) -> str:
    from orchestrator.loop.runs import BUILD_KINDS

    shown = row["kind"] in BUILD_KINDS and row["status"] != "unreadable"
    return f"{row['phases_passed']}/6" if shown else ""


def one_line(text: str) -> str:
    """``text`` on one line: its lines joined by `` ↵ `` (a task may have several)."""
    return " ↵ ".join(part.strip() for part in text.splitlines() if part.strip())


def _what(row: dict) -> str:
    """A row's last column: a build's task, another run's description, or why it is
    unreadable; on one line, cut to fit, and never read as markup."""
    from rich.markup import escape

    from orchestrator.loop.runs import BUILD_KINDS

    if row["status"] == "unreadable":
        what = f"unreadable: {row['reason']}"
    elif row["kind"] in BUILD_KINDS:
        what = row["task"] or ""
    else:
        what = row.get("what") or row["reason"]
    return escape(output.short(one_line(what), 90))


# ---------------------------------------------------------------------------- runs show
def runs_show(args: argparse.Namespace) -> int:
    from orchestrator.loop.runs import Run, check_run_id, other_kind

    home = Home.resolve(getattr(args, "home", None)).check()
    run_id = check_run_id(args.run_id, home.runs_dir)
    folder = home.runs_dir / run_id
    kind = other_kind(run_id)
    rounds = args.trajectory or args.follow or args.full
    if kind is not None and folder.is_dir():
        if rounds:
            option = "--follow" if args.follow else "--trajectory"
            what = "names its builds" if kind == "matrix" else "shows its record"
            raise CadillacError(
                f"{run_id} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} run, not a build: "
                f"{option} shows a build's rounds; 'cadillac runs show {run_id}' {what}"
            )
        show = {"improve": _show_improve, "matrix": _show_matrix, "nightly": _show_nightly}
        show[kind](home, folder, args.json)
        return 0
    run = Run.open(home.runs_dir, run_id)
    if rounds:
        from orchestrator.cli import follow, playback

        if args.follow:
            return follow.follow(run, args.full, args.json)
        return playback.show(run, args.full, args.json)
    task, summary = run.task(), run.summary()
    if args.json:
        print(
            json.dumps(
                {
                    "task": task.model_dump(mode="json"),
                    "summary": summary.model_dump(mode="json") if summary else None,
                },
                indent=2,
            )
        )
        return 0
    output.line(f"task: {task.task}\nfolder: {run.dir}")
    if task.source is not None:
        output.line(_enhance_lines(run, task))
    if summary is None:
        output.out().print("no summary yet: the run stopped before its first phase ended")
    else:
        from orchestrator.cli.build import show_summary

        show_summary(summary)
    return 0


def _enhance_lines(run, task) -> str:
    """Where an enhance (or iterate) run's change is: its branch and its patch."""
    source = task.source
    summary = run.summary()
    if source.kind == "git":
        where = f"branch: {source.branch} in {source.path}"
    else:
        where = f"branch: {source.branch} in the run's own repository {source.git_dir}"
    of = f"iterates run {source.parent_run}" if source.parent_run else f"changes {source.path}"
    patch = run.patch_path
    lines = [f"kind: {task.run_kind} ({of})", where]
    lines.append(f"patch: {patch}" + ("" if patch.is_file() else " (none yet: no phase passed)"))
    if summary is not None and summary.changed:
        lines.append("changed: " + ", ".join(summary.changed))
    if summary is not None and summary.applied:
        lines.append(f"applied: {summary.applied}")
    return "\n".join(lines)


def _show_improve(home: Home, folder: Path, as_json: bool) -> None:
    from orchestrator.cli.improve import show_improve
    from orchestrator.improve.records import ImproveSummary
    from orchestrator.loop.runs import read_record

    read_record(folder / "summary.json", ImproveSummary, folder.name)  # readable, or why
    if as_json:
        print((folder / "summary.json").read_text(encoding="utf-8"))
    else:
        show_improve(folder)


def _show_matrix(home: Home, folder: Path, as_json: bool) -> None:
    """A matrix run: its state, the per-task table ``matrix run`` prints, and each build."""
    from rich.markup import escape

    from orchestrator.bench.results import MatrixResults
    from orchestrator.cli.matrix import results_table
    from orchestrator.llm.prices import usd
    from orchestrator.loop.runs import read_record

    path = folder / "results.json"
    if not path.exists():
        raise CadillacError(
            f"matrix run {folder.name} has no results yet: its first build has not ended, "
            "or it was killed"
        )
    r = read_record(path, MatrixResults, folder.name)
    if as_json:
        print(path.read_text(encoding="utf-8"))
        return
    row: dict = {}
    matrix_row(folder, row)
    console = output.out()
    why = f": {row['reason']}" if row["reason"] else ""
    ended = f", ended {_when(r.ended)}" if r.ended else ""
    output.line(
        f"matrix {folder.name}: {row['status']}{why}\n"
        f"{r.matrix}: model {r.model}, split {r.split}, {r.repeats} repeat(s); "
        f"started {_when(r.started)}{ended}"
    )
    console.print(results_table(r, Path(r.matrix)))
    columns = ("task", "#", "run", "status", "score", "checks", "verdict", "failure")
    builds = output.table(f"{len(r.runs)} build(s)", columns, right=("#", "score", "checks"))
    for b in r.runs:
        checks = f"{b.checks_passed}/{b.checks_total}" if b.checks_total else "-"
        builds.add_row(
            b.task_id,
            str(b.repeat + 1),
            b.run_id or "-",
            b.status or "-",
            f"{b.score:.2f}",
            checks,
            b.verdict,
            escape(output.short(one_line(b.failure), 60)),
        )
    console.print(builds)

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    cost = "unknown" if r.cost_usd is None else f"${usd(r.cost_usd)}"
    output.line(
        f"score {fmt(r.score)} (train {fmt(r.train_score)}, holdout {fmt(r.holdout_score)}); "
        f"cost {cost}, {r.tokens:,} tokens\nresults: {path}\n"
        "a build's own record: cadillac runs show RUN (and cadillac build --resume RUN)"
    )


def _show_nightly(home: Home, folder: Path, as_json: bool) -> None:
    from orchestrator.loop.runs import read_record
    from orchestrator.nightly.records import NightlyRecord

    path = folder / "nightly.json"
    read_record(path, NightlyRecord, folder.name)  # readable, or why
    if as_json:
        print(path.read_text(encoding="utf-8"))
        return
    row: dict = {}
    nightly_row(folder, row, nightly_live(home))
    r = read_record(path, NightlyRecord, folder.name)
    why = f": {row['reason']}" if row["reason"] else ""
    lines = [
        f"nightly {folder.name}: {row['status']}{why}",
        f"started {_when(r.started)}, model {r.model or '-'}, improver {r.improver_model or '-'}",
    ]
    if r.improve_id:
        lines.append(f"improve run {r.improve_id}: {folder / 'improve'}")
    report = folder / "report.html"
    lines.append(f"report: {report}" if report.is_file() else f"folder: {folder}")
    output.out().print("\n".join(lines))


# ---------------------------------------------------------------------------- runs prune
def runs_prune(args: argparse.Namespace) -> int:
    """Remove the runs ``--older-than`` and/or ``--keep`` name (see the module docstring);
    each is said as it goes (or would go), and the runs kept though asked for, with why."""
    if args.older_than is None and args.keep is None:
        raise UsageError(
            "say which runs to remove: --older-than DAYS and/or --keep N "
            "(e.g. cadillac runs prune --older-than 30 --dry-run)"
        )
    home = checked_home(args, write=not args.dry_run)
    rows = [r for r in all_runs(home) if args.kind in (None, r["kind"])]
    chosen = _to_prune(rows, args.older_than, args.keep, time.time())
    removed, nights = 0, 0
    for row in chosen:
        said = _prune_one(home, row, args.dry_run)
        if said is None:
            continue
        removed += 1
        nights += row["kind"] == "nightly"
        output.line(said)
    if nights and not args.dry_run and (home.runs_dir / "index.html").is_file():
        from orchestrator.nightly.report import write_index

        write_index(home)  # the index of nightly reports links no night that is gone
    verb = "would be removed" if args.dry_run else "removed"
    left = len(rows) - removed
    output.line(
        f"{removed} run(s) {verb}, {left} kept"
        + ("; run again without --dry-run to remove them" if args.dry_run and removed else "")
    )
    return 0


def _last_active(row: dict) -> float | None:
    """When a run was last active: its end, else its start (None when neither is known)."""
    return row["ended"] or row["started"]


def _to_prune(rows: list[dict], older_than: float | None, keep: int | None, now: float):
    """The rows (newest first) to remove: past the ``keep`` newest, last active more than
    ``older_than`` days ago; a run whose time is unknown is never chosen."""
    chosen = rows[keep:] if keep is not None else rows
    if older_than is not None:
        chosen = [r for r in chosen if (_last_active(r) or now) < now - older_than * DAY_S]
    return [r for r in chosen if _last_active(r) is not None]


def _prune_one(home: Home, row: dict, dry_run: bool) -> str | None:
    """Remove one run (or say what would go); None when it is running and stays."""
    from orchestrator.loop.runs import BUILD_KINDS, Run, RunBusy

    folder = home.runs_dir / row["run_id"]
    what = f"{row['run_id']} ({row['kind']}, {row['status']}, {_when(_last_active(row))})"
    if row["status"] == "running":
        output.line(f"kept {what}: it is running")
        return None
    if row["kind"] in BUILD_KINDS or row["kind"] == "matrix":  # both hold <folder>/run.lock
        run = Run(home.runs_dir, row["run_id"])
        try:
            notes = run.remove(dry_run=dry_run)
        except RunBusy:
            output.line(f"kept {what}: it is running")
            return None
    else:
        from orchestrator.sandbox.files import remove_tree

        left = "" if dry_run else remove_tree(folder)
        notes = [f"left behind: {left}"] if left else []
    verb = "would remove" if dry_run else "removed"
    return f"{verb} {what}" + "".join(f"; {note}" for note in notes)
