"""Every shipped task has a correct project, and the judge gives it full marks.

The hidden checks now reach a project only through the judge's proxies (a child process
that imports the project and answers in plain data), so a check the proxies could not
carry would fail an honest build. Each folder under ``tests/fixtures/judge_refs/`` is a
small correct solution of the matrix task of its name; scored by the real scorer, as a
build's workspace is, it must pass every hidden check. A task without a folder fails the
completeness test, so a new task comes with its reference.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
from orchestrator.sandbox.executor import ExecConfig

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

REFS = Path(__file__).resolve().parents[2] / "fixtures" / "judge_refs"
STACK_REFS = REFS.with_name("stack_refs")  # Go, Rust and Node tasks: test_stack_refs.py
STORY_REFS = REFS.with_name("story_refs")  # tasks checked by stories: test_story_refs.py
TASKS = {t.id: t for t in load_matrix(DEFAULT_MATRIX)}


@pytest.fixture
def cache(shared_cache: Path) -> Path:
    """The worker's one venv template (a module's own would be made again each time the
    scheduler comes back to the module)."""
    return shared_cache


def as_built(task_id: str, where: Path) -> Path:
    """The reference copied where a build leaves its workspace, with the plan.json a build
    writes (the reference's own, if it ships one) and a requirements.txt."""
    ws = where / "workspace"
    shutil.copytree(REFS / task_id, ws)
    if not (ws / "requirements.txt").exists():
        (ws / "requirements.txt").write_text("")
    if not (ws / "plan.json").exists():
        plan = {
            "summary": task_id,
            "stack": ["python"],
            "files": sorted(p.name for p in ws.iterdir()),
            "dependencies": (ws / "requirements.txt").read_text().split(),
            "test_command": "true",
            "run_command": "true",
        }
        (ws / "plan.json").write_text(json.dumps(plan))
    return ws


def test_every_shipped_task_has_a_reference():
    refs = {p.name for folder in (REFS, STACK_REFS, STORY_REFS) for p in folder.iterdir()}
    missing = sorted(set(TASKS) - refs)
    assert missing == []


@pytest.mark.parametrize("task_id", sorted(p.name for p in REFS.iterdir()))
def test_the_reference_passes_every_hidden_check(task_id, tmp_path, cache, request):
    if (REFS / task_id / "requirements.txt").is_file():  # third-party packages: the local index
        request.getfixturevalue("wheel_index")
    score = score_build(TASKS[task_id], as_built(task_id, tmp_path), tmp_path / "scoring",
                        ExecConfig(), cache)  # fmt: skip
    assert (score.verdict, score.score) == ("scored", 1.0), score
    assert score.total == score.passed > 0
