"""The gate's truth (issue 23): every defective project of the gate set is refused by the
phase that must refuse it, every clean twin passes, and each defect is one its own tests and
smoke run miss; and the per-stack wall time's split (``benchmarks/stack_times.py``).

The set is ``tests/fixtures/gate``; each project goes through cadillac's install and the
real checks of build, integrate and validate (``benchmarks/gate_truth.py``, the harness
the benchmark prints its table with), in the sandbox.
No registry outside 127.0.0.1 is reached: the set's projects need no third-party package
except the React and TypeScript ones, whose installs are pointed at a closed 127.0.0.1
port here until the tests' npm registry serves them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from phases.base import load_plan
from phases.stories.schema import Stories

pytestmark = pytest.mark.e2e  # go, cargo and node, for real: left out of `make test-fast`

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_truth.py"


def _load(name: str):
    """``benchmarks/NAME.py`` as the module ``NAME`` (pydantic resolves annotations there,
    and stack_times imports gate_truth by that name)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HARNESS.with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


gate = _load("gate_truth")


def cases(variant: str) -> list:
    return [pytest.param(name, id=name) for name in gate.names()]


@pytest.fixture(autouse=True)
def closed_registries(monkeypatch, npm_registry):
    """Installs reach no registry: npm installs from the tests' registry on 127.0.0.1
    (:mod:`tests.npm_registry`), pip is pointed at a closed 127.0.0.1 port, Go's module
    proxy is off (a project of the set with no third-party package needs none)."""
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple/")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("GOPROXY", "off")


def test_the_set_spans_the_stacks_and_each_project_is_whole():
    """At least 14 pairs, in every stack; each project has a valid plan.json and
    stories.json, and each defect differs from its twin."""
    names = gate.names()
    assert len(names) >= 14, names
    assert {gate.pair_of(n).stack for n in names} >= {"python", "node", "web", "go", "rust"}
    for name in names:
        pair = gate.pair_of(name)
        assert pair.refused_by in ("build", "integrate", "validate"), name
        texts = {}
        for variant in ("defect", "twin"):
            root = gate.FIXTURES / name / variant
            load_plan(root)
            Stories.model_validate_json((root / "stories.json").read_text())
            texts[variant] = {
                p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()
            }
        assert texts["defect"] != texts["twin"], name


@pytest.mark.parametrize("name", cases("defect"))
def test_the_defect_is_refused_by_its_phase(name, tmp_path, shared_cache):
    outcome = gate.run_project(gate.FIXTURES / name / "defect", tmp_path / "p", shared_cache)
    assert outcome.installed and not outcome.passed, outcome
    pair = gate.pair_of(name)
    assert outcome.check == pair.refused_by, outcome
    assert pair.says in f"{outcome.summary}\n{outcome.details}", outcome  # for its defect


@pytest.mark.parametrize("name", cases("twin"))
def test_the_twin_passes_every_check(name, tmp_path, shared_cache):
    outcome = gate.run_project(gate.FIXTURES / name / "twin", tmp_path / "p", shared_cache)
    assert outcome.passed, outcome


@pytest.mark.parametrize("name", cases("own"))
def test_the_defects_own_tests_and_smoke_run_miss_it(name, tmp_path, shared_cache):
    """A defect the project's own tests caught would prove nothing about the gate."""
    assert gate.own_checks(gate.FIXTURES / name / "defect", tmp_path / "p", shared_cache) == []


def test_the_table_counts_the_verdicts():
    def outcome(passed: bool, check: str = "") -> object:
        return gate.Outcome(installed=True, passed=passed, check=check, summary="s", seconds=1)

    pair = gate.Pair(stack="go", defect="d", refused_by="build")
    right = gate.Verdict(name="a", pair=pair, defect=outcome(False, "build"), twin=outcome(True))
    wrong = gate.Verdict(name="b", pair=pair, defect=outcome(True), twin=outcome(False, "build"))
    unset = gate.Outcome(installed=False, passed=False, check="deps", summary="s", seconds=1)
    broken = gate.Verdict(name="c", pair=pair, defect=unset, twin=outcome(True))
    elsewhere = pair.model_copy(update={"says": "load_items"})
    other = gate.Verdict(name="d", pair=elsewhere, defect=outcome(False, "build"), twin=right.twin)
    assert [v.right for v in (right, wrong, broken, other)] == [True, False, False, False]
    shown = gate.table([right, wrong, broken])
    assert shown.endswith("1/3 defects refused, 2/3 twins passed")
    assert "| a | go | yes | yes | build: s | 2.0 |" in shown


# ------------------------------------------------------------------- per stack wall time
def test_stack_times_splits_a_builds_time_and_warm_caches_are_faster(tmp_path):
    times = _load("stack_times")
    cold, fresh, same = times.measure("python", tmp_path)
    assert [t.run for t in (cold, fresh, same)] == ["cold", "new project", "same project"]
    assert all(t.passed for t in (cold, fresh, same))
    for t in (cold, fresh, same):
        assert t.parts["checks"] > 0 and t.parts["tests"] > 0 and t.parts["smoke run"] > 0
        assert abs(sum(t.parts.values()) - t.seconds) < 0.05, t
    tests = [c for c in cold.commands if c[1] == "python -m unittest discover -s tests -t ."]
    assert [c[0] for c in tests] == ["build", "validate"]
    assert cold.parts["venv"] > 5 * fresh.parts["venv"], (cold.parts, fresh.parts)


def test_each_command_is_counted_in_its_part():
    part = _load("stack_times").part_of
    assert part("deps", "npm ci", "t", "r") == "installs"
    assert part("build", "t", "t", "r") == part("validate", "t", "t", "r") == "tests"
    assert part("integrate", "r", "t", "r") == "smoke run"
    assert part("build", "go vet ./...", "t", "r") == "checks"
    assert part("integrate", "npm run build", "t", "r") == "stories"
