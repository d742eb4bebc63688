"""``cadillac improve``: run the improve cycle, or show the latest one (``--status``)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import (
    command,
    cycle_options,
    engine_config,
    load_hooks,
    matrix_options,
    model_options,
    plugin_options,
    sandbox_options,
    spend_options,
    unit,
    verbosity_options,
)
from orchestrator.cli.config import build_config
from orchestrator.errors import CadillacError
from orchestrator.home import Home


def duration(text: str) -> float:
    """The argparse type of ``--time-budget`` (improve and nightly): seconds, from 6h, 90m,
    1h30m, 45s or a plain number of minutes; more than 0."""
    from orchestrator.nightly.records import parse_duration

    try:
        return parse_duration(text)
    except CadillacError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def time_budget_option(p: argparse.ArgumentParser, **options) -> None:
    """``--time-budget DURATION``, the same for improve and nightly.

    A value that starts with a minus and a digit (``-1h``) is taken as the option's value,
    to be refused as "must be more than 0", not as an unknown option ("expected one
    argument"); no option of these commands is spelt like a negative number. (Python 3.13's
    argparse does the same by default.)"""
    p.add_argument(
        "--time-budget",
        type=duration,
        metavar="DURATION",
        help="e.g. 6h, 90m, 1h30m or 45s; a plain number is minutes",
        **options,
    )
    p._negative_number_matcher = re.compile(r"^-\.?\d")


def lifetime_alpha(text: str) -> float | None:
    """The argparse type of ``--lifetime-alpha``: a number between 0 and 1, or ``off``."""
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1, or off")
    return value


def lifetime_option(p: argparse.ArgumentParser) -> None:
    """``--lifetime-alpha A|off``, the same for improve and nightly (not given: the
    default of :mod:`orchestrator.improve.lifetime`, which help must not import)."""
    p.add_argument(
        "--lifetime-alpha",
        type=lifetime_alpha,
        default=argparse.SUPPRESS,
        metavar="A",
        help="the chance that any patch kept over the repository's life is noise, at most "
        "(default 0.1; every measured iteration spends from it); off: each night's bound "
        "alone",
    )


def add_parsers(commands) -> None:
    p = command(
        commands,
        "improve",
        "patch cadillac where the matrix finds it weak",
        model_options(),
        matrix_options(),
        cycle_options(),
        sandbox_options(),
        verbosity_options(),
        spend_options(),
        plugin_options(),
        run=improve,
    )
    p.add_argument(
        "--threshold", type=unit, help="least train lift worth keeping a patch for (default 0.01)"
    )
    time_budget_option(p)
    lifetime_option(p)
    p.add_argument("--status", action="store_true", help="show the latest improve run")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print the builds, cost and time a cycle would take, and run nothing",
    )
    p.add_argument(
        "--json", action="store_true", help="print only the summary (with --status too), as JSON"
    )


def read_summary(folder: Path):
    """The ImproveSummary of an improve run's folder; CadillacError naming the file if bad."""
    from pydantic import ValidationError

    from orchestrator.improve.records import ImproveSummary

    path = folder / "summary.json"
    if not path.is_file():
        raise CadillacError(f"{folder} has no summary.json")
    try:
        return ImproveSummary.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        reason = f"{where}: {error['msg']}" if where else error["msg"]
        raise CadillacError(f"{path} cannot be read: {reason}") from None


def show_improve(folder: Path, as_json: bool = False) -> None:
    s = read_summary(folder)
    if as_json:
        print(s.model_dump_json(indent=2))
        return
    columns = ("iter", "status", "weakness", "train Δ", "p", "builds", "holdout Δ", "reason")
    table = output.table(f"improve {s.id} on {s.repo}", ())
    for name in columns:
        table.add_column(name, overflow="fold")

    def num(x):
        return "-" if x is None else f"{x:+.3f}"

    for it in s.iterations:
        p = "-" if it.p is None else f"{it.p:.4f}"
        builds = " + ".join(str(n) for n in it.builds.values()) or "-"
        if it.reused:  # the baseline's scores earlier builds served
            builds += f" ({sum(it.reused.values())} reused)"
        table.add_row(
            str(it.iteration),
            it.status,
            it.weakness or "-",
            num(it.train_delta),
            p,
            builds,
            num(it.holdout_delta),
            it.reason[:120],
        )
    console = output.out()
    console.print(table)
    state = s.state()
    if s.ended is None and state == "running":
        from orchestrator.improve.git import cycle_running

        if not cycle_running(Path(s.repo)):  # as runs list reads it
            state = "interrupted: its process is gone (no cycle holds the repository's lock)"
    if s.stopped_because and state != s.stopped_because:
        state = f"{state}: {s.stopped_because}"
    cost = "unknown" if s.cost_usd is None else f"${s.cost_usd:.2f}"
    alpha = "" if s.alpha is None else f"; alpha {s.alpha:.4f} per iteration"
    console.print(
        f"base {s.base_commit[:10]} -> tip {s.tip_commit[:10]}; {state}"
        + (f"; {s.apply_note}" if s.apply_note else "")
    )
    console.print(f"{s.builds} builds, {s.tokens:,} tokens, cost {cost}{alpha}")
    if s.lifetime is not None:
        console.print(s.lifetime.sentence())
    console.print(f"records: {folder}")


