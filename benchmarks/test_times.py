"""Where the test suite's time goes: the slowest tests and the total per folder.

Reads the JUnit report pytest writes (``--junitxml``); ``make test`` writes one to
``runs/test-times.xml`` on every run, so ``make test-times`` reports the last run
without running anything again. Give another report to compare with (``--before``) and
each folder's change is printed beside it, so a later change can see what it cost.

Times are the sum of each test's setup, call and teardown as pytest measured them; with
``-n auto`` they add up to more than the wall time, which the report prints too when
the suite's run record (``runs/test-times.json``) has it.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

DEFAULT_REPORT = Path("runs/test-times.xml")


def read_report(path: Path) -> dict[str, tuple[float, str]]:
    """Test id -> (seconds, outcome) from a JUnit report."""
    tests: dict[str, tuple[float, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        test_id = f"{module}.py::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        seconds = float(case.get("time") or 0.0)
        previous = tests.get(test_id, (0.0, outcome))[0]
        tests[test_id] = (previous + seconds, outcome)
    return tests


def folder_of(test_id: str, depth: int) -> str:
    parts = test_id.split("::", 1)[0].split("/")[:-1]
    return "/".join(parts[:depth]) or "."


def per_folder(tests: dict[str, tuple[float, str]], depth: int) -> dict[str, tuple[float, int]]:
    folders: dict[str, list[float]] = defaultdict(list)
    for test_id, (seconds, _) in tests.items():
        folders[folder_of(test_id, depth)].append(seconds)
    return {name: (sum(times), len(times)) for name, times in folders.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--before", type=Path, help="an earlier report to compare with")
    parser.add_argument("--top", type=int, default=20, help="how many slow tests to list")
    parser.add_argument("--depth", type=int, default=3, help="folder depth to total by")
    args = parser.parse_args(argv)
    for path in (args.report, args.before):
        if path is not None and not path.is_file():
            print(f"test-times: no JUnit report at {path} (run `make test` first)", file=sys.stderr)
            return 2
    try:
        tests = read_report(args.report)
        before = read_report(args.before) if args.before else None
    except ET.ParseError as error:
        print(f"test-times: the report is not JUnit XML: {error}", file=sys.stderr)
        return 2

    total = sum(seconds for seconds, _ in tests.values())
    outcomes: dict[str, int] = defaultdict(int)
    for _, outcome in tests.values():
        outcomes[outcome] += 1
    counts = ", ".join(f"{n} {name}" for name, n in sorted(outcomes.items()))
    print(f"{len(tests)} tests ({counts}), {total:.1f} s of test time in {args.report}")
    if before is not None:
        old = sum(seconds for seconds, _ in before.values())
        print(f"before: {len(before)} tests, {old:.1f} s in {args.before}")

    print(f"\n{args.top} slowest tests")
    slowest = sorted(tests.items(), key=lambda item: item[1][0], reverse=True)[: args.top]
    for test_id, (seconds, outcome) in slowest:
        mark = "" if outcome == "passed" else f"  [{outcome}]"
        print(f"{seconds:8.1f} s  {test_id}{mark}")

    print(f"\ntotal per folder (depth {args.depth})")
    folders = per_folder(tests, args.depth)
    old_folders = per_folder(before, args.depth) if before is not None else {}
    for name, (seconds, count) in sorted(folders.items(), key=lambda item: -item[1][0]):
        line = f"{seconds:8.1f} s  {count:5d} tests  {name}"
        if name in old_folders:
            line += f"   (before {old_folders[name][0]:.1f} s, {old_folders[name][1]} tests)"
        print(line)
    for name in sorted(set(old_folders) - set(folders)):
        print(f"     gone  {name}   (before {old_folders[name][0]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
