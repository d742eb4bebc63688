"""What each language's extractor finds in the fixture tree's files."""

from __future__ import annotations

import time

from orchestrator.index.extract import extract
from orchestrator.index.rust_paths import expand_use
from tests.orchestrator.index.conftest import FIXTURE


def _symbols(rel: str):
    record, symbols = extract(rel, (FIXTURE / rel).read_bytes())
    return record, [(s.kind, s.name, s.parent, s.start_line, s.end_line) for s in symbols], symbols


def _by_name(symbols, name, parent=None):
    return next(s for s in symbols if s.name == name and s.parent == parent)


def test_python_module_classes_methods_and_functions():
    record, found, symbols = _symbols("src/shop/models.py")
    assert found == [
        ("module", "shop.models", None, 1, 32),
        ("class", "Item", None, 6, 11),
        ("class", "Cart", None, 14, 28),
        ("method", "add", "Cart", 20, 22),
        ("method", "count", "Cart", 24, 28),
        ("function", "empty_cart", None, 31, 32),
    ]
    assert record.language == "python" and record.lines == 32 and not record.parse_errors
    assert record.doc == "The records of the shop: items and carts."
    cart = _by_name(symbols, "Cart")
    add = _by_name(symbols, "add", "Cart")
    count = _by_name(symbols, "count", "Cart")
    assert cart.signature == "class Cart:" and cart.doc == "Items a customer means to buy."
    assert add.signature == "def add(self, item: Item) -> None:"
    assert add.doc == "Put an item in the cart."
    assert count.signature == "def count( self, name: str | None = None, ) -> int:"
    assert count.doc == ""


def test_python_imports_keep_modules_names_and_levels():
    record, _, _ = _symbols("src/shop/cli.py")
    assert [(i.module, i.names, i.level) for i in record.imports] == [
        ("sys", [], 0),
        ("shop.models", ["Item", "empty_cart"], 0),
        ("shop.pricing", ["total"], 0),
    ]
    assert record.facts is not None and record.facts.main
    relative, _, _ = _symbols("src/shop/pricing.py")
    assert [(i.module, i.names, i.level) for i in relative.imports] == [("models", ["Cart"], 1)]


def test_a_python_file_with_a_syntax_error_still_gives_what_parses():
    record, found, symbols = _symbols("src/shop/broken.py")
    assert record.parse_errors
    assert ("function", "fine", None, 4, 6) in found
    assert _by_name(symbols, "fine").doc == "This one parses."


def test_typescript_declarations_methods_doc_comments_and_imports():
    record, found, symbols = _symbols("web/src/cart.ts")
    assert found == [
        ("class", "CartView", None, 7, 13),
        ("method", "add", "CartView", 10, 12),
        ("function", "render", None, 16, 18),
        ("type", "Currency", None, 20, 20),
        ("enum", "Size", None, 22, 25),
        ("constant", "MAX_ITEMS", None, 27, 27),
    ]
    assert _by_name(symbols, "CartView").doc == "How a cart is shown."
    assert _by_name(symbols, "CartView").signature == "export class CartView"
    render = _by_name(symbols, "render")
    assert render.doc == "Draw the cart as text."
    assert render.signature == "export function render(view: CartView): string"
    assert [i.module for i in record.imports] == ["./item", "./format.js"]
    _, interfaces, _ = _symbols("web/src/item.ts")
    assert interfaces == [("interface", "Item", None, 2, 5)]


def test_javascript_functions_and_requires():
    record, found, symbols = _symbols("web/src/format.js")
    assert found == [("function", "money", None, 2, 4)]
    assert symbols[0].doc == "Money as text."
    index, found, _ = _symbols("web/src/index.js")
    assert found == [("function", "greet", None, 4, 4)]
    assert [(i.module, i.kind) for i in index.imports] == [
        ("./format", "require"),
        ("./legacy", "require"),
    ]


