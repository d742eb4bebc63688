"""Per stack, a scripted build's wall time and where it goes, with empty caches and warm ones.

A build's time after the model wrote its code goes to the deps phase (making the
project's ``.venv`` from the cache's template, which every stack gets, then cadillac's
install commands: ``pip``, ``npm``, ``cargo fetch``, ``go mod download``), the build's
code checks (compile, type-check, vet, bundle), the test command (build and validate each
run it), the smoke run (integrate and validate), the stories and the artifact built for
them (integrate and validate, once they run there: any other command of those phases),
and cadillac's own work on the host between commands. This takes a clean twin of the
gate set (``tests/fixtures/gate``, :mod:`gate_truth`) for each stack and runs it through
the install and the real phase checks, timing every command the checks run (the runner
is wrapped), three times:

* ``cold``: a fresh cache folder (the template ``.venv``) and a fresh copy of the project;
* ``new project``: a fresh copy of the project, the cache the first run made;
* ``same project``: the first run's folder again (its ``node_modules``, ``target``,
  ``.cargo-home``, ``.gopath``), as a phase's second check meets it.

Commands run in the sandbox with a private ``HOME`` each, so what a toolchain caches
under ``HOME`` (npm's download cache, Go's build cache) is never kept between commands:
what is warm is only what lives in the project folder or cadillac's cache folder.

Prints a table; asserts nothing but that each twin passes.

    .venv/bin/python benchmarks/stack_times.py [--stacks python,node,go,rust[,web]]

``web`` (a React + Vite page) installs its packages from the npm registry npm is set up
to use, so it runs only when named.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_truth  # noqa: E402

TWINS = {
    "python": "python_import",
    "node": "node_syntax_error",
    "go": "go_vet",
    "rust": "rust_unused_binary",
    "web": "react_missing_component",
}
"""The gate pair whose twin stands for each stack."""
TRUSTED_PATH = re.compile(r"PATH=\S+ ")
"""The host PATH an install step names first: left out of the listing."""
DEFAULT_STACKS = ("python", "node", "go", "rust")
PARTS = ("venv", "installs", "checks", "tests", "smoke run", "stories", "host")


class Timing(BaseModel):
    """One run of one stack's twin."""

    stack: str
    run: str
    seconds: float
    passed: bool
    parts: dict[str, float] = Field(default_factory=dict)
    """Seconds per part of :data:`PARTS` (``venv``: the deps phase making the project's
    ``.venv``, from the cache's template; ``host``: what no command took)."""
    commands: list[tuple[str, str, float]] = Field(default_factory=list)
    """(phase, command, seconds) of every command, in order."""


def part_of(phase: str, command: str, test_command: str, run_command: str) -> str:
    """Which part of a build's time one command of a phase's check is."""
    if phase == gate_truth.INSTALL:
        return "installs"
    if command == test_command:
        return "tests"
    if command == run_command:
        return "smoke run"
    return "checks" if phase == "build" else "stories"


def timing(stack: str, run: str, outcome, commands, plan) -> Timing:
    """A :class:`Timing` from a run's outcome and its commands: each command's seconds go to
    its part; the install phase's time outside its commands is the ``.venv``'s, and what is
    left of the whole is the host's."""
    parts = dict.fromkeys(PARTS, 0.0)
    for phase, command, seconds in commands:
        parts[part_of(phase, command, plan.test_command, plan.run_command)] += seconds
    install = outcome.phases.get(gate_truth.INSTALL, 0.0)
    parts["venv"] = max(0.0, install - parts["installs"])  # the deps phase's own .venv
    parts["host"] = max(0.0, outcome.seconds - sum(parts.values()))
    return Timing(
        stack=stack,
        run=run,
        seconds=outcome.seconds,
        passed=outcome.passed,
        parts={k: round(v, 2) for k, v in parts.items()},
        commands=[(p, c, round(s, 2)) for p, c, s in commands],
    )


def commands_into(commands: list) -> gate_truth.OnCommand:
    """An ``on_command`` that appends each (phase, command, seconds) to ``commands``."""

    def told(phase: str, command: str, seconds: float) -> None:
        commands.append((phase, command, seconds))

    return told


def measure(stack: str, scratch: Path) -> list[Timing]:
    """The three runs of ``stack``'s twin (cold, new project, same project), under
    ``scratch``."""
    from phases.base import load_plan

    source = gate_truth.FIXTURES / TWINS[stack] / "twin"
    plan = load_plan(source)
    cache = scratch / stack / "cache"
    first = scratch / stack / "first"
    runs = []
    for run, copy_to in (
        ("cold", first),
        ("new project", scratch / stack / "second"),
        ("same project", None),
    ):
        commands: list[tuple[str, str, float]] = []
        told = commands_into(commands)
        if copy_to is None:
            outcome = gate_truth.check_project(first, cache, on_command=told)
        else:
            outcome = gate_truth.run_project(source, copy_to, cache, on_command=told)
        runs.append(timing(stack, run, outcome, commands, plan))
    return runs


def table(timings: list[Timing]) -> str:
    head = "| stack | run | total s | " + " | ".join(PARTS) + " | twin passed |"
    rows = [head, "|" + " --- |" * (len(PARTS) + 4)]
    for t in timings:
        parts = " | ".join(f"{t.parts[p]:.1f}" for p in PARTS)
        rows.append(
            f"| {t.stack} | {t.run} | {t.seconds:.1f} | {parts} | {'yes' if t.passed else 'NO'} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", default=",".join(DEFAULT_STACKS))
    parser.add_argument("--commands", action="store_true", help="also list every command")
    args = parser.parse_args(argv)
    stacks = [s for s in args.stacks.split(",") if s]
    unknown = [s for s in stacks if s not in TWINS]
    if unknown:
        parser.error(f"no such stack: {', '.join(unknown)} (the stacks: {', '.join(TWINS)})")
    timings: list[Timing] = []
    with tempfile.TemporaryDirectory(prefix="cadillac-stack-times-") as scratch:
        for stack in stacks:
            start = time.perf_counter()
            timings += measure(stack, Path(scratch))
            print(f"{stack}: {time.perf_counter() - start:.1f}s", file=sys.stderr)
    print(table(timings))
    if args.commands:
        for t in timings:
            print(f"\n{t.stack}, {t.run}:")
            for phase, command, seconds in t.commands:
                shown = TRUSTED_PATH.sub("", command)[:100]
                print(f"  {seconds:7.2f}s  {phase:9} {shown}")
    return 0 if all(t.passed for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
