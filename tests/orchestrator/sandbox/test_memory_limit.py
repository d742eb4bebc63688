"""The memory limit that toolchains survive and a hostile command cannot get around.

A data limit per process lets V8 reserve WebAssembly memory, which an address-space limit
refused. A memory cgroup per command holds what the data limit does not count: memory
mapped shared, and many processes that are each under the limit.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from orchestrator.sandbox import cgroup
from orchestrator.sandbox.executor import ExecConfig, run_command

MIB = 1024**2
needs_cgroup = pytest.mark.skipif(
    not cgroup.available(), reason="this host gives cadillac no memory cgroup"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _leftover_cgroups() -> list[Path]:
    """This process's command cgroups (another pytest worker's commands have their own)."""
    found = cgroup._parent()
    return sorted(found[0].glob(f"{cgroup.PREFIX}{os.getpid()}-*")) if found else []


def test_node_reserves_webassembly_memory_under_the_default_limits(ws: Path):
    script = (
        "const m = new WebAssembly.Memory({initial: 1}); console.log('wasm', m.buffer.byteLength)"
    )
    result = run_command(f'node -e "{script}"', ws, ExecConfig(), timeout_s=60)
    assert result.ok, result.output  # under ulimit -v 4 GiB: "Cannot allocate Wasm memory"
    assert result.output == "wasm 65536\n"


def test_a_six_gib_allocation_is_refused_by_the_default_limits(ws: Path):
    result = run_command("python3 -c 'b = bytearray(6 * 1024**3)'", ws, ExecConfig(), timeout_s=60)
    assert not result.ok and result.limit == "memory limit 4 GiB"
    assert "MemoryError" in result.output


SHARED_HOG = (
    "python3 -c 'import mmap; n = 1024**3; m = mmap.mmap(-1, n); "
    'm[::4096] = b"x" * (n // 4096); print("touched")\''
)
"""1 GiB mapped shared and anonymous, every page touched: the data limit does not count it."""


@needs_cgroup
def test_memory_mapped_shared_is_held_by_the_cgroup(ws: Path):
    config = ExecConfig(memory_limit_bytes=256 * MIB, tmp_size_bytes=64 * MIB)
    result = run_command(SHARED_HOG, ws, config, timeout_s=120)
    assert not result.ok and "touched" not in result.output
    assert result.limit == "memory limit 256 MiB"
    assert result.for_model().startswith("killed: memory limit 256 MiB")
    without = run_command(SHARED_HOG, ws, config.model_copy(update={"memory_cgroup": False}))
    assert without.ok and without.output == "touched\n"  # why the cgroup is there


@needs_cgroup
def test_processes_each_under_the_limit_are_held_together(ws: Path):
    config = ExecConfig(memory_limit_bytes=256 * MIB, tmp_size_bytes=64 * MIB)
    hold = "python3 -c 'import time; b = bytearray(200 * 1024**2); time.sleep(4)'"
    result = run_command(f"for i in 1 2 3 4; do {hold} & done; wait; echo done", ws, config)
    assert result.limit == "memory limit 256 MiB", result.output  # 800 MiB in 4 processes


@needs_cgroup
def test_each_command_leaves_no_cgroup_and_nothing_running(ws: Path):
    before = _leftover_cgroups()
    result = run_command("sleep 300 & echo started", ws, ExecConfig(), timeout_s=30)
    assert result.ok and result.output == "started\n"
    assert _leftover_cgroups() == before


@needs_cgroup
def test_a_dead_cadillacs_cgroup_is_swept_with_what_still_runs_in_it():
    """A command the parent-death signal missed (its cadillac killed the moment it forked)
    is killed, and its cgroup removed, the next time a cadillac looks for cgroups."""
    import subprocess

    parent, version = cgroup._parent()
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now
    group = cgroup.Cgroup(parent / f"{cgroup.PREFIX}{gone.pid}-0", version)
    group.path.mkdir()
    left = subprocess.Popen(group.join_argv(["sleep", "300"]))
    try:
        deadline = time.monotonic() + 5
        while left.pid not in group.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert left.pid in group.pids()
        cgroup._sweep(parent, version)
        assert left.wait(timeout=5) == -9 and not group.path.exists()
    finally:
        left.kill()
        group.remove(wait_s=1)


def test_a_command_that_cannot_join_its_cgroup_does_not_run(tmp_path: Path):
    import subprocess

    group = cgroup.Cgroup(tmp_path / "no-such-cgroup", version=1)
    marker = tmp_path / "ran"
    done = subprocess.run(group.join_argv(["touch", str(marker)]), capture_output=True)
    assert done.returncode != 0 and not marker.exists()  # fails closed


def test_a_hostile_argument_never_reaches_the_joining_shell(tmp_path: Path):
    import subprocess

    group = cgroup.Cgroup(tmp_path, version=1)
    (tmp_path / "cgroup.procs").write_text("")
    argv = group.join_argv(["printf", "%s", "$(touch pwned); `touch pwned2`"])
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout == "$(touch pwned); `touch pwned2`"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_a_trials_cgroup_has_room_for_cadillac_and_its_builds():
    from orchestrator.improve.trial import trial_config

    build = ExecConfig()
    assert build.cgroup_room() == 5 * 1024**3  # 4 GiB of memory and its 1 GiB /tmp
    assert trial_config(build, 3600, jobs=3).cgroup_room() == 4 * 5 * 1024**3
