"""Running the model's shell commands: status, merged output, time limits, caps, env, sandbox."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from orchestrator.sandbox import executor
from orchestrator.sandbox.executor import CommandResult, ExecConfig, run_command, scrubbed_env

HAS_BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
SANDBOXES = ["none", pytest.param("bwrap", marks=needs_bwrap)]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def _gone(pid: int) -> bool:
    """The process no longer runs (it does not exist, or is a zombie nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _running_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline and not _gone(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def _wait_until(predicate, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_exit_code_and_merged_output_in_order(ws: Path, sandbox: str):
    config = ExecConfig(sandbox=sandbox)
    result = run_command("echo one; echo two >&2; echo three; exit 3", ws, config)
    assert result.exit_code == 3
    assert not result.ok and not result.timed_out
    assert result.output == "one\ntwo\nthree\n"
    assert result.output_bytes == len("one\ntwo\nthree\n")
    assert result.sandboxed is (sandbox == "bwrap")
    assert result.for_model() == "exit status 3\none\ntwo\nthree\n"
    ok = run_command("pwd; cat", ws, config)  # stdin is /dev/null: cat ends at once
    assert ok.ok and ok.exit_code == 0
    assert ok.output == f"{ws.resolve()}\n"


def test_for_model_texts():
    base = dict(command="x", output="", output_bytes=0, seconds=3.2, sandboxed=False)
    assert CommandResult(exit_code=0, timed_out=False, **base).for_model() == (
        "exit status 0\n(no output)"
    )
    timed_out = CommandResult(exit_code=None, timed_out=True, **base).for_model()
    assert timed_out.startswith("timed out after 3 s")
    assert "SIGKILL" in CommandResult(exit_code=-9, timed_out=False, **base).for_model()


def test_timeout_kills_the_command_and_its_children(ws: Path):
    config = ExecConfig(sandbox="none")
    start = time.monotonic()
    result = run_command(
        "echo started; sleep 30 & echo $! > child.pid; sleep 30; wait", ws, config, timeout_s=1
    )
    assert time.monotonic() - start < 5
    assert result.timed_out and result.exit_code is None and not result.ok
    assert result.output == "started\n"
    assert result.for_model().startswith("timed out after 1 s")
    child = int((ws / "child.pid").read_text())  # the background sleep
    assert _wait_until(lambda: _gone(child))


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_timeout_kills_children_in_every_mode(ws: Path, sandbox: str):
    marker = f"{30 + os.getpid() % 1000 / 1000:.3f}"  # a sleep length no other process uses
    config = ExecConfig(sandbox=sandbox)
    start = time.monotonic()
    result = run_command(f"sleep {marker} & sleep {marker}; wait", ws, config, timeout_s=1)
    assert time.monotonic() - start < 5
    assert result.timed_out
    assert _wait_until(lambda: not _running_with(f"sleep {marker}"))


def test_sigterm_ignored_gets_sigkill_after_grace(ws: Path):
    config = ExecConfig(sandbox="none", kill_grace_s=0.5)
    start = time.monotonic()
    result = run_command("trap '' TERM; sleep 30", ws, config, timeout_s=0.5)
    assert result.timed_out
    assert 0.9 < time.monotonic() - start < 4


def test_timeout_is_clamped_to_the_maximum(ws: Path):
    config = ExecConfig(sandbox="none", max_timeout_s=0.5)
    start = time.monotonic()
    assert run_command("sleep 30", ws, config, timeout_s=600).timed_out
    assert time.monotonic() - start < 4


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_background_leftovers_are_killed_when_the_command_ends(ws: Path, sandbox: str):
    config = ExecConfig(sandbox=sandbox)
    marker = f"{40 + os.getpid() % 1000 / 1000:.3f}"
    start = time.monotonic()
    result = run_command(f"sleep {marker} & echo spawned", ws, config)
    assert result.ok and result.output == "spawned\n"
    assert time.monotonic() - start < 5
    assert _wait_until(lambda: not _running_with(f"sleep {marker}"))


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_huge_output_is_capped_keeping_head_and_tail(ws: Path, sandbox: str):
    config = ExecConfig(sandbox=sandbox)
    command = "printf START; head -c 10000000 /dev/zero | tr '\\0' x; printf END"
    result = run_command(command, ws, config)
    assert result.ok
    assert result.output_bytes == 10_000_008
    assert len(result.output) <= config.output_cap_bytes + 100
    assert result.output.startswith("STARTxxx")
    assert result.output.endswith("xxxEND")
    assert "\n[... 9,980,008 bytes cut ...]\n" in result.output


def test_output_under_the_cap_is_whole(ws: Path):
    config = ExecConfig(sandbox="none", output_cap_bytes=100)
    result = run_command("head -c 100 /dev/zero | tr '\\0' y", ws, config)
    assert result.output == "y" * 100
    result = run_command("head -c 101 /dev/zero | tr '\\0' y", ws, config)
    assert result.output == "y" * 50 + "\n[... 1 bytes cut ...]\n" + "y" * 50


def test_scrubbed_env_drops_secrets_and_provider_settings():
    base = {
        "PATH": "/bin",
        "HOME": "/root",
        "my_api_key": "1",
        "GITHUB_TOKEN": "2",
        "DB_PASSWORD": "3",
        "GOOGLE_APPLICATION_CREDENTIALS": "4",
        "OPENAI_BASE_URL": "5",
        "HF_HOME": "6",
        "VERTEXAI_PROJECT": "7",
        "CADILLAC_MODEL": "8",
        "CADILLAC_API_BASE": "9",
        "CADILLAC_HOME": "/h",
        "LANG": "C.UTF-8",
    }
    assert scrubbed_env(base) == {
        "PATH": "/bin",
        "HOME": "/root",
        "CADILLAC_HOME": "/h",
        "LANG": "C.UTF-8",
    }


def test_secrets_never_reach_the_command(ws: Path, monkeypatch: pytest.MonkeyPatch):
    secrets = [
        "MY_API_KEY",
        "GITHUB_TOKEN",
        "OPENAI_BASE_URL",
        "SOME_PASSWORD",
        "ANTHROPIC_API_KEY",
    ]
    for name in secrets:
        monkeypatch.setenv(name, "s3cr3t-value")
    monkeypatch.setenv("HOME", str(ws))
    result = run_command("env", ws, ExecConfig(), env={"EXTRA_SETTING": "kept"})
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert not names & set(secrets)
    assert "s3cr3t-value" not in result.output
    assert {"PATH", "HOME", "EXTRA_SETTING"} <= names


def test_path_prefix_comes_first(ws: Path, tmp_path: Path):
    tools = tmp_path / "tools"
    tools.mkdir()
    script = tools / "hello-cadillac"
    script.write_text("#!/bin/sh\necho hello from the prefix\n")
    script.chmod(0o755)
    result = run_command('echo "$PATH"; hello-cadillac', ws, ExecConfig(), path_prefix=[tools])
    first, said = result.output.splitlines()
    assert first.split(os.pathsep)[0] == str(tools)
    assert said == "hello from the prefix"


def test_bwrap_required_but_missing_is_a_clear_error(ws: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(executor.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="bubblewrap is not installed"):
        run_command("true", ws, ExecConfig(sandbox="bwrap"))
    assert not run_command("true", ws, ExecConfig(sandbox="auto")).sandboxed


@needs_bwrap
def test_bwrap_writes_only_inside_the_workspace(ws: Path, tmp_path: Path):
    config = ExecConfig(sandbox="bwrap")
    (tmp_path / "existing.txt").write_text("original\n")
    escape = tmp_path / "escape.txt"
    result = run_command(
        f"touch {escape}; echo changed > {tmp_path / 'existing.txt'}; touch inside.txt",
        ws,
        config,
    )
    assert result.sandboxed
    assert not escape.exists()
    assert (tmp_path / "existing.txt").read_text() == "original\n"
    assert (ws / "inside.txt").exists()


@needs_bwrap
def test_bwrap_writable_paths(ws: Path, tmp_path: Path):
    extra = tmp_path / "cache"
    extra.mkdir()
    result = run_command(
        f"echo hi > {extra}/note", ws, ExecConfig(sandbox="bwrap"), writable=[extra]
    )
    assert result.ok
    assert (extra / "note").read_text() == "hi\n"


@needs_bwrap
def test_bwrap_network_is_off_unless_asked_for(ws: Path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        connect = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        config = ExecConfig(sandbox="bwrap")
        offline = run_command(connect, ws, config, timeout_s=10)
        assert offline.sandboxed and not offline.ok
        assert "connected\n" not in offline.output
        online = run_command(connect, ws, config, timeout_s=10, network=True)
        assert online.ok, online.output
        assert online.output == "connected\n"


def test_sandbox_none_runs_unsandboxed(ws: Path, tmp_path: Path):
    result = run_command(f"touch {tmp_path / 'free.txt'}", ws, ExecConfig(sandbox="none"))
    assert result.ok and not result.sandboxed
    assert (tmp_path / "free.txt").exists()


def test_exec_config_forbids_unknown_fields():
    with pytest.raises(ValueError):
        ExecConfig(timeout=3)


@needs_bwrap
def test_bwrap_sees_programs_under_tmp_and_gives_a_private_tmpdir(ws: Path, tmp_path: Path):
    """An interpreter or home under /tmp stays visible; scratch files go to a removed TMPDIR."""
    tool = tmp_path / "bin" / "hello"  # tmp_path itself lives under /tmp
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho hello from $0\n")
    tool.chmod(0o755)
    script = f"{tool}; python3 -c 'import tempfile; print(tempfile.mkdtemp())'; echo $TMPDIR"
    result = run_command(script, ws, ExecConfig(sandbox="bwrap"))
    assert result.ok, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"hello from {tool}"
    scratch, tmpdir = lines[1], lines[2]
    assert scratch.startswith(tmpdir) and "cadillac-sandbox-" in tmpdir
    assert not Path(tmpdir).exists()  # removed after the command
