"""``cadillac enhance`` and ``cadillac iterate``: a change to a project that exists.

Both are builds (the six phases, their checks, learning) that start from a project
instead of an empty folder; :mod:`orchestrator.loop.source` decides where the work
happens and where it goes. What is decided here: what the command line may point at (a
folder that exists, outside the home; a run that passed), and that ``--apply`` touches
the user's tree only after the build passed.

Before the run starts, the user hears what the build leaves out of the repository (it
works from HEAD: uncommitted and untracked files, submodules), and ``--apply`` is
refused when the tree could not take the change (uncommitted changes, a bare
repository), before a model call is paid for. Before the first phase the project's own
tests run once: when they already fail, the user and the model are told.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

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
        "enhance",
        "change an existing project (a git repository or a folder)",
        model_options(),
        sandbox_options(),
        verbosity_options(),
        spend_options(),
        plugin_options(),
        run=enhance,
    )
    p.add_argument("path", metavar="PATH", help="the project: a git repository or a folder")
    _change_options(p)
    p.add_argument(
        "--apply",
        action="store_true",
        help="once the build passed, bring the change into PATH (its tree must be clean)",
    )

    p = command(
        commands,
        "iterate",
        "the next version of a project cadillac built: a change to a run's result",
        model_options(),
        sandbox_options(),
        verbosity_options(),
        spend_options(),
        plugin_options(),
        run=iterate,
    )
    p.add_argument("run_id", metavar="RUN", help="a run that passed (see 'cadillac runs list')")
    _change_options(p)


def _change_options(p) -> None:
    p.add_argument("instruction", metavar="INSTRUCTION", help='e.g. "add a --json flag"')
    p.add_argument(
        "--test-cmd",
        metavar="CMD",
        help="the project's own test command (default: found in its configuration)",
    )
    p.add_argument("--json", action="store_true", help="print only the summary, as JSON")


def _instruction(args: argparse.Namespace, example: str) -> str:
    text = utf8(args.instruction, "the instruction").strip()
    if not text:
        raise UsageError(f"the instruction is empty: say what to change: {example}")
    if args.test_cmd is not None and not utf8(args.test_cmd, "--test-cmd").strip():
        raise CadillacError("--test-cmd is empty: give the command that runs the tests")
    return text


def enhance(args: argparse.Namespace) -> int:
    from orchestrator.cli.build import run_resumably
    from orchestrator.loop import source as sources
    from orchestrator.loop.agent import Builder

    instruction = _instruction(args, 'cadillac enhance . "add a --json flag"')
    path = Path(utf8(args.path, "PATH")).expanduser()
    if not path.is_dir() or path.is_symlink():
        raise CadillacError(f"{path} is not a folder: give the project's folder")
    path = path.resolve()
    config = build_config(args)
    Builder.preflight(config)
    warn_unused_api_base(args, config)
    home = Home.resolve(getattr(args, "home", None))
    if home.root.resolve().is_relative_to(path):
        raise CadillacError(
            f"the cadillac home {home.root} is inside {path}, so its runs would land in the "
            "project: give --home (or CADILLAC_HOME) a folder outside it"
        )
    hooks = load_hooks(args)
    home.check(write=True)
    state = sources.survey(path)
    if args.apply:
        _can_apply(state)
    for note in state.notes():
        output.warn(note)
    builder = Builder.enhance(
        home, config, instruction, path, test_command=args.test_cmd, hooks=hooks
    )
    stopped = _baseline_tests(builder, args)
    if stopped is not None:
        return stopped
    status = run_resumably(builder, args, home)
    _report(builder, args)
    if args.apply:
        if builder.summary.status != "passed":
            output.err().print("not applied: the build did not pass")
            return status
        done = sources.apply(builder.source, builder.run.workspace, builder.run.patch_path)
        builder.summary.applied = done
        builder.run.save_summary(builder.summary)
        output.err().print(done)
    return status


def iterate(args: argparse.Namespace) -> int:
    from orchestrator.cli.build import run_resumably
    from orchestrator.loop.agent import Builder
    from orchestrator.loop.runs import Run

    run_id = utf8(args.run_id, "RUN").strip()
    if not run_id:
        raise CadillacError("the run id is empty: give one from 'cadillac runs list'")
    instruction = _instruction(args, f'cadillac iterate {run_id} "add a --json flag"')
    home = Home.resolve(getattr(args, "home", None)).check()
    parent = Run.open(home.runs_dir, run_id)
    summary = parent.summary()
    if summary is None or summary.status != "passed":
        status = "not ended" if summary is None else summary.status
        raise CadillacError(
            f"run {run_id} did not pass ({status}): iterate continues a passed run "
            f"(resume it with 'cadillac build --resume {run_id}')"
        )
    if not parent.workspace.is_dir() or parent.workspace.is_symlink():
        raise CadillacError(f"run {run_id} has no workspace folder to continue from")
    config = build_config(args)
    Builder.preflight(config)
    warn_unused_api_base(args, config)
    hooks = load_hooks(args)
    home.check(write=True)
    builder = Builder.enhance(
        home,
        config,
        instruction,
        parent.workspace,
        test_command=args.test_cmd,
        parent=run_id,
        hooks=hooks,
    )
    stopped = _baseline_tests(builder, args)
    if stopped is not None:
        return stopped
    status = run_resumably(builder, args, home)
    _report(builder, args)
    return status


def _can_apply(state) -> None:
    """Refuse ``--apply`` now, before the build is paid for, when its end would."""
    if state.kind == "bare":
        raise CadillacError(
            f"{state.path} is a bare repository: there is no tree to apply the change to; "
            "leave out --apply (the change goes on a new branch in it)"
        )
    if state.uncommitted:
        raise CadillacError(
            f"{state.path} has uncommitted changes ({', '.join(state.uncommitted[:5])}"
            f"{' ...' if len(state.uncommitted) > 5 else ''}): --apply needs a clean tree, "
            "so commit or stash them first"
        )


def _baseline_tests(builder, args: argparse.Namespace) -> int | None:
    """Install the project and run its own tests once before the first phase, and say
    what already fails (:meth:`~orchestrator.loop.agent.Builder.baseline_tests`). Stopped
    there by Ctrl-C, the run is removed: nothing was asked of a model yet. When the tests
    cannot run at all, the run ends failed and its exit status (1) is returned, after one
    line (and, with --json, the summary); None otherwise."""
    from orchestrator.loop import source as sources
    from orchestrator.loop.project import SuiteCannotRun

    command = builder.record.baseline.test_command if builder.record.baseline else None
    if not command:
        return None
    output.err().print(
        f"installing the project and running its own tests once, as they are: {command}",
        markup=False,
        soft_wrap=True,
    )
    try:
        failing = builder.baseline_tests()
    except KeyboardInterrupt:
        sources.discard(builder.source, builder.run.workspace)
        shutil.rmtree(builder.run.dir, ignore_errors=True)
        raise
    except SuiteCannotRun as exc:
        print(f"cadillac: error: {exc} (run {builder.run.id}; no model was asked)", file=sys.stderr)
        if args.json:
            print(builder.summary.model_dump_json(indent=2))
        return 1
    results = builder.baseline.results if builder.baseline else None
    if results is not None and results.readable:
        output.err().print(
            f"the project's own tests as they are: {results.counts()} "
            f"({results.report} report, {results.seconds:.1f} s)",
            markup=False,
            soft_wrap=True,
        )
    elif results is not None:
        output.warn(
            f"`{command}` reports no per-test results cadillac can read: its exit status "
            "decides whether a change keeps the suite passing"
        )
    if failing:
        lines = failing.splitlines()
        last = f" ({lines[-1].strip()[:200]})" if len(lines) > 1 else ""
        output.warn(f"the project's own tests already fail before any change: {lines[0]}{last}")
    return None


def _report(builder, args: argparse.Namespace) -> None:
    if args.json:
        return
    s, source = builder.summary, builder.source
    where = f"{source.path} on branch {source.branch}" if source.kind == "git" else source.path
    changed = ", ".join(s.changed) if s.changed else "nothing yet"
    output.out().print(
        f"change to {where}: {changed}\npatch: {builder.run.patch_path}"
        + (f"\nskipped while copying: {'; '.join(source.skipped[:5])}" if source.skipped else "")
    )
