"""Search finds the definition before the tests that mention it (issue 24, item 9).

``fixtures/search_tree`` is a small shop as people write one: a package under ``src/``,
a test module per module under ``tests/`` (several tests per function, each named after
it, plus fakes and fixtures), a TypeScript module with its ``.test.ts`` and a Go package
with its ``_test.go``. Each query below is what someone looking for the code would type,
labelled with the file that answers it. On words alone the tests win: three tests named
``test_slugify_...`` outrank ``slugify``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.index import CodeIndex, build_index

TREE = Path(__file__).resolve().parent / "fixtures" / "search_tree"
PKG = "src/bookshop"

LABELLED = [
    ("apply discount coupon", f"{PKG}/pricing.py"),
    ("expired coupon", f"{PKG}/pricing.py"),
    ("tax for country", f"{PKG}/pricing.py"),
    ("hash password", f"{PKG}/auth.py"),
    ("salted password hash", f"{PKG}/auth.py"),
    ("token expired", f"{PKG}/auth.py"),
    ("load config file", f"{PKG}/config.py"),
    ("parse environment variables", f"{PKG}/config.py"),
    ("retry with backoff", f"{PKG}/retry.py"),
    ("slugify title", f"{PKG}/slugs.py"),
    ("send order receipt email", f"{PKG}/emails.py"),
    ("render email template", f"{PKG}/emails.py"),
    ("export orders to csv", f"{PKG}/export.py"),
    ("charge card payment", f"{PKG}/payments.py"),
    ("refund payment", f"{PKG}/payments.py"),
    ("cancel order", f"{PKG}/orders.py"),
    ("add book to cart", f"{PKG}/cart.py"),
    ("remove book from cart", f"{PKG}/cart.py"),
    ("search books by title", f"{PKG}/search.py"),
    ("paginate items", "web/src/paginate.ts"),
    ("token bucket rate limit", "go/ratelimit/limiter.go"),
]
"""Natural queries for code, each with the file that defines what it asks for."""

ASKING_FOR_TESTS = [
    ("tests for apply discount", "tests/test_pricing.py"),
    ("paginate test", "web/src/paginate.test.ts"),
    ("token bucket tests", "go/ratelimit/limiter_test.go"),
    ("fake payment gateway", "tests/fakes.py"),
]
"""Queries that ask for tests or test support: the test files answer them."""


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> CodeIndex:
    out = tmp_path_factory.mktemp("search") / "index"
    build_index(TREE, out)
    loaded = CodeIndex.load(out)
    assert loaded.problems == []
    return loaded


def _top(index: CodeIndex, query: str, n: int = 3) -> list[str]:
    return [hit.path for hit in index.search(query, limit=n)]


def test_the_definition_is_in_the_top_three_for_every_labelled_query(index):
    missed = {q: _top(index, q) for q, want in LABELLED if want not in _top(index, q)}
    assert missed == {}, f"{len(missed)} of {len(LABELLED)} queries missed their file"


def test_a_query_that_asks_for_tests_finds_the_test_file_first(index):
    firsts = {q: _top(index, q, 1)[0] for q, _ in ASKING_FOR_TESTS}
    assert firsts == dict(ASKING_FOR_TESTS)


def test_a_test_only_name_is_still_found(index):
    # Down-weighted, not dropped: what only the tests hold still comes back.
    assert _top(index, "test_slugify_drops_accents", 1) == ["tests/test_slugs.py"]
    assert _top(index, "drops accents", 1) == ["tests/test_slugs.py"]
