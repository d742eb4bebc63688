"""Stopping long commands: SIGTERM and Ctrl-C end them within seconds, SIGKILL takes their
children along, and every run they leave says so.

Each command runs as a real process (``python -m orchestrator``) with a scripted builder
that starts a command tagged with a marker and waits on it; the test finds that command's
processes by the marker in their command lines (the sandbox, the shell and the command
itself), stops cadillac, and checks that none of them is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from orchestrator.home import Home

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"  # enough train tasks for a cycle
SLEEPER = "scripted:tests.fakes.policies:sleeper"
IMPROVER = "scripted:tests.fakes.improve_policies:digit_improver"


def marker() -> str:
    return f"ref-{uuid.uuid4().hex[:12]}"


def holding(mark: str, besides: int = 0) -> list[int]:
    """The processes whose command line carries ``mark`` (but ``besides``: a build's task
    is in cadillac's own command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in (os.getpid(), besides):
            try:
                if mark.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_for(what, timeout: float = 120.0, every: float = 0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(every)
    return what()


def start(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def marked_matrix(tmp_path: Path, mark: str, source: Path = SMALL) -> Path:
    """A copy of a matrix whose tasks' prompts carry ``mark``."""
    matrix = tmp_path / "matrix"
    shutil.copytree(source, matrix)
    for toml in matrix.glob("*/task.toml"):
        text = toml.read_text()
        toml.write_text(text.replace('prompt = "', f'prompt = "({mark}) ', 1))
    return matrix


def stop_and_check(proc: subprocess.Popen, mark: str, sig: int) -> str:
    """Send ``sig`` once the marked command runs; the process must end within seconds and
    leave none of the marked processes behind. Returns its stderr."""
    assert wait_for(lambda: holding(mark, proc.pid)), "the marked command never started"
    sent = time.time()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the command did not end within 30 s of the signal") from None
    assert time.time() - sent < 30
    left = wait_for(lambda: not holding(mark), timeout=10)
    assert left, f"processes left behind: {holding(mark)}"
    return err


def summaries(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / "runs").glob("*/summary.json"))]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_build_says_interrupted_and_leaves_no_process(home, sig, capsys):
    from orchestrator.cli import main

    mark = marker()
    proc = start(home, "build", f"({mark}) a wordfreq tool", "--model", SLEEPER)
    err = stop_and_check(proc, mark, sig)
    assert proc.returncode == 130 and "cadillac: interrupted" in err
    assert "Traceback" not in err
    (summary,) = summaries(home)
    assert summary["status"] == "interrupted" and "--resume" in summary["reason"]
    assert main(["runs", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "interrupted"


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_a_killed_build_takes_its_commands_with_it(home, sandbox, capsys):
    from orchestrator.cli import main

    mark = marker()
    extra = ["--unsafe-no-sandbox"] if sandbox == "none" else []
    proc = start(home, "build", f"({mark}) a wordfreq tool", "--model", SLEEPER, *extra)
    stop_and_check(proc, mark, signal.SIGKILL)
    assert [s["status"] for s in summaries(home)] in ([], ["running"])  # nobody wrote more...
    assert main(["runs", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "interrupted"  # ...but the list sees its process is gone


def test_sigterm_stops_a_matrix_run_and_its_queued_builds(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CADILLAC_CACHE_DIR", str(tmp_path / "cache"))  # its own, to check
    mark = marker()
    matrix = marked_matrix(tmp_path, mark)
    args = ["matrix", "run", "--matrix", str(matrix), "--model", SLEEPER, "--no-learn"]
    proc = start(home, *args, "--jobs", "2", "--repeats", "2")
    err = stop_and_check(proc, mark, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err
    (results,) = (home / "runs").glob("matrix-*/results.json")
    record = json.loads(results.read_text())
    assert record["stopped_because"] == "interrupted" and record["ended"]
    builds = summaries(home)
    assert 1 <= len(builds) <= 2  # two were running; the four queued never started
    assert all(b["status"] == "interrupted" for b in builds)
    cache = Home(home).cache_dir  # nothing half-made left in it (".new": a template)
    assert cache == tmp_path / "cache" and not [
        p for p in cache.glob("*") if p.suffix in (".new", ".tmp", ".partial")
    ]


def test_sigterm_stops_an_improve_cycle_and_removes_its_worktrees(home, repo, tmp_path):
    from tests.orchestrator.conftest import git

    mark = marker()
    matrix = marked_matrix(tmp_path, mark, LIFT)
    args = ["improve", "--repo", str(repo), "--matrix", str(matrix), "--model", SLEEPER]
    proc = start(home, *args, "--improver-model", IMPROVER, "--iterations", "1")
    err = stop_and_check(proc, mark, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err
    (summary,) = (home / "runs").glob("improve-*/summary.json")
    record = json.loads(summary.read_text())
    assert record["stopped_because"] == "interrupted" and record["ended"]
    assert git(repo, "worktree", "list").count("\n") == 0
    assert git(repo, "branch", "--list", "cadillac/*") == ""


def test_a_killed_nightly_takes_its_trials_and_their_builds_with_it(home, repo, tmp_path):
    mark = marker()
    matrix = marked_matrix(tmp_path, mark, LIFT)
    args = ["nightly", "--repo", str(repo), "--matrix", str(matrix), "--model", SLEEPER]
    proc = start(home, *args, "--improver-model", IMPROVER, "--iterations", "1")
    stop_and_check(proc, mark, signal.SIGKILL)
    (night,) = (home / "runs").glob("nightly-*")
    assert json.loads((night / "nightly.json").read_text())["status"] == "running"
    from orchestrator.nightly.records import stale_running_becomes_interrupted

    stale_running_becomes_interrupted(Home(home))  # what the next report or night does first
    assert json.loads((night / "nightly.json").read_text())["status"] == "interrupted"
