"""``cadillac build`` and ``cadillac runs``: start or resume a build, and look at runs.

A build shows, while it works, the phase, the round out of its budget and the last
action (a rich status line on a terminal; one plain line per finished phase otherwise,
for logs and cron), then a summary table. With ``--json`` it prints only the summary.
Exit status: 0 when the build passed, 1 when it failed or stopped, 2 on bad usage.
A resumed build takes its model settings from the run's task.json unless given again
(:func:`~orchestrator.cli.config.build_config`); a build stopped by Ctrl-C or SIGTERM says
the command that resumes it.

``runs list`` lists every run in runs/ (builds, matrix, improve and nightly runs) with
its kind and status; ``runs show`` shows one. A record that cannot be read makes its run
``unreadable`` (with the reason) in the list, and ``runs show`` of it an error line.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import (
    actions,
    command,
    load_hooks,
    model_options,
    plugin_options,
    sandbox_options,
    spend_options,
)
from orchestrator.cli.config import build_config, utf8, warn_unused_api_base
from orchestrator.errors import CadillacError
from orchestrator.home import Home


def add_parsers(commands) -> None:
    p = command(
        commands,
        "build",
        "build TASK through the six phases",
        model_options(),
        sandbox_options(),
        spend_options(),
        plugin_options(),
        run=build,
    )
    p.add_argument("task", nargs="?", help='what to build, e.g. "a Flask todo API with SQLite"')
    p.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="continue a run from its first unpassed phase (with its model, unless given)",
    )
    p.add_argument("--json", action="store_true", help="print only the summary, as JSON")

    runs = command(commands, "runs", "past runs (runs/ in the home)", run=runs_list, json=False)
    sub = actions(runs, dest="runs_command")
    p = command(sub, "list", "list runs of every kind, newest first", run=runs_list)
    p.add_argument("--json", action="store_true")
    p = command(
        sub, "show", "one run: a build's task and summary, or a run's record", run=runs_show
    )
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")


def build(args: argparse.Namespace) -> int:
    """Start or resume a build. Everything that can be checked is checked before a run folder
    (or a home) is made: the text, the model, its files, the sandbox."""
    from orchestrator.loop.agent import Builder, NothingToResume
    from orchestrator.loop.runs import Run

    if args.resume is not None:
        if args.task:
            raise CadillacError("give either a task or --resume RUN_ID, not both")
        run_id = utf8(args.resume, "the run id given to --resume").strip()
        if not run_id:
            raise CadillacError(
                "the run id given to --resume is empty: give one from 'cadillac runs list'"
            )
        home = Home.resolve(getattr(args, "home", None)).check()
        recorded = Run.open(home.runs_dir, run_id).task().config
        config = build_config(args, recorded=recorded)
        Builder.preflight(config)
        warn_unused_api_base(args, config)
        hooks = load_hooks(args)
        home.check(write=True)
        try:
            builder = Builder.resume(home, config, run_id, hooks=hooks)
        except NothingToResume as exc:
            print(exc)
            return 0
        if not args.json:
            given = args.model or args.api_base or args.fallback_model or args.fallback_api_base
            source = "" if given else " (as the run recorded it)"
            output.err().print(f"model {_model_line(config)}{source}")
            origin = builder.record.matrix
            if origin is not None and not origin.learn:
                why = "a holdout task" if origin.split == "holdout" else "run with --no-learn"
                output.err().print(
                    f"run {run_id} is a build of {origin.run} ({why}): resumed without "
                    "learning (no lessons, budgets or skills are written)",
                    markup=False,
                )
    else:
        task = utf8(args.task or "", "the task").strip()
        if not task:
            raise CadillacError('say what to build: cadillac build "a Flask todo API with SQLite"')
        config = build_config(args)
        Builder.preflight(config)
        warn_unused_api_base(args, config)
        hooks = load_hooks(args)
        home = Home.resolve(getattr(args, "home", None)).check(write=True)
        builder = Builder.start(home, config, task, hooks=hooks)
    return run_resumably(builder, args, home)


def run_resumably(builder, args: argparse.Namespace, home: Home) -> int:
    """Run the build as the command line asked (progress, or JSON); stopped by Ctrl-C or
    SIGTERM, it says how to resume."""
    from orchestrator.llm.prices import cap_warning

    models = [endpoint.model for endpoint in builder.config.llm.endpoints()]
    warning = cap_warning(models, builder.config.max_cost_usd, builder.config.max_tokens)
    if warning:
        output.err().print(f"[bold yellow]warning:[/] {warning}")
    try:
        return _run(builder, args)
    except KeyboardInterrupt:  # cadillac's own "interrupted" line follows this one
        if builder.summary.status != "passed":
            again = f"cadillac build --resume {builder.run.id}"
            if getattr(args, "home", None):
                again += f" --home {shlex.quote(str(home.root))}"
            print(
                f"cadillac: run {builder.run.id} was stopped; resume with: {again}", file=sys.stderr
            )
        raise


def _model_line(config) -> str:
    llm = config.llm
    text = llm.model + (f" at {llm.api_base}" if llm.api_base else "")
    if llm.fallback_models:
        bases = list(llm.fallback_api_bases)
        text += ", fallbacks " + ", ".join(
            m + (f" at {bases[i]}" if i < len(bases) and bases[i] else "")
            for i, m in enumerate(llm.fallback_models)
        )
    return text


def _run(builder, args: argparse.Namespace) -> int:
    if args.json:
        summary = builder.build()
        print(summary.model_dump_json(indent=2))
        return 0 if summary.status == "passed" else 1
    err = output.err()
    live = sys.stderr.isatty()
    err.print(f"run {builder.run.id}: {builder.run.dir}")
    shown = len(builder.summary.phases)
    with err.status("starting", spinner="dots") if live else nullcontext() as status:

        def progress(p) -> None:
            nonlocal shown
            if live:
                status.update(output.StatusLine(p))
            for phase in builder.summary.phases[shown:]:
                _phase_line(phase)
            shown = len(builder.summary.phases)

        builder.on_progress = progress
        summary = builder.build()
    for phase in summary.phases[shown:]:
        _phase_line(phase)
    if builder.discarded:
        names = ", ".join(builder.discarded[:8]) + (" ..." if len(builder.discarded) > 8 else "")
        err.print(
            "resumed from the last phase's commit: the stopped phase's changes to "
            f"{len(builder.discarded)} file(s) were discarded ({names})",
            markup=False,
        )
    show_summary(summary)
    return 0 if summary.status == "passed" else 1


def _phase_line(phase) -> None:
    mark = {"passed": "✓", "budget_exhausted": "✗", "error": "✗"}.get(phase.outcome, "·")
    output.err().print(
        f"{mark} {phase.phase}: {phase.outcome} in {phase.rounds}/{phase.budget} round(s), "
        f"{phase.seconds:.1f} s — {phase.check}"
    )


def show_summary(summary) -> None:
    from orchestrator.llm.prices import usd

    columns = ("phase", "outcome", "rounds", "budget", "seconds", "check")
    table = output.table(
        f"run {summary.run_id}: {summary.status}", columns, right=("rounds", "budget", "seconds")
    )
    for p in summary.phases:
        table.add_row(p.phase, p.outcome, str(p.rounds), str(p.budget), f"{p.seconds:.1f}", p.check)
    console = output.out()
    console.print(table)
    cost = "unknown" if summary.cost_usd is None else f"${usd(summary.cost_usd)}"
    cached = f" ({summary.tokens_cached:,} from the cache)" if summary.tokens_cached else ""
    console.print(
        f"{summary.reason}\nmodel {summary.model}: {summary.llm_calls} call(s) "
        f"({summary.failed_attempts} retried{output.answered_by(summary)}), "
        f"{summary.tokens_in:,} tokens in{cached}, "
        f"{summary.tokens_out:,} out, cost {cost}; {summary.seconds:.1f} s\n"
        f"lessons: {len(summary.lessons_recalled)} recalled, {len(summary.lessons_applied)} "
        f"applied, {len(summary.lessons_saved)} saved, {len(summary.lessons_boosted)} boosted, "
        f"{len(summary.lessons_penalised)} penalised"
    )


KINDS = ("matrix", "improve", "nightly")
"""The kinds of run besides builds, each a ``<kind>-<id>`` folder in runs/."""


def runs_list(args: argparse.Namespace) -> int:
    """Every run in runs/, newest first: builds, matrix, improve and nightly runs.

    A run whose record cannot be read is listed as ``unreadable`` with the reason. A run
    whose record says it is still going is checked where it can be: a build holds its
    run's lock, an improve cycle its repository's lock and a nightly the home's; when the
    lock is free the process is gone and the run reads ``interrupted``; a matrix run holds
    its folder's ``run.lock``."""
    home = Home.resolve(getattr(args, "home", None)).check()
    rows = _all_runs(home)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = ("run", "kind", "status", "phases", "started", "what")
    table = output.table(f"{len(rows)} run(s) in {home.runs_dir}", columns)
    for r in rows:
        when = (
            datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M") if r["started"] else ""
        )
        shown = r["kind"] == "build" and r["status"] != "unreadable"
        phases = f"{r['phases_passed']}/6" if shown else ""
        if r["status"] == "unreadable":
            what = f"unreadable: {r['reason']}"
        elif r["kind"] == "build":
            what = r["task"] or ""
        else:
            what = r.get("what") or r["reason"]
        table.add_row(r["run_id"], r["kind"], r["status"], phases, when, what[:90])
    output.out().print(table)
    return 0


