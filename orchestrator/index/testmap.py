"""Which files are tests, and which source files each test covers: the ``tests`` relations.

A test file is a code file named like one (``test_*.py``, ``*_test.py``, ``*_test.go``,
``*.test.ts``, ``*.spec.js`` ...) or kept in a test folder (``tests/``, ``test/``,
``__tests__/``, ``spec/``). A test covers:

* via ``import``: every non-test file it imports;
* via ``name``: the source file its name points at (``test_foo.py`` and ``foo_test.py``
  -> ``foo.py``, ``foo_test.go`` -> ``foo.go`` in the same folder, ``foo.test.ts`` ->
  ``foo.ts``). Among several files of that name, the ones whose folders best mirror the
  test's (``tests/pkg/test_foo.py`` -> ``pkg/foo.py`` or ``src/pkg/foo.py``) win.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from orchestrator.index import paths
from orchestrator.index.languages import CODE, family
from orchestrator.index.records import FileRecord, Relation

TEST_FOLDERS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing"})
TEST_SUPPORT = frozenset({"conftest", "test", "tests"})
_DOTTED = re.compile(r"^(.+?)\.(?:test|spec)\.\w+$")  # foo.test.ts, foo.spec.js
_PREFIXED = re.compile(r"^test_(.+)$")  # test_foo.py
_SUFFIXED = re.compile(r"^(.+?)_(?:test|spec)$")  # foo_test.go, foo_spec.rb
_NOT_MIRRORED = TEST_FOLDERS | {"src", "lib", "unit", "integration"}


def tested_name(path: str) -> str | None:
    """The name of the source file a test's name points at (no suffix): ``test_foo.py`` ->
    ``foo``; None when the name says nothing (``conftest.py``, ``tests/helpers.py``)."""
    name = paths.name(path)
    if match := _DOTTED.match(name):
        return match.group(1)
    stem = paths.stem(name)
    match = _PREFIXED.match(stem) or _SUFFIXED.match(stem)
    return match.group(1) if match else None


def is_test(path: str, language: str | None = None) -> bool:
    """A code file named like a test or kept in a test folder."""
    if language is not None and language not in CODE:
        return False
    if tested_name(path) or paths.stem(path) in TEST_SUPPORT:
        return True
    return any(part in TEST_FOLDERS for part in paths.folders(path))


def test_relations(files: list[FileRecord], imports: list[Relation]) -> list[Relation]:
    by_path = {f.path: f for f in files}
    tests = {f.path for f in files if is_test(f.path, f.language)}
    out = [
        Relation(kind="tests", source=r.source, target=r.target, weight=1, via="import")
        for r in imports
        if r.source in tests and r.target not in tests and by_path[r.target].language in CODE
    ]
    sources = _sources_by_name(files, tests)
    for test in sorted(tests):
        for target in _named_after(test, by_path[test].language, sources):
            out.append(Relation(kind="tests", source=test, target=target, weight=1, via="name"))
    return out


def _sources_by_name(files: list[FileRecord], tests: set[str]) -> dict:
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in files:
        if f.path not in tests and f.language in CODE:
            found[(family(f.language), paths.name(f.path).split(".", 1)[0])].append(f.path)
    return found


def _named_after(test: str, language: str, sources: dict) -> list[str]:
    name = tested_name(test)
    candidates = sources.get((family(language), name), []) if name else []
    if language == "go":
        folder = paths.parent(test)
        return [c for c in candidates if paths.parent(c) == folder]
    if len(candidates) <= 1:
        return candidates
    scores = {c: _mirror(test, c) for c in candidates}
    best = max(scores.values())
    return [c for c in candidates if scores[c] == best]


def _mirror(test: str, source: str) -> tuple[int, int]:
    """How well a source's folders mirror a test's: shared folder names from the end
    (test folders, ``src`` and ``lib`` left out), then shared leading folders."""
    a, b = _mirrored(paths.parent(test)), _mirrored(paths.parent(source))
    tail = 0
    while tail < min(len(a), len(b)) and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    return (tail + head, -abs(len(a) - len(b)))


@lru_cache(maxsize=4096)
def _mirrored(folder: str) -> tuple[str, ...]:
    return tuple(p for p in folder.split("/") if p and p not in _NOT_MIRRORED)
