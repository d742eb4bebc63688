"""Running a command the model wrote: in a sandbox that fails closed, with limits, capped output.

What this module decides, and why:

* **Fail closed.** Every command runs inside bubblewrap (:class:`Bubblewrap`) with what
  :mod:`orchestrator.sandbox.policy` names and nothing else. Where bubblewrap is missing
  or cannot make namespaces, :func:`check_sandbox` says so in one line before a build
  starts and :meth:`Bubblewrap.run` refuses. Only ``sandbox="none"`` (the user's
  ``--unsafe-no-sandbox``) runs commands without one (:class:`Unsandboxed`), still with
  the scrubbed environment, the limits and a private ``TMPDIR``/``HOME``.
* **Namespaces**: no network, IPC, PID or UTS sharing with the host (the network
  only when the caller asks, for cadillac's own dependency installs), a new session,
  an unprivileged user with every capability dropped (:mod:`orchestrator.sandbox.identity`:
  as root, a real unprivileged host user, never a namespace's root), and the sandbox dies
  with cadillac, however cadillac dies (:func:`_lifeline`). Inside another
  bubblewrap sandbox (an improve trial), where a fresh ``/proc`` cannot be mounted, the
  outer sandbox's ``/proc`` is bound read-only instead: :func:`probe` finds which works.
* **Limits** per command (:class:`ExecConfig`): memory (4 GiB), file size, CPU
  time, open files and processes, set with ``ulimit`` before the command starts (the
  process limit binds because the command's host user is never root). Memory is a data
  limit per process (``ulimit -d``), not an address-space limit, which refuses the
  reservations V8 makes for WebAssembly, so Node tools that load wasm would fail. Where
  the host gives one, the command also runs in a memory cgroup of its own
  (:mod:`orchestrator.sandbox.cgroup`), which counts every page of every process,
  including memory mapped shared, which the data limit does not count. Its ``/tmp`` and
  ``/dev/shm`` are tmpfs of a fixed size (1 GiB), not half of RAM. After each command the
  workspace is measured against its limits (:mod:`orchestrator.sandbox.footprint`). A
  limit that was hit is said to the model as such and named in the record:
  ``killed: CPU time limit 900 s``, ``memory limit 4 GiB reached``, ``limit reached:
  workspace holds 200,001 files, the limit is 200,000``.
* A command is ``bash -c`` in the working folder, stdin from ``/dev/null`` (a prompt for
  input fails instead of hanging), stdout and stderr merged in one pipe, so the model
  reads them in the order they were written. It runs in its own process group: at its
  time limit the group gets SIGTERM, then SIGKILL after a grace period; what it printed
  is still returned; when it ends, what it left running is killed too.
* Output is read as it comes, keeping only a head and a tail, so a command that prints
  gigabytes costs a couple of caps of memory; every byte is still counted.
* :class:`Executor` is the protocol the rest of cadillac uses (run this command here,
  with these limits, network or not), so another back end (a container) can be added
  without touching the build loop.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.errors import CadillacError
from orchestrator.sandbox import cgroup, footprint, identity, policy, venvs
from orchestrator.sandbox.footprint import GIB, WorkspaceLimits, human_bytes
from orchestrator.sandbox.installs import InstallStep, check_issued

DRAIN_S = 1.0  # after the command ends, how long to wait for a pipe an escaped process holds
INSTALL_HINT = (
    "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) or, to run "
    "model-written commands without a sandbox at your own risk, pass --unsafe-no-sandbox"
)


class SandboxUnavailable(CadillacError):
    """Commands cannot be sandboxed here, and the user did not say to run them without one."""


class ExecConfig(BaseModel):
    """How the model's shell commands run."""

    model_config = ConfigDict(extra="forbid")

    default_timeout_s: float = 120
    """Time limit of a command that names none."""
    max_timeout_s: float = 900
    """The longest time limit a command may ask for."""
    output_cap_bytes: int = 20_000
    """Output kept for the model: the first half and the last half of this many bytes."""
    sandbox: Literal["bwrap", "none"] = "bwrap"
    """``bwrap``: every command in a bubblewrap sandbox, none without one; ``none``: no
    sandbox at all (``--unsafe-no-sandbox``)."""
    bwrap: str = "bwrap"
    """The bubblewrap program (a name on PATH or a path)."""
    kill_grace_s: float = 2.0
    """Seconds between SIGTERM and SIGKILL when a command runs past its time limit."""
    memory_limit_bytes: int = Field(default=4 * GIB, ge=64 * 1024**2)
    """Data (heap and private mappings) of each process of a command; with a memory cgroup,
    all the command's processes together may hold this plus ``tmp_size_bytes``."""
    memory_cgroup: bool = True
    """Run each command in a memory cgroup of its own where the host gives one."""
    cgroup_bytes: int | None = Field(default=None, ge=64 * 1024**2)
    """What all the processes of a command may hold together in its cgroup; None: one
    process's memory and its tmpfs pages (:meth:`cgroup_room`)."""
    file_size_limit_bytes: int = Field(default=2 * GIB, ge=1024**2)
    """Largest file a command may write."""
    cpu_limit_s: int = Field(default=1800, ge=1)
    """CPU seconds of each process of a command."""
    open_files_limit: int = Field(default=1024, ge=16)
    process_limit: int = Field(default=4096, ge=8)
    """Processes (threads included) of the command's host user at once: every sandboxed
    command of a root cadillac is the same user, so they count together, and parallel
    builds whose Chromium, node and esbuild start dozens of threads each reached 1024."""
    tmp_size_bytes: int = Field(default=GIB, ge=1024**2)
    """Size of each command's ``/tmp`` (its HOME is there) and of its ``/dev/shm``."""
    sandbox_uid: int = Field(default=identity.NOBODY, ge=1)
    """The host user sandboxed commands run as when cadillac runs as root."""
    sandbox_gid: int = Field(default=identity.NOBODY, ge=1)
    workspace: WorkspaceLimits = Field(default_factory=WorkspaceLimits)
    """How much a workspace may hold, checked after each command and on every tool write."""
    toolchains: list[str] = Field(default_factory=lambda: list(policy.TOOLCHAINS))
    """Programs whose install folders commands may use (besides cadillac's interpreter)."""

    def cgroup_room(self) -> int:
        """The memory limit of a command's cgroup."""
        return self.cgroup_bytes or self.memory_limit_bytes + self.tmp_size_bytes

    @field_validator("sandbox", mode="before")
    @classmethod
    def _auto_is_bwrap(cls, value: object) -> object:
        return "bwrap" if value == "auto" else value  # earlier configs said auto: fail closed


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
    limit: str | None = None
    """The limit the command hit (``CPU time limit 900 s``, ``memory limit 4 GiB``,
    ``workspace holds 1,001 files, the limit is 1,000``)."""
    stopped: bool = False
    """cadillac was stopped (Ctrl-C, SIGTERM, a cap) and killed the command."""

    @property
    def ok(self) -> bool:
        full = (self.limit or "").startswith("workspace holds")
        return self.exit_code == 0 and not self.timed_out and not self.stopped and not full

    def for_model(self) -> str:
        """The exit status (or the time-out, or the limit hit), then the output."""
        code = self.exit_code
        if self.stopped:
            status = "stopped: cadillac was interrupted and killed the command"
        elif self.timed_out:
            status = f"timed out after {self.seconds:.0f} s (the command was killed)"
        elif self.limit and self.limit.startswith("workspace holds"):
            status = (
                f"limit reached: {self.limit}; delete files before writing more "
                f"(exit status {code})"
            )
        elif self.limit and code is not None and (code < 0 or code > 128):
            status = f"killed: {self.limit}"
        elif self.limit:
            status = f"exit status {code}: {self.limit} reached"
        elif code is not None and code < 0:
            status = f"killed by signal {signal.Signals(-code).name}"
        else:
            status = f"exit status {code}"
        return f"{status}\n{self.output or '(no output)'}"


