"""The Go, Rust and Node tasks of the default matrix: correct projects get full marks, wrong
ones do not.

Each folder under ``tests/fixtures/stack_refs/`` is a small correct solution of the matrix
task of its name, with the plan.json a build of it would write. The hidden checks of these
tasks build the artifact themselves (``go build``, ``cargo build --offline``, nothing for
Node) and drive it from outside: argv, stdin and exit status, or a service started with
``PORT`` and spoken to over HTTP. So a reference scored by the real judge, as a build's
workspace is, must pass every check; a project holding only its plan must pass none; and
one deliberately wrong variant per stack must lose marks, so the checks can fail. The
references' plans choose their stack's profile only (no Python check), and their own tests
pass and are counted by that profile's test runner.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from orchestrator.bench.scoring import Score, score_build
from orchestrator.bench.story_checks import has_stories
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
from orchestrator.sandbox.executor import ExecConfig
from phases.base import PhaseContext, load_plan
from phases.stacks import check_code, run_tests, stacks_of
from tests.support import phase_context

pytestmark = pytest.mark.e2e  # go, cargo and node, for real: left out of `make test-fast`

REFS = Path(__file__).resolve().parents[2] / "fixtures" / "stack_refs"
STACKS = ("go", "rust", "node")
TASKS = {t.id: t for t in load_matrix(DEFAULT_MATRIX)}
STACK_OF = {
    i: s for i, t in TASKS.items() for s in STACKS if s in t.tags and not has_stories(t.dir)
}  # the tasks checked by stories have theirs in test_story_refs.py
BROKEN = {
    # stack: (task, file, the correct text, the wrong one, a check that must now fail)
    "go": ("go-wc-cli", "main.go", "status = 1", "status = 0",
           "test_a_missing_file_is_reported_and_the_rest_counted"),
    "rust": ("rust-roman-cli", "src/main.rs", "ExitCode::from(2)", "ExitCode::from(1)",
             "test_a_missing_or_unknown_command_is_a_usage_error"),
    "node": ("node-kv-http", "server.js", "done.created ? 201 : 200", "200",
             "test_put_creates_then_replaces_with_versions_and_etags"),
}  # fmt: skip


@pytest.fixture
def cache(shared_cache: Path) -> Path:
    """The worker's one venv template (a module's own would be made again each time the
    scheduler comes back to the module)."""
    return shared_cache


def scored(task_id: str, ws: Path, where: Path, cache: Path) -> Score:
    return score_build(TASKS[task_id], ws, where / "scoring", ExecConfig(), cache)


def one_go_cache(ctx: PhaseContext) -> PhaseContext:
    """``ctx`` with Go's build cache in the workspace, not in each command's fresh ``/tmp``:
    ``go vet``, ``go build`` and ``go test`` then compile the standard library once, not
    three times (cargo's ``target/`` is in the workspace already)."""
    run, cache = ctx.run, ctx.workspace.root / ".gopath" / "go-build"

    def cached(command, timeout_s=None, install=None):
        return run(f"export GOCACHE={cache} && {command}", timeout_s=timeout_s, install=install)

    return dataclasses.replace(ctx, run=cached)


def copy_of(task_id: str, where: Path) -> Path:
    ws = where / "workspace"
    shutil.copytree(REFS / task_id, ws)
    return ws


def test_every_stack_has_tasks_of_both_splits_and_each_task_a_reference():
    assert sorted(STACK_OF) == sorted(p.name for p in REFS.iterdir())
    for stack in STACKS:
        splits = [TASKS[i].split for i, s in STACK_OF.items() if s == stack]
        assert len(splits) >= 3 and {"train", "holdout"} <= set(splits), stack


@pytest.mark.parametrize("task_id", sorted(STACK_OF))
def test_the_plan_chooses_its_stack_and_the_references_own_tests_pass(task_id, tmp_path):
    ctx = one_go_cache(phase_context(copy_of(task_id, tmp_path)))
    plan = ctx.plan()
    assert load_plan(ctx.workspace.root) == plan and plan.dependencies == []
    assert all((ctx.workspace.root / f).is_file() for f in plan.files)
    assert [(s.name, s.root) for s in stacks_of(ctx, plan)] == [(STACK_OF[task_id], ".")]
    assert check_code(ctx, plan) is None
    assert run_tests(ctx, plan.test_command) is None


@pytest.mark.parametrize("task_id", sorted(STACK_OF))
def test_the_reference_passes_every_hidden_check(task_id, tmp_path, cache):
    score = scored(task_id, copy_of(task_id, tmp_path), tmp_path, cache)
    assert (score.verdict, score.score) == ("scored", 1.0), score
    assert score.total == score.passed > 0


@pytest.mark.parametrize("task_id", sorted(STACK_OF))
def test_a_project_of_only_a_plan_scores_zero(task_id, tmp_path, cache):
    ws = tmp_path / "workspace"
    ws.mkdir()
    plan = {
        "summary": task_id,
        "stack": [STACK_OF[task_id]],
        "files": ["plan.json"],
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    score = scored(task_id, ws, tmp_path, cache)
    assert (score.verdict, score.passed, score.score) == ("scored", 0, 0.0), score
    assert score.total > 0


@pytest.mark.parametrize("stack", STACKS)
def test_a_wrong_variant_loses_the_checks_it_breaks(stack, tmp_path, cache):
    task_id, name, right, wrong, check = BROKEN[stack]
    ws = copy_of(task_id, tmp_path)
    source = (ws / name).read_text()
    assert source.count(right) == 1, f"{name} no longer holds {right!r}"
    (ws / name).write_text(source.replace(right, wrong))
    score = scored(task_id, ws, tmp_path, cache)
    assert score.verdict == "scored" and 0 < score.score < 1, score
    assert f"::{check}:" in score.failures, score.failures
