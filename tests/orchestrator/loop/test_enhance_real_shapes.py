"""enhance on a repository shaped as real ones are (tests/fakes/real_shapes.py): a
.gitignore listing .venv/ and node_modules/, a hatchling + hatch-vcs src/ layout, pytest
configured only in tests/conftest.py and named only in a test extra and a dependency
group, a test failing at HEAD, a test-data file that does not compile, and incidental
JavaScript tooling. The scripted change must pass, judged by the suite's own run, and the
change must hold only what the model changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.fakes import real_shapes

pytestmark = pytest.mark.e2e
MODEL = "scripted:tests.fakes.real_shapes:{}"


@pytest.fixture
def shapes(tmp_path) -> Path:
    return real_shapes.make_shapes(tmp_path / "shapes")


def enhance(home: Path, repo: Path, policy: str, *extra: str) -> tuple[int, dict]:
    argv = ["enhance", str(repo), real_shapes.TASK, "--model", MODEL.format(policy), "--json"]
    code = main([*argv, "--home", str(home), *extra])
    runs = sorted((home / "runs").glob("*/summary.json"))
    assert runs, "the run left no summary"
    return code, json.loads(runs[-1].read_text())


def test_a_real_shaped_repository_is_enhanced_and_its_change_is_only_the_models(
    home, shapes, capsys, wheel_index
):
    head = real_shapes.git(shapes, "rev-parse", "HEAD")
    code, summary = enhance(home, shapes, "honest")
    out = capsys.readouterr()
    assert code == 0 and summary["status"] == "passed", (summary["reason"], out.err)
    assert json.loads(out.out)["run_id"] == summary["run_id"]  # --json printed its object
    run = home / "runs" / summary["run_id"]

    # the change is the model's two files: no lock file, no install or test products
    assert summary["changed"] == ["src/shapes/area.py", "tests/test_area.py"]
    branch = summary["branch"]
    assert real_shapes.git(shapes, "diff", "--name-only", f"{head}..{branch}").split() == [
        "src/shapes/area.py",
        "tests/test_area.py",
    ]
    # the suite was pytest's (configured only in tests/conftest.py), run test by test
    task = json.loads((run / "task.json").read_text())
    assert "pytest" in task["baseline"]["test_command"]
    # what failed at HEAD was said at the start, and is not the change's fault
    assert "test_a_negative_radius_is_refused" in (task["baseline"]["failing"] or "")
    assert "already fail" in out.err
    # deps needed no model, installed pytest, and no npm install ran for a Python project
    phases = {p["phase"]: p for p in summary["phases"]}
    assert phases["deps"]["rounds"] == 0
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    commands = [e["data"]["command"] for e in events if e["kind"] == "command"]
    assert not any("npm" in c for c in commands), commands
    assert not (run / "workspace" / "node_modules").exists()
    # the editable install has the version of the repository's tag
    meta = list((run / "workspace" / ".venv").glob("lib/python*/site-packages/shapes-*.dist-info"))
    assert [m.name for m in meta] == [f"shapes-{real_shapes.VERSION}.dist-info"]


def test_a_conftest_that_stops_collection_is_refused_and_never_enters_the_change(
    home, shapes, wheel_index
):
    """The first of the four ways around a suite once reported `passed`: conftest.py's
    collect_ignore kept every existing test of tests/test_area.py from running. The
    check refuses it and says why; the model puts conftest.py back; it is never committed."""
    code, summary = enhance(home, shapes, "collect_ignorer")
    assert code == 0 and summary["status"] == "passed", summary["reason"]
    run = home / "runs" / summary["run_id"]
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    checks = [e["data"] for e in events if e["kind"] == "check" and e["phase"] == "build"]
    assert [c["passed"] for c in checks] == [False, True]
    refused = checks[0]["summary"]
    assert "3 test(s) that passed before did not run" in refused, refused
    assert "tests/conftest.py" in refused  # named: it decides which tests run
    noted = [e for e in events if e["kind"] == "suite_collection_changed"]
    assert noted and noted[0]["phase"] == "build"
    assert noted[0]["data"]["files"] == ["tests/conftest.py"]
    assert summary["changed"] == ["src/shapes/area.py", "tests/test_area.py"]
    assert "collect_ignore" not in (run / "changes.patch").read_text()


def test_what_cadillacs_install_and_test_runs_make_stays_out_of_the_change(
    home, tmp_path, capsys, npm_registry
):
    """minimist's patch once held the package-lock.json of cadillac's own npm install, and
    the coverage its test script wrote; the project ignores neither."""
    from tests.fakes import real_node

    repo = real_node.make_mini(tmp_path / "mini")
    head = real_shapes.git(repo, "rev-parse", "HEAD")
    argv = ["enhance", str(repo), real_node.TASK, "--json", "--home", str(home)]
    code = main([*argv, "--model", "scripted:tests.fakes.real_node:honest"])
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert code == 0 and summary["status"] == "passed", (summary["reason"], out.err)
    assert summary["changed"] == ["index.js", "test/clamp.test.js"]
    assert "package-lock.json" in summary["left_out"]
    assert "coverage/lcov.info" in summary["left_out"]
    diff = real_shapes.git(repo, "diff", "--name-only", f"{head}..{summary['branch']}").split()
    assert diff == ["index.js", "test/clamp.test.js"]
    # node's TAP said which tests ran: the suite's own verdict, test by test
    run = home / "runs" / summary["run_id"]
    first = json.loads((run / "baseline-tests.json").read_text())
    assert first["report"] == "tap" and sorted(first["tests"]) == ["flags", "nothing"]
    build = next(p for p in summary["phases"] if p["phase"] == "build")
    assert "3 ran: 3 passed" in build["check"], build["check"]


def test_a_suite_that_cannot_run_stops_the_build_in_one_line_before_any_model_call(
    home, shapes, capsys, wheel_index
):
    code, summary = enhance(home, shapes, "honest", "--test-cmd", "python -m no_such_runner")
    out = capsys.readouterr()
    assert code == 1 and summary["status"] == "failed"
    errors = [line for line in out.err.splitlines() if line.startswith("cadillac: error:")]
    assert len(errors) == 1 and "cannot run" in errors[0], out.err
    assert "No module named no_such_runner" in errors[0]
    assert json.loads(out.out)["status"] == "failed"  # --json still prints the summary
    assert "cannot run" in summary["reason"] and summary["phases"] == []
    run = home / "runs" / summary["run_id"]
    assert not (run / "llm.jsonl").exists() or not (run / "llm.jsonl").read_text().strip()
