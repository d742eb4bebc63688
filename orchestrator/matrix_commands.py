"""``cadillac matrix run``: the benchmark matrix from the command line.

Prints a line per finished build while it works, then a table per task (mean
score, spread, cost, time) and the weighted scores; ``--json`` prints only the
results (what ``runs/matrix-<id>/results.json`` holds). Exit status 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orchestrator.build_commands import build_config
from orchestrator.home import Home

console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 120)


def matrix_run(args: argparse.Namespace) -> int:
    from orchestrator.matrix import DEFAULT_MATRIX, run_matrix

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    config = build_config(args)
    matrix = Path(args.matrix) if args.matrix else DEFAULT_MATRIX

    def progress(run) -> None:
        if not args.json:
            checks = f"{run.checks_passed}/{run.checks_total} checks" if run.checks_total else ""
            err.print(
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
    )
    if args.json:
        print(results.model_dump_json(indent=2))
        return 0
    table = Table(title=f"matrix {results.id}: {matrix}", title_justify="left")
    for name in (
        "task",
        "split",
        "weight",
        "mean",
        "spread",
        "runs",
        "cost",
        "tokens",
        "time/build",
    ):
        table.add_column(name, justify="left" if name in ("task", "split") else "right")
    for t in results.tasks:
        cost = "-" if t.cost_usd is None else f"${t.cost_usd:.3f}"
        table.add_row(
            t.task_id,
            t.split,
            f"{t.weight:g}",
            f"{t.mean:.2f}",
            f"{t.spread:.2f}",
            str(len(t.scores)),
            cost,
            f"{t.seconds:.0f} s",
        )
    console.print(table)

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    cost = "unknown" if results.cost_usd is None else f"${results.cost_usd:.3f}"
    console.print(
        f"score {fmt(results.score)} (train {fmt(results.train_score)}, holdout "
        f"{fmt(results.holdout_score)}); cost {cost}; "
        f"results: {home.runs_dir / ('matrix-' + results.id) / 'results.json'}"
    )
    return 0
