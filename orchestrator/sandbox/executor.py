"""Shell commands the model runs, inside the workspace, with a time limit and capped output.

What this module decides, and why:

* A command is ``bash -c`` in the workspace, stdin from ``/dev/null`` (a prompt
  for input fails instead of hanging) and stdout and stderr merged in one pipe,
  so the model reads them in the order they were written.
* The environment is scrubbed of credentials and of the variables LLM libraries
  read, so code the model writes cannot spend our keys or reach our provider.
* The command runs in its own process group. At its time limit the whole group
  gets SIGTERM, then SIGKILL after a grace period; what it printed so far is
  still returned. When the command ends, processes it left behind in the
  background are killed too: a tool call leaves nothing running.
* Output is read as it comes, keeping only a head and a tail, so a command that
  prints gigabytes costs a couple of caps of memory; every byte is still counted.
* Where bubblewrap exists the command runs in a sandbox: the whole file system
  read-only except the workspace (and paths named writable) and a private
  ``TMPDIR`` removed afterwards (``/tmp`` itself stays visible, read-only: a
  tmpfs over it would hide interpreters and homes that live there), no network
  unless asked for (dependency installs), and its own PID namespace, so killing
  the sandbox kills everything started inside it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
PROVIDER_PREFIXES = (
    "OPENAI_",
    "ANTHROPIC_",
    "AZURE_",
    "AWS_",
    "GOOGLE_",
    "GEMINI_",
    "VERTEX",
    "COHERE_",
    "MISTRAL_",
    "GROQ_",
    "DEEPSEEK_",
    "OPENROUTER_",
    "TOGETHER",
    "HF_",
    "HUGGINGFACE",
    "REPLICATE_",
    "LITELLM_",
    "OLLAMA_",
)
PROVIDER_NAMES = frozenset({"CADILLAC_MODEL", "CADILLAC_API_BASE"})
DRAIN_S = 1.0  # after the command ends, how long to wait for a pipe an escaped process holds


class ExecConfig(BaseModel):
    """How the model's shell commands run."""

    model_config = ConfigDict(extra="forbid")

    default_timeout_s: float = 120
    """Time limit of a command that names none."""
    max_timeout_s: float = 900
    """The longest time limit a command may ask for."""
    output_cap_bytes: int = 20_000
    """Output kept for the model: the first half and the last half of this many bytes."""
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    """``bwrap`` requires bubblewrap; ``auto`` uses it when it is installed and works."""
    kill_grace_s: float = 2.0
    """Seconds between SIGTERM and SIGKILL when a command runs past its time limit."""


class CommandResult(BaseModel):
    """What one command did: its exit status, capped output and how long it took."""

    command: str
    exit_code: int | None
    """None when the command was killed at its time limit; negative for a fatal signal."""
    timed_out: bool
    output: str
    output_bytes: int
    seconds: float
    sandboxed: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def for_model(self) -> str:
        """The exit status (or the time-out), then the output."""
        if self.timed_out:
            status = f"timed out after {self.seconds:.0f} s (the command was killed)"
        elif self.exit_code is not None and self.exit_code < 0:
            status = f"killed by signal {signal.Signals(-self.exit_code).name}"
        else:
            status = f"exit status {self.exit_code}"
        return f"{status}\n{self.output or '(no output)'}"


