"""The enhance matrix: every task is fair, measured by the real judge against its reference.

For each task the untouched starting project (``repo/``) and the project with its
reference change (``tests/fixtures/enhance_refs/<id>/``, kept outside the matrix) are
scored as a build would be scored: a copy with a ``plan.json``, a fresh environment
holding the declared dependencies, the hidden checks in the sandbox. The untouched project
must score above 0 (the checks of existing behaviour pass) and below 1 (the change is
needed); the reference change must score exactly 1. The project's own suite must pass
before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import SOURCE_ROOT
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import MatrixTask, load_matrix
from orchestrator.sandbox.executor import ExecConfig

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ENHANCE = SOURCE_ROOT / "matrices" / "enhance"
REFS = Path(__file__).resolve().parents[2] / "fixtures" / "enhance_refs"
TASKS = {task.id: task for task in load_matrix(ENHANCE)}
TEST_COMMAND = "python -m unittest discover -s tests"


@pytest.fixture
def cache(shared_cache: Path) -> Path:
    """The worker's one venv template (a module's own would be made again each time the
    scheduler comes back to the module)."""
    return shared_cache


def requirements(project: Path) -> list[str]:
    lines = (project / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def copy_project(task: MatrixTask, dest: Path, reference: bool = False) -> Path:
    """A copy of ``repo/`` (with the reference change over it) and a plan.json, as a build
    leaves its workspace."""
    shutil.copytree(task.repo, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if reference:
        ref = REFS / task.id
        for path in sorted(ref.rglob("*")):
            if path.is_file() and path != ref / "DELETE":
                target = dest / path.relative_to(ref)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        if (ref / "DELETE").is_file():
            for line in (ref / "DELETE").read_text(encoding="utf-8").split():
                assert (dest / line).is_file(), f"{task.id}: DELETE names {line}, not in repo/"
                (dest / line).unlink()
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    plan = {
        "summary": f"the {task.id} project, {'with' if reference else 'before'} the change",
        "stack": task.tags,
        "files": files,
        "dependencies": requirements(dest),
        "test_command": TEST_COMMAND,
        "run_command": "python -m compileall -q .",
    }
    (dest / "plan.json").write_text(json.dumps(plan, indent=2), encoding="utf-8")
    return dest


def own_suite(project: Path, python: Path | str) -> str:
    """Run the project's own tests; "" when they pass, else the end of their output."""
    done = subprocess.run(
        [str(python), *TEST_COMMAND.split()[1:]],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return "" if done.returncode == 0 else (done.stdout + done.stderr)[-2000:]


def test_the_matrix_holds_the_four_kinds_of_change():
    tasks = list(TASKS.values())
    assert len(tasks) >= 4
    assert all(task.kind == "enhance" for task in tasks)
    holdout = sum(task.split == "holdout" for task in tasks)
    assert 1 <= holdout <= len(tasks) // 4 + 1
    tags = [set(task.tags) for task in tasks]
    for wanted in ({"flask", "feature"}, {"cli", "bugfix"}, {"library", "feature"}, {"refactor"}):
        assert any(wanted <= have for have in tags), wanted
    assert sorted(p.name for p in REFS.iterdir() if p.is_dir()) == sorted(TASKS)


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_each_starting_project_is_a_small_working_project(task_id):
    repo = TASKS[task_id].repo
    for name in ("README.md", "requirements.txt"):
        assert (repo / name).is_file(), name
    assert list((repo / "tests").glob("test_*.py"))
    for path in repo.rglob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 200, path
    assert "python -m unittest discover -s tests" in (repo / "README.md").read_text()


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_reference_is_not_leaked_into_the_matrix(task_id):
    ref = REFS / task_id
    in_matrix = {p.read_bytes(): p for p in ENHANCE.rglob("*") if p.is_file()}
    for path in ref.rglob("*"):
        if path.is_file():
            leaked = in_matrix.get(path.read_bytes())
            assert leaked is None, f"{path.relative_to(REFS)} is the same as {leaked}"


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_untouched_project_falls_short_and_the_reference_change_scores_1(
    task_id, tmp_path, cache
):
    task = TASKS[task_id]
    before = copy_project(task, tmp_path / "before")
    after = copy_project(task, tmp_path / "after", reference=True)

    scored = score_build(task, before, tmp_path / "scoring-before", ExecConfig(), cache)
    assert scored.verdict == "scored", scored.failures
    assert 0 < scored.score < 1, (scored.passed, scored.total, scored.failures)
    done = score_build(task, after, tmp_path / "scoring-after", ExecConfig(), cache)
    assert done.verdict == "scored", done.failures
    assert (done.passed, done.score) == (done.total, 1.0), done.failures
    assert done.total == scored.total

    # The project's own suite, before and after: with cadillac's interpreter when it needs
    # nothing beyond the standard library; else (Flask, not in cadillac's venv) with the
    # interpreter of the scorer's fresh environment, which holds what requirements.txt names.
    for project, scoring in ((before, "scoring-before"), (after, "scoring-after")):
        venv_python = tmp_path / scoring / "project" / ".venv" / "bin" / "python"
        python = venv_python if requirements(project) else sys.executable
        failed = own_suite(project, python)
        assert not failed, f"{project.name}: the project's own tests fail:\n{failed}"
