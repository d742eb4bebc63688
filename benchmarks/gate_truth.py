"""The gate's truth: every defective project of the gate set is refused, every clean twin passes.

The set is ``tests/fixtures/gate/<name>/``: a ``defect/`` project and its ``twin/``, each a
full project (``plan.json``, ``stories.json``, code, and its own tests, which pass on the
defect too: each defect is one the project's own tests and smoke run miss), and a
``gate.json`` saying the pair's stack, its defect, the phase that must refuse it and what
that phase needs that may not be on this branch yet (``storyrun``: the stories run at
integrate and validate; ``browser``: a real browser drives them; ``web``: a 127.0.0.1
npm registry for the tests).

Each project is copied to a fresh folder and goes through what a build goes through after
the model wrote it: the deps phase's own check (cadillac's install steps,
:func:`orchestrator.sandbox.installs.install_steps`, run in the sandbox), then the real
checks of ``build``, ``integrate`` and ``validate`` in that order, each through
:meth:`phases.base.PlanPhase.check` and its commands run as the build loop runs them
(:func:`tests.support.phase_context`). A defect is refused when one of those three checks
fails; a twin passes when all three pass. A project whose install fails is neither: the
set itself is broken, and the pair is wrong.

Prints a table (project, stack, defect refused?, twin passed?, the check that refused,
seconds) and the totals; exits 1 when any pair is wrong. Reaches the registries only in
the install steps, as a build does (a project with no third-party dependency needs none).

    .venv/bin/python benchmarks/gate_truth.py [NAME ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from phases import build, deps, integrate, validate  # noqa: E402
from phases.base import PhaseContext  # noqa: E402
from tests.support import phase_context  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "gate"
GATE = (build.PHASE, integrate.PHASE, validate.PHASE)
"""The checks a project's code must pass once it is written, in the build's order."""
INSTALL = "deps"
DETAILS = 4000

OnCommand = Callable[[str, str, float], None]
"""on_command(phase, command, seconds): told of every command a project's checks run."""


class Pair(BaseModel):
    """gate.json: what a pair of the set is."""

    model_config = ConfigDict(extra="forbid")

    stack: str
    defect: str
    """The defect, in a line."""
    refused_by: str
    """The phase whose check must refuse it."""
    says: str = ""
    """What its refusal must say (its summary or details), where that is known here."""
    needs: list[str] = Field(default_factory=list)
    """What that check needs that may be missing on a branch: storyrun, browser, web."""