def test_go_types_functions_methods_with_receivers():
    record, found, symbols = _symbols("go/store/store.go")
    assert found == [
        ("struct", "Store", None, 5, 7),
        ("interface", "Counter", None, 10, 12),
        ("constant", "MaxItems", None, 15, 15),
        ("function", "New", None, 18, 20),
        ("method", "Add", "Store", 23, 25),
        ("method", "Count", "Store", 28, 30),
    ]
    assert record.doc == "Package store keeps counts of items."
    add = _by_name(symbols, "Add", "Store")
    assert add.signature == "func (s *Store) Add(name string, n int)"
    assert add.doc == "Add puts n items of a name in the store."
    assert _by_name(symbols, "MaxItems").signature == "const MaxItems = 100"
    main, _, _ = _symbols("go/main.go")
    assert [i.module for i in main.imports] == ["fmt", "example.com/inventory/store"]
    assert main.facts is not None and main.facts.main
    library, _, _ = _symbols("go/store/store.go")
    assert library.facts is None  # a package that is not main has no entry point


def test_rust_items_impl_and_trait_methods_mods_and_uses():
    record, found, symbols = _symbols("rust/src/ledger.rs")
    assert found == [
        ("struct", "Ledger", None, 3, 5),
        ("trait", "Sum", None, 8, 10),
        ("method", "sum", "Sum", 9, 9),
        ("method", "new", "Ledger", 14, 16),
        ("method", "add", "Ledger", 18, 20),
        ("method", "sum", "Ledger", 24, 26),
    ]
    assert _by_name(symbols, "Ledger").doc == "A running list of amounts."  # past #[derive]
    assert _by_name(symbols, "new", "Ledger").signature == "pub fn new() -> Self"
    main, _, _ = _symbols("rust/src/main.rs")
    assert [(i.module, i.kind) for i in main.imports] == [
        ("ledger", "mod"),
        ("crate::ledger::Ledger", "use"),
        ("crate::ledger::Sum", "use"),
    ]
    assert main.doc == "The ledger's command line."
    assert main.facts is not None and main.facts.main


def test_rust_use_trees_are_spelled_out():
    assert expand_use("crate::a::{b, c::{D, E as F}, self}") == [
        "crate::a::b",
        "crate::a::c::D",
        "crate::a::c::E",
        "crate::a",
    ]
    assert expand_use("std::io::*") == ["std::io"]


def test_the_line_scanner_finds_ruby_and_lua_definitions():
    record, found, symbols = _symbols("scripts/deploy.rb")
    assert record.language == "ruby"
    assert found == [
        ("class", "Deployer", None, 4, 4),
        ("method", "initialize", "Deployer", 5, 5),
        ("method", "run", "Deployer", 10, 10),
    ]
    assert _by_name(symbols, "Deployer").doc == "Ships the shop to a server."
    assert _by_name(symbols, "run", "Deployer").doc == "Copy the files and restart."
    assert [(i.module, i.kind) for i in record.imports] == [("helpers", "require")]
    _, found, symbols = _symbols("scripts/tool.lua")
    assert found == [("function", "greet", None, 4, 4), ("method", "run", "M", 8, 8)]
    assert symbols[0].doc == "Say hello." and symbols[0].signature == "local function greet(name)"


def test_text_files_are_listed_without_symbols():
    for rel, language in (
        ("README.md", "markdown"),
        ("pyproject.toml", "toml"),
        ("web/package.json", "json"),
        ("docs/notes.txt", "text"),
        ("Makefile", "make"),
    ):
        record, found, _ = _symbols(rel)
        assert (record.language, found) == (language, []), rel


def test_a_long_run_of_syntax_errors_is_read_in_linear_time():
    started = time.perf_counter()  # a tree-sitter query would take over a minute on this
    record, symbols = extract("broken.py", b"import os\nx = " + b"(" * 200_000)
    assert time.perf_counter() - started < 15
    assert record.parse_errors and [i.module for i in record.imports] == ["os"]
