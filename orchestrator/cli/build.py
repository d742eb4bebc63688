"""``cadillac build``: start or resume a build (``cadillac runs`` looks at runs later).

A build shows, while it works, the phase, the round out of its budget and the last
action (a rich status line on a terminal; one plain line per finished phase otherwise,
for logs and cron), then a summary table. With ``--json`` it prints only the summary.
Exit status: 0 when the build passed, 1 when it failed or stopped, 2 on bad usage.
A resumed build takes its model settings from the run's task.json unless given again
(:func:`~orchestrator.cli.config.build_config`); a build stopped by Ctrl-C or SIGTERM says
the command that resumes it, and a resumed enhance build what going back to its last
checkpoint discarded, as it starts.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import nullcontext

from orchestrator.cli import output
from orchestrator.cli.args import (
    UsageError,
    command,
    load_hooks,
    model_options,
    plugin_options,
    sandbox_options,
    spend_options,
    verbosity_options,
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
        verbosity_options(),
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
            raise UsageError('say what to build: cadillac build "a Flask todo API with SQLite"')
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
        output.warn(warning)
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
    output.show_tool_calls(builder)  # --verbose
    shown = len(builder.summary.phases)
    said = False

    def discarded() -> None:
        """Say, once, what going back to the last checkpoint discarded: at the start, with
        the first progress (the workspace goes back as the resumed build begins)."""
        nonlocal said
        lost = builder.discarded
        if lost and not said:
            said = True
            names = ", ".join(lost[:8]) + (" ..." if len(lost) > 8 else "")
            err.print(
                "resumed from the last phase's commit: the stopped phase's changes to "
                f"{len(lost)} file(s) were discarded ({names})",
                markup=False,
            )

    with err.status("starting", spinner="dots") if live else nullcontext() as status:

        def progress(p) -> None:
            nonlocal shown
            discarded()
            if live:
                status.update(output.StatusLine(p))
            for phase in builder.summary.phases[shown:]:
                _phase_line(phase)
            shown = len(builder.summary.phases)

        builder.on_progress = progress
        summary = builder.build()
    discarded()  # a build that stopped before its first model call
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
    from orchestrator.llm.prices import usd

    columns = ("phase", "outcome", "rounds", "budget", "seconds", "check")
    table = output.table(
        f"run {summary.run_id}: {summary.status}", columns, right=("rounds", "budget", "seconds")
    )
    for p in summary.phases:
        table.add_row(p.phase, p.outcome, str(p.rounds), str(p.budget), f"{p.seconds:.1f}", p.check)
    console = output.out()
    console.print(table.title if output.quiet() else table)  # --quiet: the title line alone
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