class Outcome(BaseModel):
    """One project through the install and the gate's checks."""

    installed: bool
    passed: bool
    """Every check of :data:`GATE` passed."""
    check: str = ""
    """The phase whose check failed (``deps`` when the install did); "" when all passed."""
    summary: str
    details: str = ""
    """The failed check's details, cut to :data:`DETAILS`."""
    seconds: float
    phases: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase, the install (``deps``) included."""


class Verdict(BaseModel):
    """A pair: its defect refused by a gate check, its twin passing every one."""

    name: str
    pair: Pair
    defect: Outcome
    twin: Outcome

    @property
    def refused(self) -> bool:
        """Refused by a check of the gate, saying what the pair says it must."""
        said = f"{self.defect.summary}\n{self.defect.details}"
        return self.defect.installed and not self.defect.passed and self.pair.says in said

    @property
    def twin_passed(self) -> bool:
        return self.twin.passed

    @property
    def right(self) -> bool:
        return self.refused and self.twin_passed


def names() -> list[str]:
    """Every pair of the set, by name."""
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "gate.json").is_file())


def pair_of(name: str) -> Pair:
    return Pair.model_validate_json((FIXTURES / name / "gate.json").read_text())


def timed_context(ws: Path, cache: Path | None, on_command: OnCommand | None, phase: list[str]):
    """:func:`tests.support.phase_context` for ``ws``, its runner wrapped to tell
    ``on_command`` of each command (under the phase named in ``phase[0]``)."""
    ctx: PhaseContext = phase_context(ws, cache)
    if on_command is None:
        return ctx
    inner = ctx.run

    def run(command, timeout_s=None, install=None, **shown):
        start = time.perf_counter()
        try:
            return inner(command, timeout_s=timeout_s, install=install, **shown)
        finally:
            on_command(phase[0], command, time.perf_counter() - start)

    ctx.run = run
    return ctx


def check_project(ws: Path, cache: Path | None, on_command: OnCommand | None = None) -> Outcome:
    """Install the project at ``ws`` as the deps phase does, then run the gate's checks in
    order; the first failure stops it."""
    phase = [INSTALL]
    ctx = timed_context(ws, cache, on_command, phase)
    spent: dict[str, float] = {}
    start = time.perf_counter()
    for step in (deps.PHASE, *GATE):
        phase[0] = step.name
        began = time.perf_counter()
        result = step.check(ctx)
        spent[step.name] = round(time.perf_counter() - began, 2)
        if not result.passed:
            return Outcome(
                installed=step is not deps.PHASE,
                passed=False,
                check=step.name,
                summary=result.summary,
                details=result.details[:DETAILS],
                seconds=round(time.perf_counter() - start, 2),
                phases=spent,
            )
    return Outcome(
        installed=True,
        passed=True,
        summary="every check passed",
        seconds=round(time.perf_counter() - start, 2),
        phases=spent,
    )


def run_project(source: Path, work: Path, cache: Path | None, **kw) -> Outcome:
    """:func:`check_project` on a fresh copy of ``source`` made at ``work``."""
    shutil.copytree(source, work, symlinks=True)
    return check_project(work, cache, **kw)


def run_pair(name: str, work: Path, cache: Path | None) -> Verdict:
    """Both projects of pair ``name``, each in its own fresh folder under ``work``."""
    folder = FIXTURES / name
    return Verdict(
        name=name,
        pair=pair_of(name),
        defect=run_project(folder / "defect", work / name / "defect", cache),
        twin=run_project(folder / "twin", work / name / "twin", cache),
    )


def own_checks(source: Path, work: Path, cache: Path | None) -> list[str]:
    """What the project's own test command and smoke run say of a fresh copy of ``source``
    made at ``work``, once installed: [] when both exit 0 (a defect of the set must be one
    they miss), else one line for each that failed (or for the install)."""
    shutil.copytree(source, work, symlinks=True)
    ctx = phase_context(work, cache)
    installed = deps.PHASE.check(ctx)
    if not installed.passed:
        return [f"the install failed: {installed.summary}"]
    plan = ctx.plan()
    failed = []
    for what, command in (("test command", plan.test_command), ("smoke run", plan.run_command)):
        result = ctx.run(command, timeout_s=600)
        if not result.ok:
            failed.append(f"its {what} `{command}` failed: {result.output[-300:]}")
    return failed


def _said(outcome: Outcome) -> str:
    if outcome.passed:
        return "-"
    return f"{outcome.check}: {outcome.summary}".replace("\n", " ").replace("|", "/")[:90]


def table(verdicts: list[Verdict]) -> str:
    """The markdown table of the verdicts, and the totals."""
    rows = [
        "| project | stack | defect refused? | twin passed? | which check (defect; twin) | "
        "seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for v in verdicts:
        twin = "" if v.twin_passed else f"; twin {_said(v.twin)}"
        rows.append(
            f"| {v.name} | {v.pair.stack} | {'yes' if v.refused else 'NO'} | "
            f"{'yes' if v.twin_passed else 'NO'} | {_said(v.defect)}{twin} | "
            f"{v.defect.seconds + v.twin.seconds:.1f} |"
        )
    n = len(verdicts)
    refused = sum(v.refused for v in verdicts)
    passed = sum(v.twin_passed for v in verdicts)
    rows.append("")
    rows.append(f"{refused}/{n} defects refused, {passed}/{n} twins passed")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="pairs to run (default: all)")
    parser.add_argument("--cache", type=Path, help="the template cache (default: a fresh one)")
    parser.add_argument("--json", type=Path, help="also write the verdicts here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(names()))
    if unknown:
        parser.error(f"no such pair: {', '.join(unknown)} (the set: {', '.join(names())})")
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="cadillac-gate-") as scratch:
        cache = args.cache or Path(scratch, "cache")
        for name in args.names or names():
            verdicts.append(run_pair(name, Path(scratch, "work"), cache))
            print(f"{name}: {'right' if verdicts[-1].right else 'WRONG'}", file=sys.stderr)
    print(table(verdicts))
    if args.json:
        args.json.write_text(json.dumps([v.model_dump() for v in verdicts], indent=2) + "\n")
    return 0 if all(v.right for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