def _all_runs(home: Home) -> list[dict]:
    from orchestrator.loop.runs import RunUnreadable, id_time, list_runs

    rows = [run.row() for run in list_runs(home.runs_dir)]
    if home.runs_dir.is_dir():
        others = [
            p
            for p in home.runs_dir.iterdir()
            if p.is_dir() and p.name.partition("-")[0] in KINDS and p.name.partition("-")[2]
        ]
        improve_live = _improve_live(home)
        nightly_live = _nightly_live(home)
        for folder in others:
            kind = folder.name.partition("-")[0]
            row = {
                "run_id": folder.name,
                "kind": kind,
                "task": None,
                "status": "unreadable",
                "phases_passed": None,
                "cost_usd": None,
                "started": id_time(folder.name),
                "ended": None,
                "reason": "",
                "what": "",
            }
            try:
                if kind == "matrix":
                    _matrix_row(folder, row)
                elif kind == "improve":
                    _improve_row(folder, row, improve_live)
                else:
                    _nightly_row(folder, row, nightly_live)
            except RunUnreadable as exc:
                row["status"], row["reason"] = "unreadable", exc.why
            rows.append(row)
    return sorted(rows, key=lambda r: (r["started"] or 0.0, r["run_id"]), reverse=True)


def _matrix_row(folder: Path, row: dict) -> None:
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


