"""``cadillac matrix run``: the benchmark matrix from the command line.

Prints a line per finished build while it works, then a table per task (mean score,
spread, cost, time) and the weighted scores; ``--json`` prints only the results (what
``runs/matrix-<id>/results.json`` holds). Exit status 0.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import (
    actions,
    command,
    matrix_options,
    model_options,
    positive,
    sandbox_options,
    spend_options,
)
from orchestrator.cli.config import build_config
from orchestrator.home import Home


def add_parsers(commands) -> None:
    matrix = command(commands, "matrix", "the benchmark matrix")
    sub = actions(matrix, required=True, dest="matrix_command")
    p = command(
        sub,
        "run",
        "build every task K times and score",
        model_options(),
        matrix_options(),
        sandbox_options(),
        spend_options(),
        run=matrix_run,
    )
    p.add_argument("--repeats", type=positive, default=1, metavar="K")
    p.add_argument("--split", choices=("train", "holdout", "all"), default="all")
    p.add_argument(
        "--no-learn", action="store_true", help="leave memory and budget history as they are"
    )
    p.add_argument("--json", action="store_true", help="print only the results, as JSON")
    p.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed the model's sampling by task and repeat (two runs with one seed match)",
    )
    p.add_argument(
        "--build-only",
        action="store_true",
        help="build without scoring (improve trials: the cycle scores them itself)",
    )


def matrix_run(args: argparse.Namespace) -> int:
    from orchestrator.bench.matrix import run_matrix
    from orchestrator.bench.tasks import DEFAULT_MATRIX
    from orchestrator.llm.prices import cap_warning

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    config = build_config(args, per_build_cost=False)
    matrix = Path(args.matrix) if args.matrix else DEFAULT_MATRIX
    models = [e.model for e in config.llm.endpoints()]
    warning = cap_warning(models, args.max_cost, args.max_tokens)
    if warning:
        output.err().print(f"[bold yellow]warning:[/] {warning}")

    def progress(run) -> None:
        if not args.json:
            checks = f"{run.checks_passed}/{run.checks_total} checks" if run.checks_total else ""
            if run.verdict in ("tampered", "broken"):
                checks = f"{run.verdict.upper()}: {run.failure[:80]}"
            output.err().print(
                f"{run.task_id} #{run.repeat + 1}: score {run.score:.2f} {checks} "
                f"({run.status}, {run.seconds:.0f} s) {run.run_id}"
            )

    results = run_matrix(
        home,
        config,
        matrix,
        repeats=args.repeats,
        split=args.split,
        jobs=args.jobs,
        learn=not args.no_learn,
        on_result=progress,
        score=not args.build_only,
        max_cost_usd=args.max_cost,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    if args.json:
        print(results.model_dump_json(indent=2))
        return 0
    columns = (
        "task",
        "split",
        "weight",
        "mean",
        "spread",
        "runs",
        "cost",
        "tokens",
        "time/build",
        "flags",
    )
    table = output.table(f"matrix {results.id}: {matrix}", columns, right=columns[2:9])
    for t in results.tasks:
        cost = "-" if t.cost_usd is None else f"${t.cost_usd:.3f}"
        verdicts = [r.verdict for r in results.runs if r.task_id == t.task_id]
        flags = ", ".join(
            f"{verdicts.count(v)} {v}" for v in ("tampered", "broken") if v in verdicts
        )
        table.add_row(
            t.task_id,
            t.split,
            f"{t.weight:g}",
            f"{t.mean:.2f}",
            f"{t.spread:.2f}",
            str(len(t.scores)),
            cost,
            f"{t.tokens:,}",
            f"{t.seconds:.0f} s",
            flags or "-",
        )
    output.out().print(table)
    for run in results.runs:
        if run.verdict in ("tampered", "broken"):
            output.out().print(
                f"[bold red]{run.verdict}[/]: {run.task_id} #{run.repeat + 1} "
                f"({run.run_id}): {run.failure}"
            )

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    cost = "unknown" if results.cost_usd is None else f"${results.cost_usd:.3f}"
    if results.stopped_because:
        output.out().print(f"[bold]stopped early:[/] {results.stopped_because}")
    output.out().print(
        f"score {fmt(results.score)} (train {fmt(results.train_score)}, holdout "
        f"{fmt(results.holdout_score)}); cost {cost}; "
        f"results: {home.runs_dir / ('matrix-' + results.id) / 'results.json'}"
    )
    return 0
