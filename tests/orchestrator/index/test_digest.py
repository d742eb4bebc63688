"""digest.md: one screen that says how the fixture project is laid out and run."""

from __future__ import annotations

from orchestrator.index.digest import MAX_CHARS, MAX_LINES, digest
from orchestrator.index.records import Facts, FileRecord


def test_the_digest_names_languages_entry_points_folders_tests_and_commands(built, out):
    text = (out / "digest.md").read_text()
    assert text.startswith("# tree\nShop: a small store in several languages\n")
    assert "Languages: python 9," in text and "typescript 3" in text
    for entry in (
        "`python -m shop` (`src/shop/__main__.py`)",
        '`src/shop/cli.py` (if __name__ == "__main__")',
        "`shop -> shop.cli:main` ([project.scripts], `pyproject.toml`)",
        "`shop-web -> bin/shop-web.js` (package.json, `web/package.json`)",
        "`go/main.go` (package main, func main)",
        "`rust/src/main.rs` (fn main)",
        "`ledger -> src/main.rs` ([[bin]], `rust/Cargo.toml`)",
    ):
        assert f"- {entry}\n" in text, entry
    for folder in (
        "- `src/shop/` (6 files): Shop: items, carts and their prices.",  # the package docstring
        "- `go/` (4 files): Go module `example.com/inventory`",
        "- `rust/` (3 files): Rust crate `ledger`",
        "- `scripts/` (3 files): about ",  # no doc: the words of its symbols' names
        "- `docs/` (1 file)\n",
    ):
        assert folder in text, folder
    assert "5 test files (pytest, cargo test, vitest, go test) in `tests/` (3)" in text
    commands = text.split("## Commands\n", 1)[1]
    assert commands.splitlines() == [
        "- `pip install -e .`",  # README code blocks first
        "- `make test`",
        "- `python -m shop --help`",
        "- `cargo build --manifest-path rust/Cargo.toml`",
        "- `make lint`",  # then the Makefile, pyproject.toml and package.json
        "- `shop`",
        "- `pytest tests`",
        "- `npm test`",
        "- `npm run build`",
    ]
    assert len(text.splitlines()) <= MAX_LINES and len(text) <= MAX_CHARS


def _file(path: str, **facts) -> FileRecord:
    blank = {"size": 1, "lines": 1, "sha256": "", "mtime_ns": 0, "parse_errors": False}
    return FileRecord(path=path, language="python", facts=Facts(**facts), **blank)


def test_a_large_project_still_fits_one_screen():
    files = [_file(f"folder{i}/m{j}.py", main=True) for i in range(40) for j in range(5)]
    files.append(_file("README.md", commands=[f"make target{i} " + "x" * 90 for i in range(40)]))
    text = digest("big", files, [(f.path, "function", "do_work") for f in files])
    assert len(text.splitlines()) <= MAX_LINES and len(text) <= MAX_CHARS
