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
