"""``cadillac build`` and ``cadillac runs``: start or resume a build, and look at runs.

A build shows, while it works, the phase, the round out of its budget and the
last action (a rich status line on a terminal; one plain line per finished
phase otherwise, for logs and cron), then a summary table. With ``--json`` it
prints only the summary. Exit status: 0 when the build passed, 1 when it
failed or stopped, 2 on bad usage (:mod:`orchestrator.cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import nullcontext
from datetime import datetime

from rich.console import Console
from rich.table import Table

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.runs import Run, RunSummary, list_runs

console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 120)


def build_config(args: argparse.Namespace):
    from orchestrator.agent import BuildConfig
    from orchestrator.llm import MODEL_HINT, LLMConfig

    model = args.model or os.environ.get("CADILLAC_MODEL", "")
    if not model:
        raise CadillacError(f"no model given: {MODEL_HINT}")
    llm = LLMConfig(
        model=model,
        api_base=args.api_base or os.environ.get("CADILLAC_API_BASE") or None,
        fallback_models=args.fallback_model or [],
    )
    return BuildConfig(llm=llm, max_cost_usd=getattr(args, "max_cost", None))


def build(args: argparse.Namespace) -> int:
    from orchestrator.agent import Builder

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    config = build_config(args)
    if args.resume:
        if args.task:
            raise CadillacError("give either a task or --resume RUN_ID, not both")
        builder = Builder.resume(home, config, args.resume, on_progress=None)
    else:
        if not (args.task or "").strip():
            raise CadillacError('say what to build: cadillac build "a Flask todo API with SQLite"')
        builder = Builder.start(home, config, args.task.strip())
    if args.json:
        summary = builder.build()
        print(summary.model_dump_json(indent=2))
        return 0 if summary.status == "passed" else 1
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
    err.print(
        f"{mark} {phase.phase}: {phase.outcome} in {phase.rounds}/{phase.budget} round(s), "
        f"{phase.seconds:.1f} s — {phase.check}"
    )


def show_summary(summary: RunSummary) -> None:
    table = Table(title=f"run {summary.run_id}: {summary.status}", title_justify="left")
    for name in ("phase", "outcome", "rounds", "budget", "seconds", "check"):
        table.add_column(
            name, justify="right" if name in ("rounds", "budget", "seconds") else "left"
        )
    for p in summary.phases:
        table.add_row(p.phase, p.outcome, str(p.rounds), str(p.budget), f"{p.seconds:.1f}", p.check)
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
    home = Home.resolve(getattr(args, "home", None)).check()
    rows = []
    for run in list_runs(home.runs_dir):
        s = run.summary()
        rows.append(
            {
                "run_id": run.id,
                "task": run.task().task,
                "status": s.status if s else "unknown",
                "phases_passed": sum(p.outcome == "passed" for p in s.phases) if s else 0,
                "cost_usd": s.cost_usd if s else None,
                "started": s.started if s else None,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"{len(rows)} run(s) in {home.runs_dir}", title_justify="left")
    for name in ("run", "status", "phases", "started", "task"):
        table.add_column(name)
    for r in rows:
        when = (
            datetime.fromtimestamp(r["started"]).strftime("%Y-%m-%d %H:%M") if r["started"] else ""
        )
        table.add_row(r["run_id"], r["status"], f"{r['phases_passed']}/6", when, r["task"][:70])
    console.print(table)
    return 0


def runs_show(args: argparse.Namespace) -> int:
    home = Home.resolve(getattr(args, "home", None)).check()
    special = home.runs_dir / args.run_id
    if args.run_id.startswith("improve-") and special.is_dir():
        if args.json:
            print((special / "summary.json").read_text(encoding="utf-8"))
        else:
            from orchestrator.improve_commands import show_improve

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
    console.print(f"task: {run.task().task}\nfolder: {run.dir}")
    if summary is None:
        console.print("no summary yet: the run stopped before its first phase ended")
    else:
        show_summary(summary)
    return 0