class Executor(Protocol):
    """Runs one command in a folder, with the configured limits, with or without network."""

    sandboxed: bool

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float | None = None,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        path_prefix: Sequence[Path] = (),
        visible: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        package_config: str = "",
        stop: threading.Event | None = None,
    ) -> CommandResult: ...


# ---------------------------------------------------------------------------- bubblewrap
PROBE_MOUNTS = ["--ro-bind", "/usr", "/usr", "--dev", "/dev"]


def probe(bwrap: str) -> tuple[str | None, str]:
    """How bubblewrap can run here: ("mount" | "bind", "") or (None, why it cannot)."""
    program = shutil.which(bwrap)
    if program is None:
        return None, f"bubblewrap ({bwrap}) is not installed"
    return _probe(program, identity.as_root())


@functools.cache
def _probe(program: str, root: bool) -> tuple[str | None, str]:
    links = [
        a
        for top in policy.TOP_LINKS
        if os.path.islink(top)
        for a in ("--symlink", os.readlink(top), top)
    ]
    why = ""
    for mode, proc in (("mount", ["--proc", "/proc"]), ("bind", ["--ro-bind", "/proc", "/proc"])):
        argv = [program, *identity.bwrap_args(root), "--die-with-parent", *links, *PROBE_MOUNTS]
        argv += [*proc, "--", *identity.command_prefix(root, identity.NOBODY, identity.NOBODY)]
        argv.append("true")
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"bubblewrap cannot run: {exc}"
        if done.returncode == 0:
            return mode, ""
        why = (
            why or (done.stderr.strip().splitlines() or ["exit status " + str(done.returncode)])[0]
        )
    return None, f"bubblewrap cannot make namespaces here ({why})"


