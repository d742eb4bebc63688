"""Running the model's shell commands: status, output, time limits, caps, and containment.

Half of this file is a hostile command's view of the sandbox: it tries to read secrets
outside the workspace and from other processes, to print canary variables, to reach host
Unix sockets and TCP listeners, to allocate past its limit, and to write outside its
folder. Every such attempt must fail. These tests need bubblewrap; CI installs it and
fails (it does not skip) when it cannot.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.sandbox import policy
from orchestrator.sandbox.executor import (
    CommandResult,
    ExecConfig,
    SandboxUnavailable,
    check_sandbox,
    executor_for,
    probe,
    run_command,
)
from orchestrator.sandbox.installs import InstallStep, _issue

SANDBOXES = ["none", "bwrap"]
CANARY = "cadillac-canary-7f3e"


def test_bubblewrap_is_here():
    """The sandbox tests below are not skipped: without bubblewrap this fails."""
    assert shutil.which("bwrap"), "install bubblewrap (apt-get install bubblewrap)"
    assert probe("bwrap")[0] in ("mount", "bind"), probe("bwrap")[1]


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
    cpu = CommandResult(exit_code=152, timed_out=False, limit="CPU time limit 2 s", **base)
    assert cpu.for_model().startswith("killed: CPU time limit 2 s\n")
    memory = CommandResult(exit_code=1, timed_out=False, limit="memory limit 4 GiB", **base)
    assert memory.for_model().startswith("exit status 1: memory limit 4 GiB reached\n")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_timeout_kills_the_command_and_its_children(ws: Path, sandbox: str):
    marker = f"{30 + os.getpid() % 1000 / 1000:.3f}"  # a sleep length no other process uses
    start = time.monotonic()
    result = run_command(
        f"echo started; sleep {marker} & sleep {marker}; wait",
        ws,
        ExecConfig(sandbox=sandbox),
        timeout_s=1,
    )
    assert time.monotonic() - start < 5
    assert result.timed_out and result.exit_code is None and not result.ok
    assert result.output == "started\n"
    assert result.for_model().startswith("timed out after 1 s")
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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_signal_while_a_command_starts_still_kills_it(ws: Path, sandbox: str, sig, monkeypatch):
    """Ctrl-C (or SIGTERM, which cadillac turns into it) landing inside Popen, after the
    fork: before the fix the command ran on with nothing left to kill it by."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    start = subprocess.Popen._execute_child

    def then_signal(self, *args, **kwargs):
        start(self, *args, **kwargs)
        signal.raise_signal(sig)  # handled at the next bytecode, still inside Popen

    monkeypatch.setattr(subprocess.Popen, "_execute_child", then_signal)
    marker = f"{41 + os.getpid() % 1000 / 1000:.3f}"
    try:
        with pytest.raises(KeyboardInterrupt):
            run_command(f"sleep {marker}", ws, ExecConfig(sandbox=sandbox), timeout_s=60)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert _wait_until(lambda: not _running_with(f"sleep {marker}"))


KILLED_AT_START = """
import os, signal, subprocess, sys
from pathlib import Path
from orchestrator.sandbox.executor import ExecConfig, run_command
start = subprocess.Popen._execute_child
def then_die(self, args, *rest, **kwargs):
    start(self, args, *rest, **kwargs)  # the child has exec'd its first program, no more
    if sys.argv[2] in str(args):  # the command, not bubblewrap's probe
        os.kill(os.getpid(), signal.SIGKILL)
subprocess.Popen._execute_child = then_die
run_command(sys.argv[2], Path(sys.argv[3]), ExecConfig(sandbox=sys.argv[1]), timeout_s=60)
"""


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_cadillac_killed_as_a_command_starts_takes_the_command_with_it(ws: Path, sandbox):
    """SIGKILL lands the moment Popen returns, before bubblewrap (or the cgroup's shell)
    set anything up: the command must still die with cadillac. Before the lifeline, only
    the parent-death signal bubblewrap sets half-way through its set-up stood in the way,
    and a command started in that window ran on (in 1 of 8 tries here, 2 of 2 processes
    left in CI) with no parent, no time limit and nobody to kill it."""
    marker = f"{42 + os.getpid() % 1000 / 1000:.3f}"
    for _ in range(5):  # the window is short: five tries
        _killed_leaves_nothing(KILLED_AT_START, sandbox, f"sleep {marker}", ws, marker)


