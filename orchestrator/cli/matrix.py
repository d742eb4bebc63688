"""``cadillac matrix run``: the benchmark matrix from the command line.

Prints which builds run (at the start, and every half minute while none ends) and a line
per finished build while it works, then a table per task (mean score, spread, cost, time),
one line for the builds that never ran, and the weighted scores; ``--json`` prints only
the results (what ``runs/matrix-<id>/results.json`` holds). Exit status 0. ``--resume ID``
goes on with a stopped run, as it was started.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.bench import MAX_REPEATS
from orchestrator.cli import output
from orchestrator.cli.args import (
    UsageError,
    actions,
    command,
    engine_config,
    load_hooks,
    matrix_options,
    model_options,
    number,
    plugin_options,
    sandbox_options,
    spend_options,
    verbosity_options,
)
from orchestrator.cli.config import build_config, warn_unused_api_base
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
        verbosity_options(),
        spend_options(),
        plugin_options(),
        run=matrix_run,
    )
    p.add_argument(
        "--repeats",
        type=number(int, lambda n: 1 <= n <= MAX_REPEATS, f"is not between 1 and {MAX_REPEATS}"),
        metavar="K",
        help=f"builds per task (1 to {MAX_REPEATS}; default 1)",
    )
    p.add_argument("--split", choices=("train", "holdout", "all"), help="default: all")
    p.add_argument(
        "--task",
        action="append",
        metavar="ID",
        dest="task",
        help="build only this task of the matrix (repeat the option for more)",
    )
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
    p.add_argument(
        "--keep-envs",
        action="store_true",
        help="keep each build's installed environments (.venv, node_modules ...) once scored",
    )
    p.add_argument(
        "--resume",
        metavar="ID",
        help="go on with a stopped matrix run: keep its finished builds, run the rest",
    )


STARTED_AS = ("matrix", "repeats", "split", "seed", "no_learn", "build_only", "task")
"""The options a resumed run takes from the run it goes on with."""


def _resumed_options(args: argparse.Namespace) -> None:
    """Refuse (UsageError) options a resumed run takes from its run; else fill the defaults."""
    if args.resume is not None:
        given = [n for n in STARTED_AS if getattr(args, n) not in (None, False)]
        if given:
            names = ", ".join("--" + n.replace("_", "-") for n in given)
            raise UsageError(f"--resume goes on with the run as it was started: leave out {names}")
    args.repeats = 1 if args.repeats is None else args.repeats
    args.split = args.split or "all"


COLUMNS = (
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
"""The columns of the ``matrix run`` table; each row is made by these names (see _row)."""


def _row(t, results) -> dict[str, str]:
    """One task's cells, by column name: a value can only land under its own header."""
    verdicts = [r.verdict for r in results.runs if r.task_id == t.task_id]
    flags = ", ".join(f"{verdicts.count(v)} {v}" for v in ("tampered", "broken") if v in verdicts)
    return {
        "task": t.task_id,
        "split": t.split,
        "weight": f"{t.weight:g}",
        "mean": f"{t.mean:.2f}",
        "spread": f"{t.spread:.2f}",
        "runs": str(len(t.scores)),
        "cost": "-" if t.cost_usd is None else f"${t.cost_usd:.3f}",
        "tokens": f"{t.tokens:,}",
        "time/build": f"{t.seconds:.0f} s",
        "flags": flags or "-",
    }


def results_table(results, matrix: Path):
    """The per-task table of a matrix run: mean score, spread, cost, tokens, time, flags."""
    table = output.table(f"matrix {results.id}: {matrix}", COLUMNS, right=COLUMNS[2:9])
    for t in results.tasks:
        row = _row(t, results)
        table.add_row(*(row[name] for name in COLUMNS))
    return table


def matrix_run(args: argparse.Namespace) -> int:
    from orchestrator.bench.matrix import load_results, run_matrix
    from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
    from orchestrator.llm.client import check_model
    from orchestrator.llm.prices import cap_warning
    from orchestrator.sandbox.executor import check_sandbox

    _resumed_options(args)
    home = Home.resolve(getattr(args, "home", None))
    if home.root.exists():
        home.check(write=True)
    config = build_config(args, per_build_cost=False)
    matrix = Path(args.matrix) if args.matrix else DEFAULT_MATRIX
    if args.resume is not None:
        resumed = load_results(home, args.resume)
        matrix, args.build_only = Path(resumed.matrix), resumed.build_only
    # everything that can be checked is, before the home or a run folder is made
    for endpoint in config.llm.endpoints():
        check_model(endpoint.model)
    check_sandbox(config.executor)
    load_matrix(matrix, require_checks=not args.build_only)
    engine = engine_config(args, config.executor, config.llm)
    hooks = load_hooks(args)
    home.check(write=True)
    warn_unused_api_base(args, config)
    models = [e.model for e in config.llm.endpoints()]
    warning = cap_warning(models, args.max_cost, args.max_tokens)
    if warning:
        output.warn(warning)

    def progress(run) -> None:
        if not args.json:
            checks = f"{run.checks_passed}/{run.checks_total} checks" if run.checks_total else ""
            if run.verdict in ("tampered", "broken"):
                checks = f"{run.verdict.upper()}: {run.failure[:80]}"
            output.err().print(
                f"{run.task_id} #{run.repeat + 1}: score {run.score:.2f} {checks} "
                f"({run.status}, {run.seconds:.0f} s) {run.run_id}"
            )

    seen: list[str] = []

    def running(now) -> None:
        seen[:] = [now.run_id]
        if not args.json:
            builds = ", ".join(f"{t} #{r + 1} ({_seconds(s)})" for t, r, s in now.running)
            output.err().print(
                f"matrix {now.run_id}: running {builds}; {now.done} of {now.total} builds done"
            )

    try:
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
            keep_envs=args.keep_envs,
            hooks=hooks,
            on_progress=running,
            resume=args.resume,
            on_builder=output.BuildTracer(output.verbosity()),
            engine=engine,
            task_ids=args.task,
            on_warning=output.warn,
        )
    except KeyboardInterrupt:
        if seen:  # the run has a folder: it can go on later
            output.err().print(
                f"matrix {seen[-1]} stopped; to go on with it: "
                f"cadillac matrix run --resume {seen[-1]}"
            )
        raise
    if args.json:
        print(results.model_dump_json(indent=2))
        return 0
    if not output.quiet():  # --quiet: the score line alone
        output.out().print(results_table(results, matrix))
    for run in results.runs:
        if run.verdict in ("tampered", "broken"):
            output.out().print(
                f"[bold red]{run.verdict}[/]: {run.task_id} #{run.repeat + 1} "
                f"({run.run_id}): {run.failure}"
            )

    def fmt(x):
        return "-" if x is None else f"{x:.3f}"

    cost = "unknown" if results.cost_usd is None else f"${results.cost_usd:.3f}"
    if results.not_started:  # one line for them all: they are not results
        output.out().print(
            f"{results.not_started} build(s) not started: "
            f"{results.stopped_because or 'the run was stopped'}; to run them: "
            f"cadillac matrix run --resume {results.id}"
        )
    elif results.stopped_because:
        output.out().print(f"[bold]stopped early:[/] {results.stopped_because}")
    output.out().print(
        f"score {fmt(results.score)} (train {fmt(results.train_score)}, holdout "
        f"{fmt(results.holdout_score)}); cost {cost}; "
        f"results: {home.runs_dir / ('matrix-' + results.id) / 'results.json'}"
    )
    return 0


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s // 60:.0f} min {s % 60:02.0f} s"
