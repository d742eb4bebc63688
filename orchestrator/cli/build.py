"""``cadillac build`` and ``cadillac runs``: start or resume a build, and look at runs.

A build shows, while it works, the phase, the round out of its budget and the last
action (a rich status line on a terminal; one plain line per finished phase otherwise,
for logs and cron), then a summary table. With ``--json`` it prints only the summary.
Exit status: 0 when the build passed, 1 when it failed or stopped, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from datetime import datetime

from orchestrator.cli import output
from orchestrator.cli.args import (
    actions,
    command,
    model_options,
    positive_float,
    sandbox_options,
)
from orchestrator.cli.config import build_config
from orchestrator.errors import CadillacError
from orchestrator.home import Home


def add_parsers(commands) -> None:
    p = command(
        commands,
        "build",
        "build TASK through the six phases",
        model_options(),
        sandbox_options(),
        run=build,
    )
    p.add_argument("task", nargs="?", help='what to build, e.g. "a Flask todo API with SQLite"')
    p.add_argument(
        "--max-cost",
        type=positive_float,
        metavar="USD",
        help="stop (resumably) before the spend passes this",
    )
    p.add_argument(
        "--resume", metavar="RUN_ID", help="continue a run from its first unpassed phase"
    )
    p.add_argument("--json", action="store_true", help="print only the summary, as JSON")

    runs = command(commands, "runs", "past runs (runs/ in the home)", run=runs_list, json=False)
    sub = actions(runs, dest="runs_command")
    p = command(sub, "list", "list runs, newest first", run=runs_list)
    p.add_argument("--json", action="store_true")
    p = command(sub, "show", "one run's task and summary", run=runs_show)
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")


def build(args: argparse.Namespace) -> int:
    from orchestrator.build.agent import Builder, NothingToResume

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    config = build_config(args)
    if args.resume:
        if args.task:
            raise CadillacError("give either a task or --resume RUN_ID, not both")
        try:
            builder = Builder.resume(home, config, args.resume)
        except NothingToResume as exc:
            print(exc)
            return 0
    else:
        if not (args.task or "").strip():
            raise CadillacError('say what to build: cadillac build "a Flask todo API with SQLite"')
        builder = Builder.start(home, config, args.task.strip())
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
                status.update(f"{p.phase} · round {p.round}/{p.budget} · {p.action}")
            for phase in builder.summary.phases[shown:]:
                _phase_line(phase)
            shown = len(builder.summary.phases)

        builder.on_progress = progress
        summary = builder.build()
    for phase in summary.phases[shown:]:
        _phase_line(phase)
    show_summary(summary)
    return 0 if summary.status == "passed" else 1


def _phase_line(phase) -> None:
    mark = {"passed": "✓", "budget_exhausted": "✗", "error": "✗"}.get(phase.outcome, "·")
    output.err().print(
        f"{mark} {phase.phase}: {phase.outcome} in {phase.rounds}/{phase.budget} round(s), "
        f"{phase.seconds:.1f} s — {phase.check}"
    )


def show_summary(summary) -> None:
    columns = ("phase", "outcome", "rounds", "budget", "seconds", "check")
    table = output.table(
        f"run {summary.run_id}: {summary.status}", columns, right=("rounds", "budget", "seconds")
    )
    for p in summary.phases:
        table.add_row(p.phase, p.outcome, str(p.rounds), str(p.budget), f"{p.seconds:.1f}", p.check)
    console = output.out()
    console.print(table)
    cost = "unknown" if summary.cost_usd is None else f"${summary.cost_usd:.4f}"
    console.print(
        f"{summary.reason}\nmodel {summary.model}: {summary.llm_calls} call(s) "
        f"({summary.failed_attempts} retried), {summary.tokens_in:,} tokens in, "
        f"{summary.tokens_out:,} out, cost {cost}; {summary.seconds:.1f} s\n"
        f"lessons: {len(summary.lessons_recalled)} recalled, {len(summary.lessons_applied)} "
        f"applied, {len(summary.lessons_saved)} saved, {len(summary.lessons_boosted)} boosted, "
        f"{len(summary.lessons_penalised)} penalised"
    )


def runs_list(args: argparse.Namespace) -> int:
    from orchestrator.build.runs import list_runs

    home = Home.resolve(getattr(args, "home", None)).check()
    rows = []
    for run in list_runs(home.runs_dir):
        s = run.summary()
        status = s.status if s else "running"  # no summary yet: its first phase is on
        if status == "running" and not run.live():  # its process is gone
            status = "interrupted"
        rows.append(
            {
                "run_id": run.id,
                "task": run.task().task,
                "status": status,
                "phases_passed": sum(p.outcome == "passed" for p in s.phases) if s else 0,
                "cost_usd": s.cost_usd if s else None,
                "started": s.started if s else None,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    columns = ("run", "status", "phases", "started", "task")
    table = output.table(f"{len(rows)} run(s) in {home.runs_dir}", columns)
    for r in rows:
        when = (
            datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M") if r["started"] else ""
        )
        table.add_row(r["run_id"], r["status"], f"{r['phases_passed']}/6", when, r["task"][:70])
    output.out().print(table)
    return 0


def runs_show(args: argparse.Namespace) -> int:
    from orchestrator.build.runs import Run

    home = Home.resolve(getattr(args, "home", None)).check()
    special = home.runs_dir / args.run_id
    if args.run_id.startswith("improve-") and special.is_dir():
        if args.json:
            print((special / "summary.json").read_text(encoding="utf-8"))
        else:
            from orchestrator.cli.improve import show_improve

            show_improve(special)
        return 0
    if args.run_id.startswith("matrix-") and (special / "results.json").is_file():
        print((special / "results.json").read_text(encoding="utf-8"))
        return 0
    run = Run.open(home.runs_dir, args.run_id)
    summary = run.summary()
    if args.json:
        print(
            json.dumps(
                {
                    "task": run.task().model_dump(mode="json"),
                    "summary": summary.model_dump(mode="json") if summary else None,
                },
                indent=2,
            )
        )
        return 0
    output.out().print(f"task: {run.task().task}\nfolder: {run.dir}")
    if summary is None:
        output.out().print("no summary yet: the run stopped before its first phase ended")
    else:
        show_summary(summary)
    return 0