def check_sandbox(config: ExecConfig) -> None:
    """Raise SandboxUnavailable (one line: what is wrong and what to do) unless commands
    can run as configured."""
    if config.sandbox == "none":
        return
    mode, why = probe(config.bwrap)
    if mode is None:
        raise SandboxUnavailable(f"{why}: {INSTALL_HINT}")


class Bubblewrap:
    """Every command in a fresh bubblewrap sandbox (see the module docstring)."""

    sandboxed = True

    def __init__(self, config: ExecConfig):
        self.config = config

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float | None = None,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        path_prefix: Sequence[Path] = (),
        visible: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        package_config: str = "",
        stop: threading.Event | None = None,
    ) -> CommandResult:
        check_sandbox(self.config)
        mode, _ = probe(self.config.bwrap)
        cwd = Path(cwd).resolve()
        run_env = _environment(path_prefix, env, package_config, policy.SANDBOX_HOME, "/tmp")
        toolchains = policy.toolchain_roots(self.config.toolchains)  # the host PATH, not run_env
        run_env = {**policy.toolchain_env(toolchains), **run_env}
        root, uid, gid = identity.as_root(), self.config.sandbox_uid, self.config.sandbox_gid
        if root:  # the command is an unprivileged host user: it must be able to write these
            identity.hand_over([cwd, *(Path(w).resolve() for w in writable)], uid, gid)
        argv = [shutil.which(self.config.bwrap) or self.config.bwrap, *identity.bwrap_args(root)]
        if not {"--unshare-pid", "--unshare-all"} & set(argv):  # the watcher kills -1 in it
            raise SandboxUnavailable("the sandbox would share the host's PID namespace")
        if network:
            argv.append("--share-net")
        argv += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
        with _private_configs(package_config if root else "", uid, gid) as sources:
            argv += policy.mounts(
                cwd,
                proc=mode or "mount",
                toolchains=toolchains,
                visible=[*visible, *venvs.support_dirs()],  # pip for the project's .venv
                writable=writable,
                package_config=package_config,
                config_sources=sources,
                tmp_size=self.config.tmp_size_bytes,
            )
            argv += ["--chdir", str(cwd), "--", *identity.command_prefix(root, uid, gid)]
            timeout = _timeout(timeout_s, self.config)
            return _supervise(argv, "namespace", command, cwd, run_env, timeout, self, stop)