def _killed_leaves_nothing(script: str, sandbox: str, command: str, ws: Path, marker: str):
    """Run ``script`` (a cadillac that runs ``command`` and SIGKILLs itself) in a child
    process; nothing running ``sleep {marker}`` may outlive it (killed if it does)."""
    left = []
    try:
        child = subprocess.run(
            [sys.executable, "-c", script, sandbox, command, str(ws), f"sleep {marker}"],
            cwd=Path(__file__).resolve().parents[3],
            capture_output=True,
            timeout=60,
        )
        assert child.returncode == -signal.SIGKILL, child.stderr
        _wait_until(lambda: not _running_with(f"sleep {marker}"), 5)
        left = _running_with(f"sleep {marker}")
        assert not left, "the command outlived the cadillac that started it"
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)


def test_a_sandbox_without_its_own_pid_namespace_is_refused(ws: Path, monkeypatch):
    """A command's watcher kills every process it can see when cadillac dies (``kill -1``):
    only ever inside the sandbox's own PID namespace. Without one it would reach every
    process of the sandbox's user on the host, so such a sandbox is refused, before
    anything runs."""
    from orchestrator.sandbox import identity

    real = identity.bwrap_args
    monkeypatch.setattr(
        identity,
        "bwrap_args",
        lambda root: (
            [a for a in real(root) if a != "--unshare-pid"]
            if root
            else ["--unshare-net", "--uid", "65534", "--gid", "65534"]
        ),
    )
    with pytest.raises(SandboxUnavailable, match="PID namespace"):
        run_command(f"touch {ws}/ran", ws, ExecConfig())
    assert not (ws / "ran").exists()


KILLED_LATER = """
import os, signal, sys, threading, time
from pathlib import Path
from orchestrator.sandbox.executor import ExecConfig, run_command
config = ExecConfig(sandbox=sys.argv[1])
go = lambda: run_command(sys.argv[2], Path(sys.argv[3]), config, timeout_s=60)
threading.Thread(target=go, daemon=True).start()
while not any(sys.argv[4].encode() in p.joinpath("cmdline").read_bytes()
              for p in Path("/proc").glob("[0-9]*") if p.joinpath("cmdline").exists()):
    time.sleep(0.05)
time.sleep(0.3)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_command_that_kills_its_watcher_still_dies_with_cadillac(ws: Path, sandbox: str):
    """The watcher runs as the command's user, so a hostile command can kill it (or hold
    its pipe open through /proc): that only takes away what covers the milliseconds before
    the command starts. Once it runs, the sandbox's own parent-death chain (bubblewrap's
    --die-with-parent; unsandboxed, the process group's kill) still takes it along."""
    marker = f"{45 + os.getpid() % 1000 / 1000:.3f}"
    kill_watcher = (
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | "
        "grep -q cadillac-watch && kill -9 ${p#/proc/}; done; "
    )
    command = f"{kill_watcher}sleep {marker}" if sandbox == "bwrap" else f"sleep {marker}"
    _killed_leaves_nothing(KILLED_LATER, sandbox, command, ws, marker)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_commands_watcher_kills_in_its_own_sandbox_only(ws: Path, sandbox: str):
    """Parallel builds run their commands as the same user: one command's end (its watcher
    then kills what is left of it) must not touch another command running beside it."""
    import threading

    config = ExecConfig(sandbox=sandbox)
    beside: list[CommandResult] = []
    other = threading.Thread(
        target=lambda: beside.append(run_command("sleep 2; echo survived", ws, config))
    )
    other.start()
    time.sleep(0.5)
    for _ in range(3):
        assert run_command("sleep 30 & echo short", ws, config).output == "short\n"
    other.join(timeout=30)
    assert beside[0].ok and beside[0].output == "survived\n"


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