def scrubbed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: os.environ) without credentials and LLM provider settings."""
    env = dict(os.environ if base is None else base)
    return {
        name: value
        for name, value in env.items()
        if not any(word in name.upper() for word in SECRET_WORDS)
        and not name.upper().startswith(PROVIDER_PREFIXES)
        and name.upper() not in PROVIDER_NAMES
    }


@functools.cache
def _bwrap_works(bwrap: str) -> bool:
    """Whether bubblewrap can make namespaces here (some containers forbid it)."""
    probe = [bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _bwrap_argv(
    bwrap: str, command: str, cwd: Path, writable: Sequence[Path], net: bool
) -> list[str]:
    # The whole file system is visible read-only (a tmpfs over /tmp would hide interpreters and
    # homes that live under /tmp); the workspace and a private TMPDIR are the writable places.
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--bind", str(cwd), str(cwd)]
    for path in writable:
        argv += ["--bind-try", str(path), str(path)]
    if not net:
        argv.append("--unshare-net")
    argv += ["--unshare-pid", "--die-with-parent", "--new-session", "--chdir", str(cwd)]
    return argv + ["--", "bash", "-c", command]


class _Capped:
    """Keeps the first half and the last half of ``cap`` bytes and counts them all."""

    def __init__(self, cap: int):
        self.cap, self.half = cap, cap // 2
        self.head, self.tail = bytearray(), bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > 2 * self.cap:
            del self.tail[: len(self.tail) - self.cap]

    def text(self) -> str:
        if self.total <= self.cap:
            return (self.head + self.tail).decode("utf-8", "replace")
        keep = self.tail[len(self.tail) - (self.cap - self.half) :]
        cut = self.total - len(self.head) - len(keep)
        head = self.head.decode("utf-8", "replace")
        return f"{head}\n[... {cut:,} bytes cut ...]\n{keep.decode('utf-8', 'replace')}"


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_command(
    command: str,
    cwd: Path,
    config: ExecConfig,
    timeout_s: float | None = None,
    path_prefix: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    network: bool = False,
    writable: Sequence[Path] = (),
) -> CommandResult:
    """Run ``bash -c command`` in ``cwd``; never raises for what the command itself does."""
    cwd = Path(cwd).resolve()
    timeout = min(timeout_s or config.default_timeout_s, config.max_timeout_s)
    bwrap = shutil.which("bwrap")
    if config.sandbox == "bwrap" and bwrap is None:
        raise RuntimeError(
            "sandbox is 'bwrap' but bubblewrap is not installed; install it (apt-get install "
            "bubblewrap) or set the executor's sandbox to 'auto' or 'none'"
        )
    sandboxed = bwrap is not None and (
        config.sandbox == "bwrap" or (config.sandbox == "auto" and _bwrap_works(bwrap))
    )
    run_env = scrubbed_env()
    if path_prefix:
        run_env["PATH"] = os.pathsep.join([*map(str, path_prefix), run_env.get("PATH", "")])
    run_env.update(env or {})
    argv = ["bash", "-c", command]
    private_tmp = None
    if sandboxed:
        private_tmp = tempfile.mkdtemp(prefix="cadillac-sandbox-")
        run_env["TMPDIR"] = private_tmp
        writable = [*writable, Path(private_tmp)]
        argv = _bwrap_argv(bwrap, command, cwd, writable, network)
    try:
        return _supervise(argv, command, cwd, run_env, timeout, config, sandboxed)
    finally:
        if private_tmp is not None:
            shutil.rmtree(private_tmp, ignore_errors=True)


def _supervise(argv, command, cwd, run_env, timeout, config, sandboxed) -> CommandResult:
    """Run argv in its own process group, reading its output under the cap, killing on timeout."""

    out = _Capped(config.output_cap_bytes)
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=run_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    timed_out = eof = False
    kill_at = ended_at = None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if ended_at is None and proc.poll() is not None:
                ended_at = now
                _signal_group(proc.pid, signal.SIGKILL)  # what it left running in the background
            if ended_at is not None and (eof or now - ended_at > DRAIN_S):
                break  # past DRAIN_S, a process that left the group holds the pipe
            if ended_at is None and not timed_out and now - start >= timeout:
                timed_out, kill_at = True, now + config.kill_grace_s
                _signal_group(proc.pid, signal.SIGTERM)
            if ended_at is None and kill_at is not None and now >= kill_at:
                _signal_group(proc.pid, signal.SIGKILL)
                kill_at = float("inf")
            if eof:
                time.sleep(0.02)
            elif sel.select(timeout=0.05):
                eof = not _read_into(fd, out)
    proc.stdout.close()
    proc.wait()
    return CommandResult(
        command=command,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        output=out.text(),
        output_bytes=out.total,
        seconds=round(time.monotonic() - start, 3),
        sandboxed=sandboxed,
    )


def _read_into(fd: int, out: _Capped) -> bool:
    """Read what is ready; False at end of output."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    if not chunk:
        return False
    out.add(chunk)
    return True
