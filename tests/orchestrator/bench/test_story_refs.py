"""The matrix tasks whose hidden checks are user stories (React pages, full stacks, a
TypeScript library): correct projects get full marks, wrong ones do not, and the stories'
judge counts a page that does not build as failing every story.

Each folder under ``tests/fixtures/story_refs/`` is a small correct solution of the task of
its name, with its plan.json. The scorer installs it with cadillac's own installs (npm from
the tests' registry on 127.0.0.1, Flask from the local wheel index), builds its artifact as
a user would (``npm run build``, in ``frontend/`` for a full stack), and drives it through
the task's ``acceptance/stories.json``: in a real browser for a page, over HTTP for an API,
from ``node`` for a library.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.bench.scoring import Score, score_build
from orchestrator.bench.story_checks import has_stories
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
from orchestrator.sandbox.executor import ExecConfig

pytestmark = pytest.mark.e2e  # npm, vite, tsc and Chromium, for real

REFS = Path(__file__).resolve().parents[2] / "fixtures" / "story_refs"
TASKS = {t.id: t for t in load_matrix(DEFAULT_MATRIX)}
STORY_TASKS = sorted(i for i, t in TASKS.items() if has_stories(t.dir))
WRONG = {
    # task: (file, the correct text, the wrong one, a story that must now fail)
    "react-todo": ("src/todos.js", "const text = title.trim();", "const text = title;",
                   "blank-is-ignored"),
    "ts-money": ("src/index.ts", "i < extra ? 1 : 0", "0", "split-larger-first"),
}  # fmt: skip


@pytest.fixture
def cache(shared_cache: Path) -> Path:
    """The worker's one venv template (a module's own would be made again each time the
    scheduler comes back to the module)."""
    return shared_cache


@pytest.fixture(autouse=True)
def local_registries(npm_registry, wheel_index):
    """npm and pip install from 127.0.0.1 only."""


def scored(task_id: str, ws: Path, where: Path, cache: Path) -> Score:
    return score_build(TASKS[task_id], ws, where / "scoring", ExecConfig(), cache)


def copy_of(task_id: str, where: Path) -> Path:
    ws = where / "workspace"
    shutil.copytree(REFS / task_id, ws)
    return ws


def test_the_stacks_are_covered_and_each_task_has_a_reference():
    assert sorted(p.name for p in REFS.iterdir()) == STORY_TASKS
    tags = [set(TASKS[i].tags) for i in STORY_TASKS]
    assert sum("react" in t and "fullstack" not in t for t in tags) >= 3
    assert sum("fullstack" in t for t in tags) >= 2
    assert any("typescript" in t for t in tags)
    assert {TASKS[i].split for i in STORY_TASKS} == {"train", "holdout"}


@pytest.mark.parametrize("task_id", STORY_TASKS)
def test_the_reference_passes_every_story(task_id, tmp_path, cache):
    score = scored(task_id, copy_of(task_id, tmp_path), tmp_path, cache)
    assert (score.verdict, score.score) == ("scored", 1.0), score
    assert score.total == score.passed >= 4
    shots = list((tmp_path / "scoring" / "stories").glob("*.png"))
    browsing = "web" in TASKS[task_id].tags
    assert bool(shots) == browsing, shots  # a screenshot of each browser story


@pytest.mark.parametrize("task_id", ["flask-react-notes"])
def test_a_project_holding_only_its_plan_scores_0(task_id, tmp_path, cache):
    ws = tmp_path / "workspace"
    ws.mkdir()
    shutil.copy(REFS / task_id / "plan.json", ws / "plan.json")
    score = scored(task_id, ws, tmp_path, cache)
    assert score.score == 0.0 and score.verdict in ("scored", "broken"), score


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_a_wrong_variant_loses_the_stories_it_breaks(task_id, tmp_path, cache):
    name, right, wrong, story = WRONG[task_id]
    ws = copy_of(task_id, tmp_path)
    text = (ws / name).read_text()
    assert right in text
    (ws / name).write_text(text.replace(right, wrong))
    score = scored(task_id, ws, tmp_path, cache)
    assert score.verdict == "scored" and 0 < score.score < 1, score
    assert f"story {story}" in score.failures, score.failures


def test_a_page_that_does_not_build_fails_every_story_not_the_score(tmp_path, cache):
    ws = copy_of("react-units", tmp_path)
    (ws / "src" / "App.jsx").write_text(
        'import Missing from "./Missing.jsx";\n' + (ws / "src" / "App.jsx").read_text()
    )
    score = scored("react-units", ws, tmp_path, cache)
    assert (score.verdict, score.passed) == ("scored", 0) and score.total >= 4, score
    assert "did not build" in score.failures, score.failures
