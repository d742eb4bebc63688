"""The index of a tree is never written inside it (issue 22 item 13)."""

from __future__ import annotations

import pytest

from orchestrator.cli import main


@pytest.mark.parametrize("argv", [["index", "."], ["index", "search", "greet", "--path", "."]])
def test_a_home_inside_the_tree_is_refused_and_nothing_is_written_there(
    tmp_path, monkeypatch, capsys, argv
):
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "app.py").write_text("def greet():\n    return 'hi'\n")
    monkeypatch.chdir(tree)
    monkeypatch.delenv("CADILLAC_HOME")  # the home is the current folder: the tree
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cadillac: error: the cadillac home ")
    assert "give --home (or CADILLAC_HOME) a folder outside it" in err[0]
    assert sorted(p.name for p in tree.iterdir()) == ["app.py"]


def test_a_home_outside_the_tree_indexes_it(tmp_path, home, monkeypatch, capsys):
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "app.py").write_text("def greet():\n    return 'hi'\n")
    monkeypatch.chdir(tree)
    assert main(["index", "."]) == 0
    assert sorted(p.name for p in tree.iterdir()) == ["app.py"]
    assert (home / "index").is_dir()
