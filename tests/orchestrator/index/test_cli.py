"""cadillac index on the command line: index, search and show, where the index goes, and
bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run


def test_index_prints_what_it_indexed_and_keeps_the_index_in_the_home(home, tree, capsys):
    before = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*"))
    code, out, _ = run(capsys, "index", str(tree))
    assert code == 0 and f"indexed {tree.resolve()}:" in out and "python" in out
    assert "0 reused" in out
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == before
    (folder,) = (Path(home) / "index").iterdir()
    assert folder.name.startswith("tree-") and (folder / "symbols.jsonl").is_file()

    code, out, _ = run(capsys, "index", str(tree), "--json")
    report = json.loads(out)
    assert code == 0 and report["parsed"] == 0 and report["reused"] == report["files"] > 10
    code, out, _ = run(capsys, "index", str(tree), "--full", "--json")
    assert json.loads(out)["parsed"] == report["files"]


def test_search_and_show_answer_from_the_index_of_a_path(home, tree, capsys):
    code, out, _ = run(capsys, "index", "search", "cart total", "--path", str(tree), "--json")
    hits = json.loads(out)
    assert code == 0 and hits and all(h["kind"] in ("symbol", "file") for h in hits)
    code, out, _ = run(capsys, "index", "search", "cart", "--path", str(tree))
    assert code == 0 and "match(es) for 'cart'" in out
    name = next(h["symbol"]["name"] for h in hits if h["kind"] == "symbol")
    code, out, _ = run(capsys, "index", "show", name, "--path", str(tree), "--json")
    shown = json.loads(out)
    assert code == 0 and shown[0]["name"] == name and shown[0]["start_line"] >= 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["index", "/nonexistent-tree"], "is not a folder"),
        (["index", "search"], "index search needs words to search for"),
        (["index", "show", "  "], "index show needs a symbol name"),
        (["index", ".", "extra"], "takes one folder"),
        (["index", "show", "x", "--path", "/nonexistent-tree"], "is not a folder"),
    ],
)
def test_bad_input_is_one_line(home, capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert code == 1 and err.count("\n") == 1 and says in err, err
    assert not (Path(home) / "index").exists()


def test_show_of_an_unknown_symbol_says_so(home, tree, capsys):
    code, _, err = run(capsys, "index", "show", "no_such_symbol_anywhere", "--path", str(tree))
    assert code == 1 and "no symbol named 'no_such_symbol_anywhere'" in err
