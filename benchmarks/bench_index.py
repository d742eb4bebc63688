"""The code index at scale: a full index of a 2,000-file Python tree, then an incremental one.

Prints figures and whether they meet the targets on the 2-core machine: a full index
<= 10 s, an incremental one after one file changed <= 0.5 s. The tree is generated in a
temporary folder: packages of modules, each with a docstring, a few classes with
methods and a few functions (one of them chosen in a module-level ``try``/``except``),
importing two or three other modules (absolute and relative), and a test file for every
tenth module.

    .venv/bin/python benchmarks/bench_index.py [--files 2000] [--packages 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.index import CodeIndex, build_index  # noqa: E402

FULL_TARGET, INCREMENTAL_TARGET = 10.0, 0.5
WORDS = (
    "cache queue parser router worker ledger invoice session token upload export report "
    "scheduler plugin widget canvas stream socket channel schema cursor pool retry config"
).split()

MODULE = '''"""The {a} {b} of package {pkg}: module {n}."""

from __future__ import annotations

import json
from {other_pkg} import {other_mod}
from .{sibling} import {sibling_class}

LIMIT = {n}

try:
    from ujson import dumps as _dumps
except ImportError:

    def _dumps(items: list[str]) -> str:
        return json.dumps(items)


class {cls}:
    """Keeps {a} records for the {b}."""

    def __init__(self, size: int = LIMIT) -> None:
        self.size = size
        self.items: list[str] = []

    def add_{a}(self, item: str) -> None:
        """Add one {a}."""
        self.items.append(item)

    def to_json(self) -> str:
        return _dumps(self.items)


class {cls}Error(Exception):
    """A {b} that went wrong."""


def load_{a}_{b}(path: str, *, strict: bool = False) -> {cls}:
    """Read a {a} {b} from a file."""
    found = {cls}()
    for line in open(path):
        found.add_{a}(line.strip())
    return found


def merge_{b}(left: {cls}, right: {sibling_class}) -> int:
    return len(left.items) + {other_mod}.LIMIT
'''

TEST = """from {pkg}.{mod} import {cls}, load_{a}_{b}


def test_{a}_{b}_starts_empty():
    assert {cls}().items == []


def test_load_{a}_{b}_reads_lines(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("a\\nb\\n")
    assert len(load_{a}_{b}(str(path)).items) == 2
"""


def generate(root: Path, files: int, packages: int, seed: int = 1) -> int:
    """Write the tree; returns the number of files written."""
    rng = random.Random(seed)
    per = max(1, files // packages)
    names = [(p, m) for p in range(packages) for m in range(per)]
    written = 0
    for p, m in names:
        folder = root / "src" / f"pkg{p}"
        folder.mkdir(parents=True, exist_ok=True)
        if m == 0:
            (folder / "__init__.py").write_text(f'"""Package {p}: {rng.choice(WORDS)}s."""\n')
            written += 1
        a, b = rng.sample(WORDS, 2)
        op, om = rng.choice(names)
        sibling = rng.randrange(per)
        text = MODULE.format(
            a=a,
            b=b,
            pkg=p,
            n=m,
            cls=f"{a.title()}{b.title()}{m}",
            other_pkg=f"pkg{op}",
            other_mod=f"mod{om}",
            sibling=f"mod{sibling}",
            sibling_class=f"Sibling{sibling}",
        )
        (folder / f"mod{m}.py").write_text(text)
        written += 1
        if m % 10 == 0 and written < files:
            tests = root / "tests" / f"pkg{p}"
            tests.mkdir(parents=True, exist_ok=True)
            cls = f"{a.title()}{b.title()}{m}"
            (tests / f"test_mod{m}.py").write_text(
                TEST.format(pkg=f"pkg{p}", mod=f"mod{m}", cls=cls, a=a, b=b)
            )
            written += 1
        if written >= files:
            break
    (root / "README.md").write_text("# Generated\n\n```sh\npytest -q\n```\n")
    return written + 1


def verdict(seconds: float, target: float) -> str:
    return f"{seconds:.2f} s (target <= {target:g} s: {'met' if seconds <= target else 'MISSED'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--packages", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3, help="incremental runs, best kept")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root, out = Path(tmp) / "tree", Path(tmp) / "index"
        t0 = time.perf_counter()
        count = generate(root, args.files, args.packages)
        print(f"tree: {count:,} files (made in {time.perf_counter() - t0:.1f} s)")

        full = build_index(root, out, full=True)
        print(
            f"full index: {verdict(full.seconds, FULL_TARGET)}; {full.files:,} files, "
            f"{full.symbols:,} symbols, {full.relations:,} relations"
        )

        times = []
        target = root / "src" / "pkg0" / "mod1.py"
        for i in range(args.repeat):
            target.write_text(target.read_text() + f"\n\ndef added_{i}() -> int:\n    return {i}\n")
            t0 = time.perf_counter()
            report = build_index(root, out)
            times.append(time.perf_counter() - t0)
            assert report.parsed == 1, report.parsed
        print(
            f"incremental index, one file changed: {verdict(min(times), INCREMENTAL_TARGET)} "
            f"(best of {len(times)}; parsed {report.parsed}, reused {report.reused:,})"
        )

        t0 = time.perf_counter()
        index = CodeIndex.load(out)
        loaded = time.perf_counter() - t0
        t0 = time.perf_counter()
        index.search("load ledger invoice")
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = index.search("parser config")
        warm = time.perf_counter() - t0
        print(
            f"load {loaded:.2f} s; first search {first:.2f} s (builds the postings), "
            f"then {warm * 1000:.1f} ms; {len(hits)} hits"
        )


if __name__ == "__main__":
    main()