@contextlib.contextmanager
def _private_configs(package_config: str, uid: int, gid: int):
    """Private copies, readable by the sandbox's user only, of the install program's
    configuration files that user could not read (a root user's ``~/.npmrc`` is 0600):
    ``{where the sandbox sees it: the copy}``, removed when the step ends. The files
    others may read are bound as they are."""
    hidden = [
        (source, dest)
        for source, dest in policy.package_config_files(package_config)
        if source.is_file() and not source.stat().st_mode & 0o004
    ]
    if not hidden:
        yield {}
        return
    folder = Path(tempfile.mkdtemp(prefix="cadillac-config-"))  # 0700, the host user's
    try:
        copies = {}
        for n, (source, dest) in enumerate(hidden):
            copy = folder / str(n)
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
            with os.fdopen(fd, "wb") as out:
                out.write(source.read_bytes())
            os.chown(copy, uid, gid)
            copies[dest] = copy
        yield copies
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Unsandboxed:
    """Commands straight on the host (``--unsafe-no-sandbox``): the environment, limits and
    a private TMPDIR and HOME still apply, but the file system and network are the host's."""

    sandboxed = False

    def __init__(self, config: ExecConfig):
        self.config = config

    def run(
        self,
        command: str,
        cwd: Path,
        *,
        timeout_s: float | None = None,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        path_prefix: Sequence[Path] = (),
        visible: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        package_config: str = "",
        stop: threading.Event | None = None,
    ) -> CommandResult:
        cwd = Path(cwd).resolve()
        scratch = tempfile.mkdtemp(prefix="cadillac-unsandboxed-")
        try:
            home = Path(scratch, "home")
            home.mkdir()
            run_env = _environment(path_prefix, env, package_config, str(home), scratch)
            timeout = _timeout(timeout_s, self.config)
            return _supervise([], "group", command, cwd, run_env, timeout, self, stop)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def executor_for(config: ExecConfig) -> Executor:
    return Unsandboxed(config) if config.sandbox == "none" else Bubblewrap(config)


def run_command(
    command: str,
    cwd: Path,
    config: ExecConfig,
    timeout_s: float | None = None,
    path_prefix: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    writable: Sequence[Path] = (),
    visible: Sequence[Path] = (),
    stop: threading.Event | None = None,
    install: InstallStep | None = None,
) -> CommandResult:
    """Run ``bash -c command`` in ``cwd`` as ``config`` says; never raises for what the
    command itself does (SandboxUnavailable when it cannot be sandboxed). ``stop``, once
    set, kills the command at once (Ctrl-C or SIGTERM of cadillac, a spend cap).

    The network, and one install program's settings, come only from ``install``: a step
    :func:`orchestrator.sandbox.installs.install_steps` issued, whose own command this must
    be (InstallError otherwise, before anything runs). No caller can ask for them by a flag."""
    network, package_config = False, ""
    if install is not None:
        check_issued(install, command)
        network = install.network
        package_config = install.tool if install.network else ""
    return executor_for(config).run(
        command,
        cwd,
        timeout_s=timeout_s,
        network=network,
        env=env,
        path_prefix=path_prefix,
        visible=visible,
        writable=writable,
        package_config=package_config,
        stop=stop,
    )


