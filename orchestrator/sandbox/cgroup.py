"""A memory cgroup for each command, where the host lets cadillac make one.

What this module decides, and why:

* **Why a cgroup.** A per-process limit cannot hold a command's memory. The address-space
  limit (``ulimit -v``) also counts address space that was reserved but never used, so
  V8 cannot reserve WebAssembly memory under it and Node tools that load wasm fail. The
  data limit (``ulimit -d``), which the executor sets instead, does not count memory
  mapped *shared* (``mmap(MAP_SHARED | MAP_ANONYMOUS)``, Python's ``mmap.mmap(-1, n)``).
  A hostile command can use that to take all of the host's memory. A memory cgroup
  counts every page each process of the command touches, shared or not, and the kernel
  kills the command when the total passes the limit.
* **Where.** cgroup v1 puts its memory controller at ``/sys/fs/cgroup/memory``, and
  cadillac's cgroup there comes from ``/proc/self/cgroup``. cgroup v2 uses cadillac's
  own cgroup in the unified tree, which must have the memory controller delegated. Each
  command gets a child ``cadillac-<pid>-<n>`` holding the limit: memory, plus swap where
  the host accounts it. :func:`available` tries this once per process: it makes a child,
  moves a shell into it and removes it. Inside an improve trial's sandbox, or on a host
  that delegates nothing, there is no cgroup, and the data limit is all that remains.
* **Joining before the command runs.** The command is started through ``sh -c 'echo $$ >
  <cgroup.procs> && exec "$@"'``, so the process joins its cgroup before it execs
  bubblewrap. If the write fails, the command does not run: this fails closed.
* **After.** When the command ends, everything left in the cgroup is killed and the cgroup
  is removed. :func:`oom_kills` tells whether the kernel killed something for memory, so
  the run can say "memory limit reached". Children left behind by a cadillac that was
  killed, and anything still running in them, are removed the next time
  :func:`available` runs.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import CadillacError

ROOT = Path("/sys/fs/cgroup")
PREFIX = "cadillac-"
JOIN = 'echo $$ > "$1" && shift && exec "$@"'
"""Run by ``sh``: join the cgroup whose ``cgroup.procs`` is ``$1``, then exec the command."""
SH = shutil.which("sh") or "/bin/sh"

_counter = itertools.count()


@dataclass(frozen=True)
class Cgroup:
    """One command's cgroup."""

    path: Path
    version: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv``, started inside this cgroup."""
        return [SH, "-c", JOIN, "cadillac-join", str(self.procs), *argv]

    def oom_kills(self) -> int:
        """How many processes the kernel killed here for passing the limit."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        with contextlib.suppress(OSError):
            found = re.search(r"^oom_kill (\d+)$", (self.path / name).read_text(), re.M)
            return int(found.group(1)) if found else 0
        return 0

    def peak_bytes(self) -> int | None:
        """The most memory the command held at once, where the host records it."""
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        with contextlib.suppress(OSError, ValueError):
            return int((self.path / name).read_text())
        return None

    def pids(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(p) for p in self.procs.read_text().split()]
        return []

    def remove(self, wait_s: float = 2.0) -> None:
        """Kill what is left in the cgroup and remove it (quietly, if it cannot be)."""
        deadline = time.monotonic() + wait_s
        while True:
            left = self.pids()
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.002)


def _own_cgroups() -> dict[str, str]:
    """``{controller or '' for v2: cadillac's cgroup path}`` from ``/proc/self/cgroup``."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    return found


def _parents() -> list[tuple[Path, int]]:
    """Where children with a memory limit could be made, in the order to try them."""
    own = _own_cgroups()
    tried: list[tuple[Path, int]] = []
    if "memory" in own and (ROOT / "memory").is_dir():
        tried.append((ROOT / "memory" / own["memory"].lstrip("/"), 1))
    if "" in own:
        for base in (ROOT, ROOT / "unified"):
            if (base / "cgroup.controllers").is_file():
                tried.append((base / own[""].lstrip("/"), 2))
                break
    return tried


def _make(parent: Path, version: int, limit_bytes: int) -> Cgroup:
    """A new child of ``parent`` holding ``limit_bytes`` (OSError where it cannot be)."""
    path = parent / f"{PREFIX}{os.getpid()}-{next(_counter)}"
    path.mkdir(mode=0o755)
    group = Cgroup(path, version)
    try:
        if version == 1:
            (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():  # memory and swap together: swap is no way around the limit
                swap.write_text(str(limit_bytes))
        else:
            (path / "memory.max").write_text(str(limit_bytes))
            swap = path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
    except OSError:
        group.remove(wait_s=0)
        raise
    return group


def _sweep(parent: Path, version: int) -> None:
    """Remove the children that cadillac processes which no longer live left behind, and
    kill what still runs in them (a command the kernel's parent-death signal missed)."""
    with contextlib.suppress(OSError):
        for child in parent.glob(f"{PREFIX}*"):
            pid = child.name.removeprefix(PREFIX).split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                Cgroup(child, version).remove(wait_s=0.5)


@functools.cache
def _parent() -> tuple[Path, int] | None:
    for parent, version in _parents():
        try:
            _sweep(parent, version)
            group = _make(parent, version, 64 * 1024**2)
        except OSError:
            continue
        try:
            joined = subprocess.run(
                group.join_argv(["sh", "-c", "cat /proc/self/cgroup"]),
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            joined = None
        finally:
            group.remove()
        if joined is not None and joined.returncode == 0 and group.path.name in joined.stdout:
            return parent, version
    return None


def available() -> bool:
    """Whether commands get a memory cgroup on this host (tried once per process)."""
    return _parent() is not None


@contextlib.contextmanager
def memory_cgroup(limit_bytes: int, enabled: bool = True):
    """A cgroup holding ``limit_bytes`` for one command, removed after; None where the host
    gives none (or ``enabled`` is False)."""
    found = _parent() if enabled else None
    group = None
    if found is not None:  # the host gives cgroups: a command never runs without its own
        try:
            group = _make(*found, limit_bytes)
        except OSError as exc:
            raise CadillacError(f"cannot make the command's memory cgroup: {exc}") from None
    try:
        yield group
    finally:
        if group is not None:
            group.remove()
