"""Ctrl-C of ``cadillac matrix run``: the whole terminal's process group gets SIGINT, the run
ends within seconds, every build it started says ``interrupted`` and no process is left.

SIGTERM of a matrix run is in ``tests/orchestrator/cli/test_stopping.py``; this file adds
Ctrl-C the way a terminal sends it (to the foreground process group, so the builds' own
processes get it too), and checks every descendant of the command, not only the marked
one. The helpers below are shared with the nightly and improve signal tests.
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

from tests.orchestrator.cli.test_stopping import (
    ROOT,
    SLEEPER,
    holding,
    marked_matrix,
    marker,
    summaries,
    wait_for,
)

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

STOP_WITHIN_S = 15.0
"""What "within seconds" means here: the signal's sending to the command's exit."""


def start_group(home: Path, *args: str) -> subprocess.Popen:
    """``python -m orchestrator ARGS`` as the leader of its own process group (a terminal's
    foreground job), with its home in ``home``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, start time) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], fields[19]


def descendants(root: int) -> set[tuple[int, str]]:
    """Every process below ``root``, as (pid, start time): a pid reused later is not it."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(stat[0], []).append((int(entry.name), stat[2]))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child[0])
    return found


def alive(processes: set[tuple[int, str]]) -> list[int]:
    """The ones still running (a zombie waiting for its reaper has ended)."""
    left = []
    for pid, started in processes:
        stat = _stat(pid)
        if stat is not None and stat[2] == started and stat[1] != "Z":
            left.append(pid)
    return left


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def signal_once_building(
    proc: subprocess.Popen, mark: str, sig: int, group: bool = False, ready=None
) -> tuple[float, str, set[tuple[int, str]]]:
    """Once the marked command runs (and ``ready()``, when given, holds), send ``sig`` to the
    command (or its whole process group). Returns the seconds it took to exit, its stderr and
    the processes it had below it at the signal. Fails when it does not exit in time."""
    assert wait_for(lambda: holding(mark, proc.pid)), "the marked command never started"
    if ready is not None:
        assert wait_for(ready), "the command never got to where the signal should land"
    below = descendants(proc.pid)
    assert below, "the command had no child processes to stop"
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"the command did not end within {STOP_WITHIN_S:g} s") from None
    took = time.monotonic() - sent
    print(f"stopped by {signal.Signals(sig).name} in {took:.2f} s")  # shown with pytest -s
    return took, err, below


def nothing_left(proc: subprocess.Popen, mark: str, below: set[tuple[int, str]]) -> None:
    """No process the command had (nor any marked one, nor its group) outlives it by long."""
    assert wait_for(lambda: not alive(below) and not holding(mark), timeout=5), (
        f"left running: {alive(below)} (marked: {holding(mark)})"
    )
    assert wait_for(lambda: not group_alive(proc.pid), timeout=5), "its process group lives on"


def test_ctrl_c_stops_a_matrix_run_within_seconds_and_marks_every_build(home, tmp_path):
    mark = marker()
    matrix = marked_matrix(tmp_path, mark)
    args = ["matrix", "run", "--matrix", str(matrix), "--model", SLEEPER, "--no-learn"]
    proc = start_group(home, *args, "--jobs", "2", "--repeats", "2")
    took, err, below = signal_once_building(proc, mark, signal.SIGINT, group=True)
    assert took <= STOP_WITHIN_S
    assert proc.returncode == 130 and "cadillac: interrupted" in err and "Traceback" not in err
    nothing_left(proc, mark, below)
    (results,) = (home / "runs").glob("matrix-*/results.json")
    record = json.loads(results.read_text())
    assert record["stopped_because"] == "interrupted" and record["ended"]
    builds = summaries(home)
    assert 1 <= len(builds) <= 2  # two were running; the four queued never started
    assert [b["status"] for b in builds] == ["interrupted"] * len(builds)
    started = {b["run_id"] for b in builds}
    rows = {r["run_id"]: r for r in record["runs"] if r.get("run_id")}
    assert started <= set(rows)  # the results name every build that began...
    assert {rows[r]["status"] for r in started} == {"interrupted"}  # ...and say how it ended
    assert not [r for r in record["runs"] if r["status"] in ("passed", "failed")]
