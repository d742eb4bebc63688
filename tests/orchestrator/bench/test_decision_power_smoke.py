"""benchmarks/improve_power.py runs on the product's rule and prints every row (a smoke run:
its figures are too few to hold to the targets; README's come from the full run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "improve_power.py"


def test_the_power_benchmark_runs_quickly_and_prints_its_rows():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "26 train and 11 holdout tasks" in out and "then 5 iterations" in out
    assert re.search(r"A/A nights keeping anything: \d+\.\d% of 10 \(95% CI", out)
    assert re.search(r"builds per null iteration: \d+ \(screen / full / confirm / holdout", out)
    assert re.search(r"by the weakness's tasks: 1: \d+, 2: \d+, 4: \d+, 8: \d+, 16: \d+", out)
    assert "the weakness's: 2 per candidate build, afresh)" in out
    rows = re.findall(r"^ *\+0\.(\d) +(\d+) +[+-]\d\.\d{3} +\d+\.\d% ", out, flags=re.M)
    assert rows == [(d, k) for d in "123" for k in ("1", "2", "4", "8", "16")]
    assert "lowest power where 4 or more tasks move: +0.1" in out
    assert "builds of the iteration after an accept" in out


def test_the_benchmark_builds_the_weaknesss_baseline_afresh_as_the_cycle_does():
    """The pool never serves the weakness's tasks (their builds picked it): each look builds
    their baseline beside the candidate's, 2 a candidate build; the other tasks' come from
    the pool, only the shortfall built."""
    import importlib.util

    import numpy as np

    from orchestrator.bench.decision import DecisionConfig
    from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix

    spec = importlib.util.spec_from_file_location("improve_power", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    cfg, tasks = DecisionConfig(), load_matrix(DEFAULT_MATRIX)

    def screens(reuse_weakness: bool) -> list[int]:
        night = bench.Night(bench.Matrix(np.random.default_rng(3), tasks), 2, reuse_weakness)
        weakness = night.weakness(4)
        assert len(set(weakness)) == 4 and set(weakness) <= set(night.matrix.train)
        return [night.iteration({}, weakness, cfg, 0.01)[1]["screen"] for _ in range(2)]

    # 26 candidate builds; the weakness's 4 tasks 2 each afresh; the other 22 tasks 8 each
    # beyond the survey's 2, then none: the first iteration's builds serve the second
    assert screens(False) == [26 + 4 * 2 + 22 * 8, 26 + 4 * 2]
    assert screens(True) == [26 + 26 * 8, 26]  # what reusing them would count
