"""Limits that bind whoever runs cadillac, root included: the process limit, the size of a
command's /tmp, what a workspace may hold, and a host user that owns nothing of the host.

These run as root here (the suite's machine): where cadillac is root, a user namespace
would map the sandbox onto root, which the kernel exempts from the process limit.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.footprint import WorkspaceLimits
from orchestrator.sandbox.workspace import Workspace, WorkspaceError

FORKS = """
import os, time
born = 0
try:
    for _ in range(LIMIT + 100):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        born += 1
except OSError as exc:
    print("refused after", born, exc.strerror)
print("forked", born)
"""


def test_a_fork_bomb_is_held_by_the_process_limit(ws: Path):
    """100 processes more than the limit: the kernel refuses the rest."""
    limit = ExecConfig().process_limit
    (ws / "forks.py").write_text(FORKS.replace("LIMIT", str(limit)))
    done = run_command("python3 forks.py", ws, ExecConfig(), timeout_s=60)
    assert "refused after" in done.output, done.output
    assert f"forked {limit + 100}" not in done.output


def test_the_command_is_not_root_of_the_host_files_it_sees(ws: Path, tmp_path: Path):
    """A file only its owner may read (as /etc/shadow) stays unreadable, even bound in."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "shadow").write_text("root:secret-hash\n")
    (private / "shadow").chmod(0o600)
    done = run_command(f"cat {private}/shadow; id -u", ws, ExecConfig(), visible=[private])
    assert "secret-hash" not in done.output, done.output
    assert "Permission denied" in done.output
    assert done.output.split()[-1] != "0"


def test_a_host_file_hard_linked_into_the_workspace_is_not_given_away(ws: Path, tmp_path: Path):
    host = tmp_path / "host.txt"
    host.write_text("host\n")
    os.link(host, ws / "linked.txt")
    (ws / "made-by-host.txt").write_text("mine\n")
    done = run_command(
        "echo changed >> linked.txt; echo more >> made-by-host.txt", ws, ExecConfig()
    )
    assert host.read_text() == "host\n" and host.stat().st_uid == os.geteuid(), done.output
    assert "Permission denied" in done.output
    assert (ws / "made-by-host.txt").read_text() == "mine\nmore\n"  # the workspace is its own


def test_tmp_has_a_size_of_its_own(ws: Path):
    config = ExecConfig(tmp_size_bytes=8 * 1024**2)
    big = run_command("head -c 20000000 /dev/zero > /tmp/big", ws, config)
    assert not big.ok and big.limit == "/tmp size limit 8 MiB", big.for_model()
    assert "/tmp size limit 8 MiB reached" in big.for_model()
    shm = run_command("head -c 20000000 /dev/zero > /dev/shm/big", ws, config)
    assert not shm.ok and "No space left on device" in shm.output, shm.output
    fits = run_command("head -c 4000000 /dev/zero > /tmp/small && echo fits", ws, config)
    assert fits.ok and fits.output == "fits\n"


def test_more_files_than_the_workspace_may_hold_are_said_to_the_model(ws: Path):
    limits = WorkspaceLimits(max_files=100)
    config = ExecConfig(workspace=limits)
    done = run_command("mkdir many && touch many/f{1..149}", ws, config)
    assert done.limit == "workspace holds 150 files, the limit is 100", done.for_model()
    assert done.for_model().startswith("limit reached: workspace holds 150 files, the limit is 100")
    assert not done.ok
    workspace = Workspace(ws, limits=limits)
    try:
        workspace.write_file("one-more.txt", "x")
    except WorkspaceError as exc:
        assert str(exc).startswith("limit reached: workspace holds 150 files, the limit is 100")
    else:
        raise AssertionError("the write past the limit was not refused")
    cleaned = run_command("rm -r many", ws, config)
    assert cleaned.ok and cleaned.limit is None
    assert workspace.write_file("one-more.txt", "x").startswith("wrote one-more.txt")


def test_a_workspace_past_its_size_is_said_to_the_model(ws: Path):
    limits = WorkspaceLimits(max_bytes=4 * 1024**2)
    done = run_command("head -c 6000000 /dev/urandom > big", ws, ExecConfig(workspace=limits))
    assert done.limit and done.limit.startswith("workspace holds 5.7"), done.for_model()
    assert done.limit.endswith("the limit is 4 MiB")
    try:
        Workspace(ws, limits=limits).write_file("more.txt", "x")
    except WorkspaceError as exc:
        assert "limit reached: workspace holds 5.7" in str(exc)
    else:
        raise AssertionError("the write past the limit was not refused")
