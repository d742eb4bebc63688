""".gitignore rules: git's precedence, and a hostile file held to what real ones need."""

from __future__ import annotations

import time

from orchestrator.index.ignore import MAX_RULES, ignored, spec_of, with_file


def test_the_deepest_file_and_the_last_pattern_decide():
    rules = with_file([], "", "*.log\nbuild/\n/top.txt\n")
    rules = with_file(rules, "logs/", "!keep.log\n")
    assert ignored(rules, "a/b.log", False) and ignored(rules, "x/build", True)
    assert not ignored(rules, "x/build", False)  # build/ names folders only
    assert ignored(rules, "top.txt", False) and not ignored(rules, "a/top.txt", False)
    assert not ignored(rules, "logs/keep.log", False) and ignored(rules, "logs/drop.log", False)


def test_bad_and_costly_patterns_are_dropped_not_fatal():
    spec = spec_of("\\\n[z-a]\n!\n*.tmp\n" + "a/**/b/**/b/**/b/**/c\n" + "x" * 300 + "\n")
    assert [p.pattern for p in spec.patterns] == ["*.tmp"]
    deep = "a/" + "b/" * 46 + "y"
    started = time.perf_counter()
    assert not ignored([("", spec)], deep, False)
    assert time.perf_counter() - started < 1


def test_the_patterns_above_a_path_are_bounded():
    rules = with_file([], "", "\n".join(f"name{i}" for i in range(400)))
    for depth in range(10):
        rules = with_file(rules, f"d{depth}/", "\n".join(f"n{i}" for i in range(400)))
    assert sum(len(spec.patterns) for _, spec in rules) <= MAX_RULES
