"""Plugins found by entry point: the example plugin installed for real, builds that reach
it, and an improve trial that never loads one."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "csv_plugin"
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
FAILING = "scripted:tests.fakes.policies:last_user_words"  # never finishes a phase: quick


def pip_install(source: Path, target: Path) -> None:
    """``pip install`` of ``source`` into ``target``, offline, with the build backend of this
    environment (a copy of the source is built: the build writes beside it)."""
    copy = target.parent / f"{source.name}-src"
    shutil.copytree(source, copy)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--disable-pip-version-check", "--target", str(target), str(copy)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        "the example plugin does not install offline (its build backend is setuptools: "
        "this environment needs setuptools>=70.1, or wheel):\n" + done.stdout[-2000:] + done.stderr
    )


def cadillac(*argv: str, pythonpath: list[Path], cwd: Path, **env: str):
    own = {"PYTHONPATH", "CADILLAC_HOME", "CADILLAC_NO_PLUGINS", "CADILLAC_BUILDS_CSV"}
    environ = {k: v for k, v in os.environ.items() if k not in own}
    environ.update(env, PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath))
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=cwd,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


def test_the_example_plugin_installed_by_entry_point_writes_a_line_per_build(tmp_path):
    site = tmp_path / "site"
    pip_install(EXAMPLE, site)
    entry = (next(site.glob("cadillac_csv_plugin-*.dist-info")) / "entry_points.txt").read_text()
    assert "[cadillac.plugins]" in entry and "cadillac_csv_plugin" in entry
    home = tmp_path / "cadillac-home"
    home.mkdir()
    path = [site, ROOT]
    build = ("build", "a word counter", "--model", FAILING, "--json")

    first = cadillac(*build, pythonpath=path, cwd=tmp_path, CADILLAC_HOME=str(home))
    code, out, err = finished(first)
    assert code == 1 and "warning" not in err, err  # the build fails; the plugin does not
    table = home / "builds.csv"  # no CADILLAC_BUILDS_CSV: builds.csv in the home
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 1 and rows[0]["task"] == "a word counter"
    assert rows[0]["status"] == "failed" and rows[0]["model"] == FAILING
    assert int(rows[0]["tokens_in"]) > 0 and float(rows[0]["seconds"]) > 0

    # named on the command line too: still one plugin, one line; turned off: no line
    again = cadillac(
        *build, "--plugin", "cadillac_csv_plugin", pythonpath=path, cwd=tmp_path,
        CADILLAC_HOME=str(home), CADILLAC_BUILDS_CSV=str(table),
    )  # fmt: skip
    off = cadillac(
        *build, pythonpath=path, cwd=tmp_path, CADILLAC_HOME=str(home),
        CADILLAC_BUILDS_CSV=str(table), CADILLAC_NO_PLUGINS="1",
    )  # fmt: skip
    for process in (again, off):
        code, out, err = finished(process)
        assert code == 1 and "warning" not in err, err
    rows = list(csv.DictReader(table.open()))
    builds = [p.name for p in (home / "runs").iterdir()]
    assert len(rows) == 2 and len(builds) == 3, (rows, builds)
    assert {r["run_id"] for r in rows} < set(builds)
    assert table.read_text().count("run_id") == 1  # one header


MARKER = '''
"""Says where it was loaded, and that its hook ran: files in the current folder."""

from pathlib import Path

from orchestrator.hooks import hookimpl

Path("marker-loaded").write_text("loaded")


@hookimpl
def matrix_end(results):
    Path("marker-matrix-end").write_text(str(len(results["runs"])))
'''


def test_an_improve_trial_loads_no_entry_point_plugin(home, repo, tmp_path):
    """The candidate's code runs the trial's builds: a plugin installed where it runs (here
    in the code's own folder, on the trial's PYTHONPATH) is loaded by a matrix run there,
    and not by the trial's."""
    from orchestrator.home import Home
    from orchestrator.improve.trial import RoundSpec, SandboxedMatrix
    from orchestrator.llm.client import LLMConfig

    (repo / "marker_plugin.py").write_text(MARKER)
    info = repo / "marker_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: marker-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cadillac.plugins]\nmarker = marker_plugin\n")

    control = tmp_path / "control"
    control.mkdir()
    run = (
        "matrix", "run", "--build-only", "--home", str(control / "home"), "--matrix", str(SMALL),
        "--split", "holdout", "--no-learn", "--json", "--model", FAILING,
    )  # fmt: skip
    code, out, err = finished(cadillac(*run, pythonpath=[repo], cwd=control))
    assert code == 0, err
    assert (control / "marker-loaded").is_file()
    assert (control / "marker-matrix-end").read_text() == "1"

    runner = SandboxedMatrix(Home(home), SMALL, LLMConfig(model=FAILING))
    results = runner.run(repo, "baseline", tmp_path / "round", RoundSpec(split="holdout"))
    assert [(r.task_id, r.status) for r in results.runs] == [("wf-h", "failed")]
    trial = tmp_path / "round" / "baseline-trial"
    assert (trial / "trial.log").is_file()
    assert not list(trial.rglob("marker-*")), "the trial loaded the entry point"
