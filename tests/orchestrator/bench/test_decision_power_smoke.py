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
    rows = re.findall(r"^ *\+0\.(\d) +(\d+) +[+-]\d\.\d{3} +\d+\.\d% ", out, flags=re.M)
    assert rows == [(d, k) for d in "123" for k in ("1", "2", "4", "8", "16")]
    assert "lowest power where 4 or more tasks move: +0.1" in out
    assert "builds of the iteration after an accept" in out
