"""A real Ray cluster on this machine for the Ray engine's tests: a head and worker nodes.

Each node is started by ``ray start`` as on a machine of its own: its own temporary folder
and ``HOME``, the address 127.0.0.1, no dashboard, no usage reporting, a token of the
cluster's. Every process of the cluster carries a marker in its environment, so the
cluster is ended by its own process ids (never ``ray stop``, which would end every Ray of
the machine's user).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAY = Path(sys.executable).parent / "ray"
MARKER = "CADILLAC_TEST_RAY_CLUSTER"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    root: Path
    port: int
    token: str
    stall_dir: Path
    nodes: list[str] = field(default_factory=list)
    """Each node's name (its folder under root)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self, node: str, pythonpath: str | None = None) -> dict[str, str]:
        home = self.root / node / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "TMPDIR": str(self.root / node / "tmp"),
            "PYTHONPATH": pythonpath or str(ROOT),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "CADILLAC_TEST_STALL_DIR": str(self.stall_dir),
            MARKER: f"{self.root}:{node}",
        }

    def client_env(self) -> dict[str, str]:
        """What the coordinator's process needs to reach the cluster."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def start_node(self, node: str, head: bool = False, pythonpath: str | None = None) -> None:
        (self.root / node / "tmp").mkdir(parents=True, exist_ok=True)
        argv = [str(RAY), "start", "--node-ip-address=127.0.0.1", "--num-cpus=2"]
        argv += [f"--temp-dir={self.root / node / 'ray'}", "--disable-usage-stats"]
        if head:
            argv += ["--head", f"--port={self.port}", "--include-dashboard=false"]
        else:
            argv += [f"--address={self.address}"]
        done = subprocess.run(
            argv, env=self.env(node, pythonpath), capture_output=True, text=True, timeout=180
        )
        if done.returncode != 0:
            raise RuntimeError(f"ray start ({node}) failed:\n{done.stdout}\n{done.stderr}")
        self.nodes.append(node)

    def pids(self, node: str | None = None) -> list[int]:
        """The processes of this cluster (of one node), by the marker in their environment."""
        want = f"{MARKER}={self.root}:{node}" if node else f"{MARKER}={self.root}:"
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(item.decode(errors="replace").startswith(want) for item in environ):
                found.append(int(entry.name))
        return found

    def stop_node(self, node: str) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.pids(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 10
            while self.pids(node) and time.monotonic() < deadline:
                time.sleep(0.2)
        if node in self.nodes:
            self.nodes.remove(node)

    def stop(self) -> None:
        for node in reversed(list(self.nodes)):
            self.stop_node(node)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)

    def stalls(self, n: int) -> None:
        """Let the next ``n`` builds stall (tests/fakes/stalling.py); clear old slots."""
        for old in self.stall_dir.glob("slot-*"):
            old.unlink()
        (self.stall_dir / "stalls").write_text(str(n))

    def stalled(self, n: int, timeout: float = 120) -> list[int]:
        """The process ids of the first ``n`` builds that stalled, once they have."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            slots = sorted(self.stall_dir.glob("slot-*"))
            pids = [int(s.read_text() or 0) for s in slots]
            if len(pids) >= n and all(pids[:n]):
                return pids[:n]
            time.sleep(0.2)
        raise TimeoutError(f"{n} stalled build(s) never appeared")


def start_cluster(workers: int = 1) -> Cluster:
    """A head and ``workers`` worker nodes (short paths: Ray's sockets live in them)."""
    root = Path(tempfile.mkdtemp(prefix="cr-", dir="/tmp"))
    stall = root / "stall"
    stall.mkdir()
    cluster = Cluster(root, free_port(), secrets.token_hex(32), stall)
    try:
        cluster.start_node("head", head=True)
        for i in range(workers):
            cluster.start_node(f"w{i + 1}")
        _wait_for_nodes(cluster, 1 + workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_for_nodes(cluster: Cluster, n: int, timeout: float = 60) -> None:
    """Until the cluster says it has ``n`` nodes alive."""
    code = (
        f"import ray; ray.init(address='{cluster.address}', logging_level='ERROR', "
        "log_to_driver=False); print(sum(1 for x in ray.nodes() if x['Alive']))"
    )
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        env = {**cluster.env("client"), MARKER: "client"}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        seen = done.stdout.strip().splitlines()[-1:] or [done.stderr[-300:]]
        if seen and seen[0] == str(n):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the cluster never had {n} nodes alive: {seen}")
