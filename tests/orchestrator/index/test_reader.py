"""The reading API: search, symbols, neighbours, tests and staleness; failing open."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.index import CodeIndex, build_index


def _index(out: Path) -> CodeIndex:
    index = CodeIndex.load(out)
    assert index.problems == []
    return index


def test_search_ranks_symbols_by_name_words_and_filters_by_path(built, out):
    index = _index(out)
    top = index.search("cart total")[0]
    assert (top.kind, top.path, top.line) == ("symbol", "src/shop/pricing.py", 8)
    assert top.symbol.name == "total" and top.record is top.symbol and top.score > 0
    assert index.search("cart view")[0].symbol.name == "CartView"  # camelCase is split
    assert index.search("CartView")[0].symbol.name == "CartView"
    go_only = index.search("add", path="go/")
    assert go_only and all(h.path.startswith("go/") for h in go_only)
    assert len(index.search("cart", limit=3)) == 3
    files = [h for h in index.search("ledger", limit=10) if h.kind == "file"]
    assert files[0].path == "rust/src/ledger.rs" and files[0].record.language == "rust"
    assert index.search("") == [] and index.search("zzzunknownzzz") == []


def test_symbol_by_name_qualified_name_and_any_case(built, out):
    index = _index(out)
    assert {s.path for s in index.symbol("main")} == {
        "go/main.go",
        "rust/src/main.rs",
        "src/shop/cli.py",
    }
    assert [(s.kind, s.parent) for s in index.symbol("Cart.add")] == [("method", "Cart")]
    assert [s.path for s in index.symbol("pricing.total")] == ["src/shop/pricing.py"]
    assert [s.path for s in index.symbol("shop.pricing.total")] == ["src/shop/pricing.py"]
    assert [s.name for s in index.symbol("Ledger::new")] == ["new"]
    assert [s.name for s in index.symbol("cartview")] == ["CartView"]
    assert index.symbol("nothing_like_it") == []


def test_related_and_tests_for(built, out):
    index = _index(out)
    models = index.related("src/shop/models.py")
    assert {p for p, _ in models.imported_by} >= {"src/shop/cli.py", "src/shop/pricing.py"}
    assert ("tests/test_models.py", 2) in models.tests  # by import and by name
    pricing_test = index.related("./tests/test_pricing.py")
    assert pricing_test.covers[0] == ("src/shop/pricing.py", 2)
    assert index.tests_for("src/shop/pricing.py") == ["tests/test_pricing.py"]
    assert index.tests_for("total") == ["tests/test_pricing.py"]
    assert index.tests_for("Store") == ["go/store/store_test.go"]
    assert index.tests_for("render") == ["web/src/cart.test.ts"]
    assert index.tests_for("no_such_thing") == []


def test_an_empty_folder_answers_empty_with_a_note(tmp_path, tree):
    index = CodeIndex.load(tmp_path / "no-index")
    assert len(index.problems) == 1 and "no index" in index.problems[0]
    assert (index.files, index.symbols, index.relations, index.digest) == ([], [], [], "")
    assert index.search("cart") == [] and index.symbol("Cart") == []
    assert index.related("a.py").imports == [] and index.tests_for("a.py") == []
    assert "src/shop/models.py" in index.stale(tree)  # everything is new to no index
    assert index.stale(tmp_path / "missing") == [] and len(index.problems) == 2
    assert "stale failed" in index.problems[1]


def test_a_damaged_index_loads_what_it_can(built, out):
    with open(out / "symbols.jsonl", "a") as fh:
        fh.write('{"name": "half"\n')
    (out / "relations.jsonl").unlink()
    index = CodeIndex.load(out)
    assert index.symbol("Cart") and index.files
    assert any("1 records did not validate" in p for p in index.problems)
    assert any("relations.jsonl is missing" in p for p in index.problems)


def test_stale_notices_edits_new_files_and_files_gone(built, tree, out):
    index = _index(out)
    assert index.stale(tree) == []
    os.utime(tree / "Makefile", ns=(1, 1))  # touched, not changed: the hash says so
    assert index.stale(tree) == []
    (tree / "src" / "shop" / "pricing.py").write_text("TAX = 0.3\n")
    (tree / "new.py").write_text("x = 1\n")
    (tree / "docs" / "notes.txt").unlink()
    (tree / "more.bin").write_bytes(b"\x00\x01")  # a binary would not be indexed: not stale
    assert index.stale(tree) == ["docs/notes.txt", "new.py", "src/shop/pricing.py"]
    build_index(tree, out)
    assert CodeIndex.load(out).stale(tree) == []