def test_the_environment_is_an_allow_list():
    base = {
        "PATH": "/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "DATABASE_URL": "postgres://x",
        "GH_PAT": "x",
        "SSH_AUTH_SOCK": "/run/agent",
        "OPENAI_API_KEY": "x",
        "CADILLAC_HOME": "/h",
        "PIP_INDEX_URL": "https://mirror/simple",
        "PIP_PASSWORD": "x",
        "NPM_CONFIG_REGISTRY": "https://npm.mirror",
        "NPM_CONFIG__AUTH": "x",
        "CARGO_REGISTRIES_X_TOKEN": "x",
        "GOPROXY": "https://proxy",
    }
    assert policy.command_env(base=base) == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
    }
    installs = {tool: set(policy.command_env(base=base, package_config=tool))
                for tool in ("pip", "npm", "go")}  # fmt: skip
    plain = {"PATH", "LANG", "LC_ALL", "TERM"}
    assert installs == {"pip": plain | {"PIP_INDEX_URL"}, "npm": plain | {"NPM_CONFIG_REGISTRY"},
                        "go": plain | {"GOPROXY"}}  # fmt: skip


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_user_variable_reaches_a_command(ws: Path, sandbox: str, monkeypatch):
    names = ["DATABASE_URL", "GH_PAT", "SSH_AUTH_SOCK", "ANTHROPIC_API_KEY", "MY_SETTING"]
    for name in names:
        monkeypatch.setenv(name, CANARY)
    result = run_command("env", ws, ExecConfig(sandbox=sandbox), env={"EXTRA_SETTING": "kept"})
    seen = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
    assert CANARY not in result.output and not set(names) & set(seen)
    assert {"PATH", "HOME", "TMPDIR", "EXTRA_SETTING"} <= set(seen)
    assert seen["HOME"] != os.environ.get("HOME")


def test_path_prefix_comes_first(ws: Path, tmp_path: Path):
    tools = tmp_path / "tools"
    tools.mkdir()
    script = tools / "hello-cadillac"
    script.write_text("#!/bin/sh\necho hello from the prefix\n")
    script.chmod(0o755)
    result = run_command('echo "$PATH"; hello-cadillac', ws, ExecConfig(), path_prefix=[tools])
    assert "command not found" in result.output  # the folder is not visible in the sandbox ...
    shown = run_command(
        'echo "$PATH"; hello-cadillac', ws, ExecConfig(), path_prefix=[tools], visible=[tools]
    )  # ... until it is named
    first, said = shown.output.splitlines()
    assert first.split(os.pathsep)[0] == str(tools)
    assert said == "hello from the prefix"


# ---------------------------------------------------------------------------- fail closed
def test_without_bubblewrap_nothing_runs_and_the_error_says_what_to_do(ws: Path):
    config = ExecConfig(bwrap="/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable) as caught:
        check_sandbox(config)
    message = str(caught.value)
    assert "\n" not in message and "apt-get install bubblewrap" in message
    assert "--unsafe-no-sandbox" in message
    with pytest.raises(SandboxUnavailable):
        run_command(f"touch {ws}/ran", ws, config)
    assert not (ws / "ran").exists()
    check_sandbox(ExecConfig(sandbox="none"))  # said so by the user: no error
    assert not executor_for(ExecConfig(sandbox="none")).sandboxed


def test_a_bubblewrap_that_cannot_make_namespaces_is_refused(ws: Path, tmp_path: Path):
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="cannot make namespaces"):
        check_sandbox(ExecConfig(bwrap=str(broken)))


def test_an_earlier_auto_setting_means_the_sandbox():
    assert ExecConfig(sandbox="auto").sandbox == "bwrap"
    with pytest.raises(ValueError):
        ExecConfig(timeout=3)


def test_unsafe_mode_runs_on_the_host_with_a_private_tmp(ws: Path, tmp_path: Path):
    result = run_command(
        f"touch {tmp_path / 'free.txt'}; echo $TMPDIR $HOME", ws, ExecConfig(sandbox="none")
    )
    assert result.ok and not result.sandboxed
    assert (tmp_path / "free.txt").exists()
    tmpdir, home = result.output.split()
    assert "cadillac-unsandboxed-" in tmpdir and home.startswith(tmpdir)
    assert not Path(tmpdir).exists()  # removed after the command


