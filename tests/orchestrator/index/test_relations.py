"""Relations between files: imports resolved in the tree, tests, co-change from git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from orchestrator.index import IndexConfig, build_index
from orchestrator.index.records import FileRecord, Import
from orchestrator.index.resolve import Tree, import_relations


def _relations(out: Path, kind: str) -> set[tuple[str, str, str]]:
    rows = [json.loads(line) for line in (out / "relations.jsonl").read_text().splitlines()]
    return {(r["source"], r["target"], r["via"]) for r in rows if r["kind"] == kind}


def test_imports_resolve_to_files_of_the_tree_in_every_language(built, out):
    assert {(s, t) for s, t, _ in _relations(out, "imports")} == {
        ("go/main.go", "go/store/store.go"),  # through go.mod's module line
        ("rust/src/main.rs", "rust/src/ledger.rs"),  # mod ledger; use crate::ledger::...
        ("scripts/deploy.rb", "scripts/helpers.rb"),  # require_relative
        ("src/shop/__main__.py", "src/shop/cli.py"),
        ("src/shop/cli.py", "src/shop/models.py"),  # a src/ layout
        ("src/shop/cli.py", "src/shop/pricing.py"),
        ("src/shop/pricing.py", "src/shop/models.py"),  # from .models import Cart
        ("tests/conftest.py", "src/shop/models.py"),  # a lazy import counts
        ("tests/test_models.py", "src/shop/models.py"),
        ("tests/test_pricing.py", "src/shop/models.py"),
        ("tests/test_pricing.py", "src/shop/pricing.py"),  # from shop import pricing
        ("web/src/cart.test.ts", "web/src/cart.ts"),
        ("web/src/cart.ts", "web/src/format.js"),  # ./format.js
        ("web/src/cart.ts", "web/src/item.ts"),  # ./item, extension added
        ("web/src/index.js", "web/src/format.js"),  # require("./format")
    }


def test_tests_cover_what_they_import_and_what_they_are_named_after(built, out):
    tests = _relations(out, "tests")
    assert ("tests/test_models.py", "src/shop/models.py", "import") in tests
    assert ("tests/test_models.py", "src/shop/models.py", "name") in tests  # tests/ mirrors src/
    assert ("tests/test_pricing.py", "src/shop/pricing.py", "name") in tests
    assert ("go/store/store_test.go", "go/store/store.go", "name") in tests
    assert ("web/src/cart.test.ts", "web/src/cart.ts", "name") in tests
    assert not any(t.startswith("tests/") for _, t, _ in tests)  # a test is not a source


def _record(path: str, language: str, *imports: Import) -> FileRecord:
    blank = {"size": 0, "lines": 0, "sha256": "", "mtime_ns": 0, "parse_errors": False}
    return FileRecord(path=path, language=language, imports=list(imports), **blank)


def test_js_index_files_python_packages_and_relative_levels():
    files = [
        _record("app/main.ts", "typescript", Import(module="./lib"), Import(module="react")),
        _record("app/lib/index.ts", "typescript"),
        _record("pkg/__init__.py", "python"),
        _record("pkg/sub/__init__.py", "python"),
        _record("pkg/sub/deep.py", "python", Import(module="", names=["util"], level=2)),
        _record("pkg/util.py", "python", Import(module="pkg.sub", names=["Thing"])),
        _record("script.py", "python", Import(module="json"), Import(module="helper")),
        _record("helper.py", "python"),
    ]
    found = {(r.source, r.target) for r in import_relations(files, Tree(files))}
    assert found == {
        ("app/main.ts", "app/lib/index.ts"),
        ("pkg/sub/deep.py", "pkg/util.py"),  # from .. import util
        ("pkg/util.py", "pkg/sub/__init__.py"),  # from pkg.sub import Thing: the package
        ("script.py", "helper.py"),
    }


def _git(repo: Path, *args: str) -> None:
    ident = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "-C", str(repo), *ident, *args], check=True, capture_output=True)


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def test_cochange_comes_from_a_trusted_history_only(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n"}, "start")
    _commit(repo, {"a.py": "a = 2\n", "b.py": "b = 2\n"}, "a and b")
    _commit(repo, {"a.py": "a = 3\n", "c.py": "c = 3\n"}, "a and c")
    _commit(repo, {f"bulk{i}.py": "" for i in range(60)} | {"b.py": "", "c.py": ""}, "bulk")
    out = tmp_path / "index"
    build_index(repo, out)
    assert _relations(out, "cochange") == set()  # no history named: git is never run
    build_index(repo, out, config=IndexConfig(history=repo))
    rows = [json.loads(line) for line in (out / "relations.jsonl").read_text().splitlines()]
    cochange = [tuple(r.values())[1:] for r in rows if r["kind"] == "cochange"]
    assert cochange == [("a.py", "b.py", 2, "git"), ("a.py", "c.py", 2, "git")]  # not b-c


def test_a_history_git_cannot_read_gives_no_cochange(tree, out, tmp_path):
    not_a_repo = tmp_path / "plain"
    not_a_repo.mkdir()
    build_index(tree, out, config=IndexConfig(history=not_a_repo))
    assert _relations(out, "cochange") == set()
    build_index(tree, out, config=IndexConfig(history=tmp_path / "missing", git_timeout=0.01))
    assert _relations(out, "cochange") == set()