# ---------------------------------------------------------------------------- shared parts
_WATCH = (
    'fd=$1; if [ "$2" = group ]; then them="-$$"; else them=-1; fi; shift 2; '
    'eval "(read -r _ <&$fd; kill -KILL -- $them) <&- >&- 2>&- &"; '
    'eval "exec $fd<&-"; exec "$@"'
)
"""Run by bash (dash's ``kill`` takes no ``--`` and no negative pid) with ``$1`` the
lifeline's fd and ``$2`` whose processes to kill. The watcher holds no standard stream
open: the command runs as the same user and could open another process's through
``/proc/PID/fd``, and the story driver's tests check that it finds none to write to."""


def _watched(fd: int, them: str, argv: list[str]) -> list[str]:
    """``argv`` with a watcher beside it that kills ``them`` (``namespace``: every process
    of the sandbox's PID namespace; ``group``: the command's process group) when the
    lifeline ``fd`` reads end of file. The command itself never sees the fd."""
    return [BASH, "-c", _WATCH, "cadillac-watch", str(fd), them, *argv]


@contextlib.contextmanager
def _lifeline():
    """A pipe whose write end only this process holds (it is never inherited), for a
    command's watcher to read: end of file comes when this process closes it after the
    command, or when it dies however it dies, SIGKILL included.

    Why not the kernel's parent-death signal alone: bubblewrap sets it (for
    ``--die-with-parent``) only once its sandbox is half made, and relative to its own
    first process. A cadillac killed in the milliseconds before that left the command
    running on, with no parent, no time limit and nobody to stop it. The watcher starts
    after the sandbox is made, so it cannot miss the end of file: if cadillac is already
    gone it reads it at once."""
    read_end, write_end = os.pipe()
    try:
        yield read_end
    finally:
        os.close(read_end)
        os.close(write_end)


def _timeout(timeout_s: float | None, config: ExecConfig) -> float:
    return min(timeout_s or config.default_timeout_s, config.max_timeout_s)


def _environment(path_prefix, env, package_config, home: str, tmp: str) -> dict[str, str]:
    run_env = policy.command_env(package_config=package_config)
    if path_prefix:
        run_env["PATH"] = os.pathsep.join([*map(str, path_prefix), run_env["PATH"]])
    run_env.update(HOME=home, TMPDIR=tmp)
    run_env.update(env or {})
    return run_env


BASH = os.path.realpath(shutil.which("bash") or "/bin/bash")
"""The host's bash, by its full path: the command's PATH starts with folders the project
writes (its ``.venv/bin``), and a ``bash`` planted there would run before the command (a
judge's, whose key file is already in the workspace)."""
LIMITS = (
    "ulimit -d {data_kib} 2>/dev/null; ulimit -f {fsize_kib} 2>/dev/null; "
    "ulimit -H -t {cpu_hard} 2>/dev/null; ulimit -S -t {cpu} 2>/dev/null; "
    "ulimit -n {nofile} 2>/dev/null; ulimit -u {nproc} 2>/dev/null; "
    'exec {bash} -c "$1"'
)
"""Soft CPU limit: SIGXCPU, which says what happened; the hard one kills what ignores it."""


def _limited(command: str, config: ExecConfig) -> list[str]:
    """``bash -c command`` under the configured limits (bash counts -d and -f in KiB)."""
    script = LIMITS.format(
        data_kib=config.memory_limit_bytes // 1024,
        fsize_kib=config.file_size_limit_bytes // 1024,
        cpu=config.cpu_limit_s,
        cpu_hard=config.cpu_limit_s + 5,
        nofile=config.open_files_limit,
        nproc=config.process_limit,
        bash=shlex.quote(BASH),
    )
    return [BASH, "-c", script, "cadillac-command", command]


MEMORY_WORDS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


NO_SPACE = "No space left on device"


def _disk_free(path: Path) -> int:
    with contextlib.suppress(OSError):
        done = os.statvfs(path)
        return done.f_bavail * done.f_frsize
    return 0