def cycle_request(args: argparse.Namespace, max_seconds: float | None = None):
    """The CycleRequest of an improve or nightly command line."""
    from orchestrator.improve.lifetime import DEFAULT_BUDGET
    from orchestrator.improve.setup import CycleRequest
    from orchestrator.llm.client import LLMConfig

    config = build_config(args, per_build_cost=False)
    builder = config.llm
    engine = engine_config(args, config.executor, builder)
    improver = LLMConfig(
        model=args.improver_model or builder.model,
        api_base=args.improver_api_base or (None if args.improver_model else builder.api_base),
        request_timeout_s=builder.request_timeout_s,
    )
    fields = {
        "builder": builder,
        "improver": improver,
        "repeats": args.repeats,
        "jobs": args.jobs,
        "engine": engine,
        "iterations": args.iterations,
        "threshold": getattr(args, "threshold", None),
        "apply": args.apply,
        "max_seconds": max_seconds,
        "max_cost_usd": args.max_cost,
        "max_tokens": args.max_tokens,
        "lifetime_alpha": getattr(args, "lifetime_alpha", DEFAULT_BUDGET),
        "unsafe_no_sandbox": args.unsafe_no_sandbox,
        "verbose": output.verbose(),
    }
    if args.decision_rule:
        from orchestrator.improve.setup import read_rule

        fields["rule"] = read_rule(Path(args.decision_rule))
    if args.survey_repeats:
        fields["survey_repeats"] = args.survey_repeats
    if args.matrix:
        fields["matrix"] = Path(args.matrix)
    if args.repo:
        fields["repo"] = Path(args.repo)
    return CycleRequest(**fields)


def warn_about_caps(request) -> None:
    """Say at the start when a dollar cap cannot be kept (a model's price is unknown)."""
    from orchestrator.llm.prices import cap_warning

    models = [e.model for cfg in (request.builder, request.improver) for e in cfg.endpoints()]
    warning = cap_warning(models, request.max_cost_usd, request.max_tokens)
    if warning:
        output.warn(warning)


def show_estimate(home: Home, request, as_json: bool = False) -> None:
    """What a cycle of ``request`` would build, cost and take (reads the matrix and the
    home's earlier runs; makes nothing)."""
    from orchestrator.bench.tasks import load_matrix
    from orchestrator.improve.setup import estimate_of

    estimate = estimate_of(home, request, load_matrix(request.matrix))
    if as_json:
        output.print_json(estimate.as_json())
        return
    for line in estimate.lines():
        print(line.removeprefix("estimate: "))


def improve(args: argparse.Namespace) -> int:
    """Run a cycle, or show the latest (``--status``, which only reads: a missing home is an
    error, never made). A cycle that cannot run fails before the home or a folder is made."""
    from orchestrator.improve.cycle import latest_improve_run

    home = Home.resolve(getattr(args, "home", None))
    if args.status and args.estimate:
        raise CadillacError("--status shows the latest run and --estimate a run to come: give one")
    if args.status:
        show_improve(latest_improve_run(home.check()), as_json=args.json)
        return 0
    if args.estimate:
        show_estimate(home, cycle_request(args, args.time_budget), as_json=args.json)
        return 0
    from orchestrator.improve.setup import make_cycle

    if home.root.exists():
        home.check(write=True)
    request = cycle_request(args, args.time_budget)
    warn_about_caps(request)
    cycle = make_cycle(
        home,
        request,
        on_event=None if args.json else output.err().print,
        hooks=load_hooks(args),
    )
    home.check(write=True)  # everything that can be checked was: now the home may be made
    summary = cycle.run()
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        show_improve(home.runs_dir / f"improve-{summary.id}")
    return 0
