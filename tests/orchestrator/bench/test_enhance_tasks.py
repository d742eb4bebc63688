"""Enhance tasks in a matrix: the loader holds the two kinds of task apart by repo/."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.bench.tasks import load_matrix
from orchestrator.errors import CadillacError


def task_folder(matrix: Path, toml: str, name: str = "t") -> Path:
    folder = matrix / name
    (folder / "acceptance").mkdir(parents=True)
    (folder / "acceptance" / "test_t.py").write_text("def test_ok():\n    pass\n")
    (folder / "task.toml").write_text(f'id = "{name}"\nprompt = "Change it"\n{toml}')
    return folder


def test_an_enhance_task_has_its_starting_project_in_repo(tmp_path):
    folder = task_folder(tmp_path, 'kind = "enhance"\n')
    (folder / "repo" / "pkg").mkdir(parents=True)
    (folder / "repo" / "pkg" / "mod.py").write_text("X = 1\n")
    (task,) = load_matrix(tmp_path)
    assert task.kind == "enhance"
    assert task.repo == folder / "repo"
    assert (task.repo / "pkg" / "mod.py").read_text() == "X = 1\n"


def test_a_task_is_a_build_task_unless_it_says_otherwise(tmp_path):
    task_folder(tmp_path, "")
    (task,) = load_matrix(tmp_path)
    assert task.kind == "build" and not task.repo.exists()


def test_an_enhance_task_without_a_starting_project_is_an_error(tmp_path):
    folder = task_folder(tmp_path, 'kind = "enhance"\n')
    with pytest.raises(CadillacError, match="an enhance task needs repo/") as caught:
        load_matrix(tmp_path)
    assert str(folder) in str(caught.value)
    (folder / "repo" / "empty").mkdir(parents=True)  # folders, but not one file
    with pytest.raises(CadillacError, match="an enhance task needs repo/ with the starting"):
        load_matrix(tmp_path)
    (folder / "repo" / "empty" / "main.py").write_text("")
    assert load_matrix(tmp_path)[0].kind == "enhance"


def test_a_build_task_with_a_repo_is_an_error_that_says_to_set_the_kind(tmp_path):
    folder = task_folder(tmp_path, "")
    (folder / "repo").mkdir()
    (folder / "repo" / "app.py").write_text("")
    with pytest.raises(CadillacError, match='set kind = "enhance"') as caught:
        load_matrix(tmp_path)
    assert str(folder) in str(caught.value)
    (folder / "task.toml").write_text('id = "t"\nprompt = "p"\nkind = "build"\n')
    with pytest.raises(CadillacError, match="has no repo/"):
        load_matrix(tmp_path)


def test_an_unknown_kind_names_the_task_file(tmp_path):
    task_folder(tmp_path, 'kind = "patch"\n')
    with pytest.raises(CadillacError, match=r"t[/\\]task.toml"):
        load_matrix(tmp_path)


def test_without_the_checks_an_enhance_task_still_needs_its_repo(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "task.toml").write_text('id = "t"\nprompt = "p"\nkind = "enhance"\n')
    with pytest.raises(CadillacError, match="an enhance task needs repo/"):
        load_matrix(tmp_path, require_checks=False)
    (folder / "repo").mkdir()
    (folder / "repo" / "README.md").write_text("# t\n")
    assert load_matrix(tmp_path, require_checks=False)[0].repo == folder / "repo"
