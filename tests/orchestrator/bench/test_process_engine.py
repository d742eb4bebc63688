"""``--jobs N`` on one machine: a worker process per build, stopped within seconds.

A build waiting on its model (tests/fakes/stalling.py stalls in the model call, as a slow
provider does) used to be left running when a threaded run was stopped; a worker process
is told to stop and, failing that, killed. A worker that dies is reported, never lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.bench.engines import local_bound
from orchestrator.sandbox.executor import ExecConfig
from tests.support import one_error_line, run

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.stalling:stalling_builder"


def start(home: Path, stall: Path, *args: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CADILLAC_HOME": str(home),
        "CADILLAC_TEST_STALL_DIR": str(stall),
    }
    argv = [sys.executable, "-m", "orchestrator", "matrix", "run", "--matrix", str(SMALL)]
    return subprocess.Popen(
        [*argv, "--model", BUILDER, *args],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stalled(stall: Path, n: int, timeout: float = 120) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [int(p.read_text() or 0) for p in sorted(stall.glob("slot-*"))]
        if len(pids) >= n and all(pids[:n]):
            return pids[:n]
        time.sleep(0.1)
    raise TimeoutError("no build stalled")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def results(home: Path) -> dict:
    (found,) = (home / "runs").glob("matrix-*/results.json")
    return json.loads(found.read_text())


def test_sigterm_stops_builds_waiting_on_their_model_within_seconds(tmp_path):
    stall = tmp_path / "stall"
    stall.mkdir()
    (stall / "stalls").write_text("2")
    home = tmp_path / "home"
    proc = start(home, stall, "--split", "train", "--jobs", "2")
    pids = stalled(stall, 2)
    assert os.getpid() not in pids and proc.pid not in pids  # each build its own process
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)  # to the coordinator alone: it passes the stop on
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 20, err[-2000:]
    assert proc.returncode != 0
    done = results(home)
    assert done["stopped_because"] == "interrupted"
    assert [r["status"] for r in done["runs"]] == ["interrupted", "interrupted"], done["runs"]
    assert not any(alive(p) for p in pids)


def test_a_worker_killed_mid_build_is_reported_and_the_run_goes_on(tmp_path):
    stall = tmp_path / "stall"
    stall.mkdir()
    (stall / "stalls").write_text("1")
    home = tmp_path / "home"
    proc = start(home, stall, "--jobs", "2")
    (pid,) = stalled(stall, 1)
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    runs = results(home)["runs"]
    assert len(runs) == 3
    crashed = [r for r in runs if r["status"] == "crashed"]
    assert len(crashed) == 1 and "killed by signal 9" in crashed[0]["failure"], runs
    assert sum(r["status"] == "passed" for r in runs) == 2


def test_more_jobs_than_the_machine_holds_is_one_line_naming_the_bound(tmp_path, capsys):
    fits, why = local_bound(ExecConfig().cgroup_room())
    if fits >= 16:
        pytest.skip("this machine holds every job cadillac allows")  # not on a 24 GiB one
    code, _, err = run(
        capsys, "matrix", "run", "--matrix", str(SMALL), "--model", BUILDER, "--jobs",
        str(fits + 1), "--home", str(tmp_path / "home"),
    )  # fmt: skip
    assert code != 0
    line = one_error_line(err)
    assert f"--jobs {fits + 1}" in line and f"holds {fits}" in line and "GiB" in line, line
    assert not (tmp_path / "home" / "runs").exists()
