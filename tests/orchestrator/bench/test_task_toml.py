"""A bad task.toml is told in full: every error pydantic finds, one line each, naming the
file and the key, in one error (issue 22 item 19), so a user fixes them all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.bench.tasks import load_matrix
from orchestrator.cli import main
from orchestrator.errors import CadillacError

BAD = 'id = "t"\nsplit = "dev"\nweight = -1\ntimeout = 60\n'
"""Four mistakes: no prompt, an unknown split, a weight below 0, an unknown key."""
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"


def bad_matrix(tmp_path: Path) -> Path:
    folder = tmp_path / "matrix" / "t"
    (folder / "acceptance").mkdir(parents=True)
    (folder / "acceptance" / "test_t.py").write_text("def test_ok():\n    pass\n")
    (folder / "task.toml").write_text(BAD)
    return tmp_path / "matrix"


def test_every_error_of_a_task_toml_is_one_line_naming_the_file(tmp_path):
    matrix = bad_matrix(tmp_path)
    toml = matrix / "t" / "task.toml"
    with pytest.raises(CadillacError) as caught:
        load_matrix(matrix)
    head, *lines = str(caught.value).splitlines()
    assert head == f"{toml}: 4 problems"
    assert all(line.startswith(f"{toml}: ") for line in lines), lines
    keys = sorted(line.removeprefix(f"{toml}: ").split(":")[0] for line in lines)
    assert keys == ["prompt", "split", "timeout", "weight"], lines
    assert any("'train' or 'holdout'" in line and "'dev'" in line for line in lines), lines


def test_a_single_error_is_one_line(tmp_path):
    matrix = bad_matrix(tmp_path)
    toml = matrix / "t" / "task.toml"
    toml.write_text('id = "t"\nprompt = "p"\nweight = 0\n')
    with pytest.raises(CadillacError) as caught:
        load_matrix(matrix)
    assert str(caught.value) == (f"{toml}: weight: Input should be greater than 0 (got 0)")


def test_the_cli_prints_them_all_without_a_traceback(tmp_path, home, capsys):
    matrix = bad_matrix(tmp_path)
    argv = ["matrix", "run", "--matrix", str(matrix), "--model", BUILDER]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("cadillac: error: ")
    assert len(err.strip().splitlines()) == 5, err
    assert not (Path(home) / "runs").exists()
