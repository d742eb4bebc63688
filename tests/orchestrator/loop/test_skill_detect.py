"""Recurring work across run folders, and the drafting call through a scripted model.

Run folders are made with the real :class:`~orchestrator.loop.runs.Run` API and real
``plan.json`` files; the drafting model answers through the real LLMClient path.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory.skills import BODY_MAX, Skill, SkillBook
from orchestrator.llm.backends import register_script
from orchestrator.llm.client import LLMClient, LLMConfig
from orchestrator.loop.runs import PhaseSummary, Run, RunSummary, TaskRecord, new_run_id
from orchestrator.loop.skills import (
    RUNS_MAX,
    Recurrence,
    check_shape,
    command_shape,
    draft_skill,
    file_category,
    find_recurrence,
    plan_steps,
)
from phases.base import Plan

FLASK_FILES = ["app.py", "templates/index.html", "tests/test_app.py", "requirements.txt"]
FLASK_TAGS = ["flask", "python"]
_ids = iter(range(10_000))


def flask_plan(**changes) -> Plan:
    fields = {
        "summary": "A Flask app",
        "stack": ["python", "flask"],
        "files": FLASK_FILES,
        "dependencies": ["flask>=3", "pytest"],
        "test_command": "python -m pytest -q",
        "run_command": "python app.py --check",
    }
    return Plan(**{**fields, **changes})


def make_run(
    runs: Path,
    task: str,
    plan: Plan | None,
    status: str = "passed",
    checks: list[tuple[str, bool, str]] = (),
    kind: str = "build",
) -> Run:
    run_id = f"{new_run_id()[:-6]}{next(_ids):06x}"  # unique and sorted by creation
    record = TaskRecord(run_id=run_id, task=task, cadillac_version="test", config={}, kind=kind)
    run = Run.create(runs, record)
    if plan is not None:
        (run.workspace / "plan.json").write_text(plan.model_dump_json(indent=2))
    for phase, passed, summary in checks:
        run.event("check", phase=phase, round=1, passed=passed, summary=summary, cited=[])
    phases = [PhaseSummary(phase=p, outcome="passed") for p in ("plan", "deps", "build")]
    run.save_summary(RunSummary(run_id=run_id, task=task, status=status, phases=phases, kind=kind))
    return run


FIXED = [
    ("build", False, "running tests `python -m pytest -q` failed: 2 failed in tests/test_app.py"),
    ("build", True, "tests pass"),
]


@pytest.fixture
def runs(home: Path) -> Path:
    (home / "runs").mkdir()
    return home / "runs"


def test_two_similar_passed_flask_builds_recur(runs):
    first = make_run(runs, "a Flask app that lists books, with tests", flask_plan(), checks=FIXED)
    flaky = [("build", False, "running tests `pytest` failed: 5 failed in tests/test_x.py")]
    now = make_run(
        runs,
        "a Flask web app for notes with a JSON API",
        flask_plan(dependencies=["Flask", "pytest"]),
        checks=[*flaky, ("build", True, "ok")],
    )
    found = find_recurrence(runs, now.id, FLASK_TAGS, now.workspace)
    assert isinstance(found, Recurrence)
    assert found.runs == [first.id] and found.run_id == now.id
    assert found.tags == ["flask", "python"]
    assert found.layout == ["app:py", "requirements.txt", "templates:html", "tests:test_*.py"]
    steps = ["install flask", "install pytest", "test: python -m pytest", "run: python <py>"]
    assert found.steps == steps
    assert found.fixed == ["build: running tests `…` failed: N failed in <file>"]
    text = found.describe()
    assert first.id in text and "books" in text and "app:py" in text and "failed" in text


def test_runs_are_newest_first_and_other_run_kinds_are_skipped(runs):
    a = make_run(runs, "a Flask app for books", flask_plan())
    b = make_run(runs, "a Flask app for films", flask_plan(), kind="enhance")
    (runs / "matrix-20240101-000000-abcdef").mkdir()  # not a build: no summary
    now = make_run(runs, "a Flask app for notes", flask_plan())
    found = find_recurrence(runs, now.id, FLASK_TAGS, now.workspace)
    assert found is not None and found.runs == [b.id, a.id]


def test_an_earlier_build_that_failed_is_no_recurrence(runs):
    make_run(runs, "a Flask app for books", flask_plan(), status="failed")
    make_run(runs, "a Flask app for films", flask_plan(), status="running")
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None


def test_different_stacks_are_no_recurrence(runs):
    django = flask_plan(stack=["python", "django"], dependencies=["django", "pytest"])
    make_run(runs, "a Django site for books", django)
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None


def test_different_layouts_are_no_recurrence(runs):
    package = flask_plan(
        files=[
            "pyproject.toml",
            "notes/__init__.py",
            "notes/views.py",
            "static/app.js",
            "README.md",
        ]
    )
    make_run(runs, "a Flask app for books", package)
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None


def test_different_steps_are_no_recurrence(runs):
    other = flask_plan(
        dependencies=["flask", "sqlalchemy", "alembic", "gunicorn"],
        test_command="make check",
        run_command="gunicorn app:app --check",
    )
    make_run(runs, "a Flask app for books", other)
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None


def test_an_existing_matching_skill_means_no_duplicate(runs, home, tmp_path):
    make_run(runs, "a Flask app for books", flask_plan())
    now = make_run(runs, "a Flask app for notes", flask_plan())
    book = SkillBook(home / "skills", tmp_path / "global" / "skills")
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace, book) is not None
    skill = Skill(name="flask-app", description="d", tags=["flask"], body="## When to use\nx")
    book.save(skill.model_copy(update={"scope": "global"}))
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace, book) is None
    # a set-aside skill covers nothing: the recurrence is found again
    book.save(skill.model_copy(update={"scope": "global", "set_aside": True}))
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace, book) is not None


def test_a_symlinked_run_folder_is_not_followed(runs, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    real = make_run(elsewhere, "a Flask app for books", flask_plan())
    os.symlink(real.dir, runs / "20991231-235959-aaaaaa")
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None
    # a real one beside it is found, the link still skipped
    kept = make_run(runs, "a Flask app for films", flask_plan())
    found = find_recurrence(runs, now.id, FLASK_TAGS, now.workspace)
    assert found is not None and found.runs == [kept.id]


def test_a_symlinked_summary_or_plan_is_not_followed(runs, tmp_path):
    real = make_run(tmp_path / "elsewhere", "a Flask app for books", flask_plan())
    linked = make_run(runs, "a Flask app for films", flask_plan())
    linked.summary_path.unlink()
    os.symlink(real.summary_path, linked.summary_path)
    other = make_run(runs, "a Flask app for maps", flask_plan())
    (other.workspace / "plan.json").unlink()
    os.symlink(real.workspace / "plan.json", other.workspace / "plan.json")
    now = make_run(runs, "a Flask app for notes", flask_plan())
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None


def test_a_giant_or_invalid_summary_is_skipped(runs):
    giant = make_run(runs, "a Flask app for books", flask_plan())
    data = json.loads(giant.summary_path.read_text())
    giant.summary_path.write_text(json.dumps(data) + " " * (2 * 1024 * 1024))  # valid JSON
    broken = make_run(runs, "a Flask app for films", flask_plan())
    broken.summary_path.write_text('{"status": "passed", ')
    fifo = make_run(runs, "a Flask app for maps", flask_plan())
    fifo.summary_path.unlink()
    os.mkfifo(fifo.summary_path)
    now = make_run(runs, "a Flask app for notes", flask_plan())
    started = time.monotonic()
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None
    assert time.monotonic() - started < 5  # the FIFO did not hang the read


def test_a_missing_or_invalid_plan_of_this_build_is_none(runs):
    make_run(runs, "a Flask app for books", flask_plan())
    now = make_run(runs, "a Flask app for notes", None)
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None
    (now.workspace / "plan.json").write_text('{"summary": ""}')
    assert find_recurrence(runs, now.id, FLASK_TAGS, now.workspace) is None
    assert find_recurrence(runs / "nowhere", now.id, FLASK_TAGS, now.workspace) is None


def test_only_the_newest_runs_are_read(runs):
    make_run(runs, "a Flask app for books", flask_plan())
    for i in range(RUNS_MAX):
        (runs / f"29{i:06d}-000000-000000").mkdir(parents=True)  # newer, not builds
    now = make_run(runs, "a Flask app for notes", flask_plan())
    os.rename(now.dir, runs / "00000000-000000-000000")
    current = runs / "00000000-000000-000000"
    assert find_recurrence(runs, current.name, FLASK_TAGS, current / "workspace") is None


# ---------------------------------------------------------------- the shapes
@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("app.py", "app:py"),
        ("models.py", "module:py"),
        ("tests/test_app.py", "tests:test_*.py"),
        ("tests/__init__.py", "tests:__init__.py"),
        ("src/App.test.tsx", "tests:*.tsx"),
        ("templates/index.html", "templates:html"),
        ("notes/views.py", "pkg:py"),
        ("requirements.txt", "requirements.txt"),
        ("package.json", "package.json"),
        ("README.md", "docs:md"),
        ("Makefile", "makefile"),
    ],
)
def test_file_categories(path, category):
    assert file_category(path) == category


@pytest.mark.parametrize(
    ("command", "shape"),
    [
        ("python -m pytest -q", "python -m pytest"),
        ("python3.12 app.py --check", "python <py>"),
        ("FLASK_APP=app.py flask run --port 5001", "flask run"),
        ("npm test -- --watch=false", "npm test"),
        ("pytest -q tests/ && echo ok", "pytest"),
        ("", ""),
    ],
)
def test_command_shapes(command, shape):
    assert command_shape(command) == shape


def test_plan_steps_and_check_shapes():
    plan = flask_plan(install_command="npm ci")
    assert plan_steps(plan) == [
        "install flask",
        "install pytest",
        "setup: npm ci",
        "test: python -m pytest",
        "run: python <py>",
    ]
    assert check_shape("running `pytest -q` failed: 3 errors in app/x.py") == (
        "running `…` failed: N errors in <file>"
    )


# ---------------------------------------------------------------- drafting
def _recurrence() -> Recurrence:
    return Recurrence(
        runs=["20240101-000000-aaaaaa"],
        tags=["flask", "python"],
        layout=["app:py", "requirements.txt", "tests:test_*.py"],
        steps=["install flask", "test: python -m pytest"],
        fixed=["build: running tests `…` failed"],
        run_id="20240102-000000-bbbbbb",
        tasks=["a Flask app for books"],
    )


def _llm(policy: str, tmp_path: Path) -> LLMClient:
    model = f"scripted:tests.fakes.skill_policies:{policy}"
    return LLMClient(LLMConfig(model=model), log_path=tmp_path / "llm.jsonl", sleep=lambda s: None)


def _draft(policy: str, tmp_path: Path):
    return draft_skill(_llm(policy, tmp_path), "a Flask app for notes", _recurrence(), "{}")


def test_a_good_draft_through_the_real_client(tmp_path, home):
    skill, why = _draft("good_draft", tmp_path)
    assert why == "" and skill is not None
    assert skill.name == "flask-json-app" and skill.origin == "build 20240102-000000-bbbbbb"
    assert skill.triggers == ["flask app", "json api"] and skill.tags == ["flask", "python"]
    assert "## Steps" in skill.body and "```" not in skill.body
    logged = [json.loads(line) for line in (tmp_path / "llm.jsonl").read_text().splitlines()]
    assert len([r for r in logged if r.get("response")]) == 1  # one extra call
    book = SkillBook(home / "skills", None)
    book.save(skill)
    assert book.match("build a flask app for recipes", ["flask", "python"])[0].name == skill.name


def test_a_draft_sets_no_counters_of_its_own(tmp_path):
    skill, why = _draft("counters_draft", tmp_path)
    assert why == "" and skill is not None
    assert (skill.uses, skill.passed, skill.confidence, skill.extra) == (0, 0, 0.5, {})


def test_a_path_traversal_name_is_re_slugged(tmp_path, home):
    skill, why = _draft("traversal_name", tmp_path)
    assert why == "" and skill is not None and skill.name == "etc"
    book = SkillBook(home / "skills", None)
    book.save(skill)
    assert (home / "skills" / "etc" / "SKILL.md").is_file()
    assert not (home.parent / "etc").exists()


def test_a_sloppy_draft_is_put_right(tmp_path):
    skill, why = _draft("sloppy", tmp_path)
    assert why == "" and skill is not None
    assert skill.name == "my-flask-skill"
    assert len(skill.triggers) == 10 and skill.tags == ["flask", "python", "sqlite"]


def test_a_body_a_little_over_the_cap_is_cut(tmp_path):
    skill, why = _draft("long_body", tmp_path)
    assert why == "" and skill is not None
    assert len(skill.body) <= BODY_MAX and skill.body.endswith("(cut to fit)")


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ("python_tag", "invalid YAML frontmatter"),
        ("alias_bomb", "aliases"),
        ("huge_body", "characters (at most 32,000): refused"),
        ("no_frontmatter", "no frontmatter"),
        ("injection", "ignore its instructions"),
        ("hidden_injection", "HTML comment"),
        ("no_steps", "'## Steps' section"),
        ("raising", "model error: "),
    ],
)
def test_a_hostile_or_bad_draft_is_refused_in_words(tmp_path, policy, said):
    skill, why = _draft(policy, tmp_path)
    assert skill is None and said in why, why
    assert "\n" not in why
    assert not Path("/tmp/cadillac-pwned").exists()


def test_a_model_that_cannot_answer_is_a_model_error(tmp_path):
    llm = LLMClient(LLMConfig(model=register_script("skills-empty", [])), sleep=lambda s: None)
    skill, why = draft_skill(llm, "task", _recurrence(), "{}")
    assert skill is None and why.startswith("model error: ")