def _limit_hit(
    code: int | None, output: str, config: ExecConfig, tmp_of: Path | None, oom_kills: int = 0
) -> str | None:
    """The limit a command's end says it hit; ``tmp_of``: the workspace of a sandboxed
    command (whose /tmp is capped), so a full disk there is not blamed on /tmp;
    ``oom_kills``: what its memory cgroup's limit killed."""
    if oom_kills:  # a process was killed for it, even where the command went on
        return f"memory limit {human_bytes(config.memory_limit_bytes)}"
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return f"CPU time limit {config.cpu_limit_s} s"
    if code in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ):
        return f"file size limit {human_bytes(config.file_size_limit_bytes)}"
    if code not in (0, None) and any(word in output[-4000:] for word in MEMORY_WORDS):
        return f"memory limit {human_bytes(config.memory_limit_bytes)}"
    if tmp_of and code not in (0, None) and NO_SPACE in output[-4000:] and _disk_free(tmp_of) > GIB:
        return f"/tmp size limit {human_bytes(config.tmp_size_bytes)}"
    return None


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


class _HeldSignals:
    """Ctrl-C and SIGTERM held while a command starts, then acted on.

    A KeyboardInterrupt raised inside ``Popen`` after the fork leaves a started command
    with no handle to kill it by. So, in the main thread (the only one Python runs signal
    handlers in), the two signals are only noted while the command starts, and
    :meth:`replay` then runs the handlers they would have run, once the command can be
    killed.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.caught: list[int] = []
        self.saved: dict[int, object] = {}

    def __enter__(self) -> _HeldSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.saved[sig] = signal.signal(sig, lambda n, _f: self.caught.append(n))
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)

    def replay(self) -> None:
        for sig in self.caught:
            handler = self.saved[sig]
            if callable(handler):
                handler(sig, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)


def _supervise(head, them, command, cwd, run_env, timeout, runner, stop=None) -> CommandResult:
    """Run ``command`` under its limits, after ``head`` (bubblewrap's part, or nothing), in
    its own process group, reading its output under the cap, killing on timeout; its
    watcher kills ``them`` (:func:`_watched`) if this process dies."""
    config: ExecConfig = runner.config
    out = _Capped(config.output_cap_bytes)
    start = time.monotonic()
    proc = None
    room = config.cgroup_room()
    with _lifeline() as fd, cgroup.memory_cgroup(room, enabled=config.memory_cgroup) as group:
        argv = [*head, *_watched(fd, them, _limited(command, config))]
        try:
            with _HeldSignals() as held:
                proc = subprocess.Popen(
                    group.join_argv(argv) if group else argv,
                    cwd=cwd,
                    env=run_env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=(fd,),
                )
            held.replay()
            return _watch(proc, command, cwd, timeout, runner, stop, out, start, group)
        except BaseException:  # Ctrl-C or SIGTERM of cadillac itself: the command dies with it
            if proc is not None:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
        finally:
            if proc is not None:
                proc.stdout.close()


def _watch(proc, command, cwd, timeout, runner, stop, out, start, group=None) -> CommandResult:
    config: ExecConfig = runner.config
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    timed_out = eof = stopped = False
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
            if ended_at is None and not stopped and stop is not None and stop.is_set():
                stopped = True
                _signal_group(proc.pid, signal.SIGKILL)
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
    proc.wait()
    code = None if timed_out else proc.returncode
    text = out.text()
    tmp_of = cwd if runner.sandboxed else None
    oom = group.oom_kills() if group is not None else 0
    limit = None if timed_out or stopped else _limit_hit(code, text, config, tmp_of, oom)
    full = footprint.over(footprint.measure(cwd), config.workspace)
    return CommandResult(
        command=command,
        exit_code=code,
        timed_out=timed_out,
        output=text,
        output_bytes=out.total,
        seconds=round(time.monotonic() - start, 3),
        sandboxed=runner.sandboxed,
        limit=full or limit,
        stopped=stopped,
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