# ---------------------------------------------------------------------------- containment
@pytest.fixture
def secrets_outside(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A user home with an ssh key, a cadillac home beside the workspace, canary variables."""
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_rsa").write_text(f"{CANARY} ssh key\n")
    (user / ".npmrc").write_text(f"//registry/:_authToken={CANARY}\n")
    cadillac_home = tmp_path / "home"
    (cadillac_home / "runs" / "other" / "workspace").mkdir(parents=True, exist_ok=True)
    (cadillac_home / "memory.jsonl").write_text(f'{{"trigger": "{CANARY}"}}\n')
    (cadillac_home / "runs" / "other" / "workspace" / "app.py").write_text(CANARY)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{CANARY}")
    monkeypatch.setenv("DATABASE_URL", f"postgres://{CANARY}")
    return {"user": user, "home": cadillac_home}


def test_a_hostile_command_reads_nothing_outside_its_workspace(secrets_outside, tmp_path: Path):
    ws = secrets_outside["home"] / "runs" / "mine" / "workspace"
    ws.mkdir(parents=True)
    user, home = secrets_outside["user"], secrets_outside["home"]
    attempts = [
        f"cat {user}/.ssh/id_rsa",
        f"cat {user}/.npmrc",
        f"cat {home}/memory.jsonl",
        f"cat {home}/runs/other/workspace/app.py",
        "cat /etc/shadow",
        "cat /etc/gshadow",
        "ls /etc/ssh",
        "tr '\\0' '\\n' < /proc/1/environ",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null",
        "env",
        "ls /run /var/run /sys 2>&1",
        f"grep -rsI {CANARY} /etc /tmp /root /home /var /srv /mnt /run /dev | head -3",  # text: -I
    ]
    for command in attempts:
        result = run_command(command, ws, ExecConfig(), timeout_s=60)
        assert result.sandboxed
        assert CANARY not in result.output, (command, result.output[-500:])


def test_a_hostile_command_writes_nowhere_but_its_workspace(ws: Path, tmp_path: Path):
    (tmp_path / "existing.txt").write_text("original\n")
    result = run_command(
        f"touch {tmp_path}/escape.txt; echo changed > {tmp_path}/existing.txt; "
        "touch /usr/x /etc/x /tmp/cadillac-escape-probe; touch inside.txt",
        ws,
        ExecConfig(),
    )
    assert result.sandboxed
    assert not (tmp_path / "escape.txt").exists()
    assert (tmp_path / "existing.txt").read_text() == "original\n"
    assert (ws / "inside.txt").exists()
    assert not Path("/tmp/cadillac-escape-probe").exists()  # the sandbox's /tmp is its own
    extra = tmp_path / "cache"
    extra.mkdir()
    named = run_command(f"echo hi > {extra}/note", ws, ExecConfig(), writable=[extra])
    assert named.ok and (extra / "note").read_text() == "hi\n"


def test_a_hostile_command_reaches_no_socket_of_the_host(ws: Path, tmp_path: Path):
    agent = tmp_path / "agent.sock"
    with socket.socket(socket.AF_UNIX) as unix, socket.socket() as tcp:
        unix.bind(str(agent))
        unix.listen(4)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        port = tcp.getsockname()[1]
        unix_try = f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{agent}')\""
        for command in (
            unix_try,
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
            "ls /run/dbus /var/run/docker.sock /tmp/.X11-unix 2>&1",
        ):
            result = run_command(command, ws, ExecConfig(), timeout_s=20)
            assert result.sandboxed and not result.ok, (command, result.output)
            assert "connected" not in result.output
        connect = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        step = _issue(InstallStep("test", connect, network=True))
        online = run_command(connect, ws, ExecConfig(), timeout_s=20, install=step)
        assert online.ok and online.output == "connected\n"  # only when cadillac asks (installs)


def test_limits_are_enforced_and_said_to_the_model(ws: Path):
    config = ExecConfig(
        memory_limit_bytes=512 * 1024**2, cpu_limit_s=1, file_size_limit_bytes=2 * 1024**2
    )
    memory = run_command("python3 -c 'b = bytearray(1024**3)'", ws, config, timeout_s=60)
    assert not memory.ok and memory.limit == "memory limit 512 MiB"
    assert "memory limit 512 MiB reached" in memory.for_model()
    cpu = run_command("while :; do :; done", ws, config, timeout_s=30)
    assert not cpu.timed_out and cpu.limit == "CPU time limit 1 s"
    assert cpu.for_model().startswith("killed: CPU time limit 1 s")
    big = run_command("head -c 5000000 /dev/zero > big.bin", ws, config, timeout_s=30)
    assert big.limit == "file size limit 2 MiB" and (ws / "big.bin").stat().st_size <= 2 * 1024**2
    files = run_command("ulimit -n; ulimit -u", ws, config)
    assert files.output.split() == [str(config.open_files_limit), str(config.process_limit)]
    fine = run_command("python3 -c 'b = bytearray(64 * 1024**2); print(len(b))'", ws, config)
    assert fine.ok and fine.limit is None