def _improve_summaries(home: Home) -> list[tuple[Path, object]]:
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


def _improve_live(home: Home) -> set[Path]:
    """The improve runs (folders) whose cycle is running: for each repository whose improve
    lock is held, its newest improve run without an end (one cycle at a time per repository;
    an older one without an end was killed)."""
    newest: dict[str, tuple[float, Path]] = {}
    for folder, s in _improve_summaries(home):
        if s.ended is None and (s.repo not in newest or s.started > newest[s.repo][0]):
            newest[s.repo] = (s.started, folder)
    return {folder for repo, (_, folder) in newest.items() if _improve_lock_held(Path(repo))}


def _improve_lock_held(repo: Path) -> bool:
    from orchestrator.loop.runs import lock_held
    from orchestrator.sandbox.git import GitError, git

    try:
        common = git("rev-parse", "--git-common-dir", repo=repo, timeout=30).strip()
    except GitError:  # no repository there any more: no cycle can run on it
        return False
    return lock_held((repo / common).resolve() / "cadillac-improve.lock")


def _improve_row(folder: Path, row: dict, live: set[Path]) -> None:
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


def _nightly_live(home: Home) -> Path | None:
    """The nightly run that is running: the newest one that says so, while the home's nightly
    lock is held (one nightly at a time per home)."""
    from orchestrator.nightly.records import NightlyLock

    running = []
    for path in home.runs_dir.glob("nightly-*/nightly.json"):
        try:
            record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("status") == "running":
            started = record.get("started")
            running.append((started if isinstance(started, int | float) else 0.0, path.parent))
    if not running or NightlyLock(home).acquire_probe():
        return None
    return max(running)[1]


def _nightly_row(folder: Path, row: dict, live: Path | None) -> None:
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


def runs_show(args: argparse.Namespace) -> int:
    from orchestrator.loop.runs import Run, check_run_id, read_record

    home = Home.resolve(getattr(args, "home", None)).check()
    run_id = check_run_id(args.run_id, home.runs_dir)
    special = home.runs_dir / run_id
    kind = run_id.partition("-")[0]
    if kind in KINDS and special.is_dir():
        if kind == "improve":
            from orchestrator.improve.records import ImproveSummary

            read_record(special / "summary.json", ImproveSummary, run_id)  # readable, or why
            if args.json:
                print((special / "summary.json").read_text(encoding="utf-8"))
            else:
                from orchestrator.cli.improve import show_improve

                show_improve(special)
            return 0
        if kind == "matrix":
            from orchestrator.bench.results import MatrixResults

            if not (special / "results.json").exists():
                raise CadillacError(
                    f"matrix run {run_id} has no results yet: its first build has not ended, "
                    "or it was killed"
                )
            read_record(special / "results.json", MatrixResults, run_id)
            print((special / "results.json").read_text(encoding="utf-8"))
            return 0
        return _show_nightly(home, special, args.json)
    run = Run.open(home.runs_dir, run_id)
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
    output.out().print(f"task: {task.task}\nfolder: {run.dir}")
    if summary is None:
        output.out().print("no summary yet: the run stopped before its first phase ended")
    else:
        show_summary(summary)
    return 0


def _show_nightly(home: Home, folder: Path, as_json: bool) -> int:
    from orchestrator.loop.runs import read_record
    from orchestrator.nightly.records import NightlyRecord

    path = folder / "nightly.json"
    read_record(path, NightlyRecord, folder.name)  # readable, or why
    if as_json:
        print(path.read_text(encoding="utf-8"))
        return 0
    row: dict = {}
    _nightly_row(folder, row, _nightly_live(home))
    r = read_record(path, NightlyRecord, folder.name)
    when = datetime.fromtimestamp(r.started).strftime("%Y-%m-%d %H:%M")
    why = f": {row['reason']}" if row["reason"] else ""
    lines = [
        f"nightly {folder.name}: {row['status']}{why}",
        f"started {when}, model {r.model or '-'}, improver {r.improver_model or '-'}",
    ]
    if r.improve_id:
        lines.append(f"improve run {r.improve_id}: {folder / 'improve'}")
    report = folder / "report.html"
    lines.append(f"report: {report}" if report.is_file() else f"folder: {folder}")
    output.out().print("\n".join(lines))
    return 0
