"""Builds as Ray tasks, on the nodes of a cluster: for nights one machine cannot hold.

Each build is one Ray task running cadillac's own :func:`~.worker.run_job` on a node, in
that node's sandbox, in a home of its own made for the task: the coordinator's memory,
budgets, notes and skills as they stood when the run began (the snapshot every build of
the run reads, as an improve trial's do), and the task's folder carried with the job (the
matrix need not exist on the node). What comes back is data: the scored result, the
learning the coordinator applies, and the run folder's records it writes into the home
(:mod:`.records`). Nothing on a node writes the home.

* **Same code everywhere.** Before the first build each node is asked for the digest of
  its cadillac (:func:`orchestrator.version.source_digest`); a node whose digest differs
  is refused, in one line, and no build goes to it. None left: the run stops before it
  starts.
* **A worker that dies** (its process killed, its node gone): the build is retried once,
  on another node when there is one; a second death marks it ``lost``, which the results
  keep and never score.
* **Stopping:** Ctrl-C or SIGTERM cancels every build in flight (its task gets
  KeyboardInterrupt and records that it was stopped); one not ended within the grace is
  cancelled by force.
* **Where Ray keeps its files:** without an address a local Ray is started for the run,
  its temporary folder under the system's temporary folder (never the user's home), its
  usage reporting and dashboard off, and it is stopped after.
"""

from __future__ import annotations

import itertools
import os
import queue
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from orchestrator.bench.engines.config import EngineConfig
from orchestrator.bench.engines.records import collect
from orchestrator.bench.engines.worker import BuildJob, Outcome, failed, run_job
from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import read_regular
from orchestrator.version import source_digest

SNAPSHOT = ("memory.jsonl", "phase_budgets.jsonl", "notes", "skills")
"""What of the home a remote build reads (relative to the home)."""
MAX_SNAPSHOT_BYTES = 200 * 1024**2
NODE_CACHE = "cadillac-ray-cache"
"""A node's shared template environments, under its temporary folder."""

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never report to anyone


def ray_module():
    """Ray, or CadillacError in one line when it is not installed."""
    try:
        import ray
    except ImportError:
        raise CadillacError(
            "--engine ray needs Ray, which is not installed: pip install 'cadillac[ray]'"
        ) from None
    return ray


def regular_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder``, by relative path: no link is followed (a linked
    folder is not entered, a linked file not read)."""
    files: dict[str, bytes] = {}
    for where, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(where) / name
            try:
                files[path.relative_to(folder).as_posix()] = read_regular(path)
            except OSError:  # a link, a FIFO, a device, gone meanwhile: not sent
                continue
    return files


def snapshot(home: Path) -> dict[str, bytes]:
    """The home's memory, budgets, notes and skills, by relative path (regular files)."""
    files: dict[str, bytes] = {}
    for name in SNAPSHOT:
        path = home / name
        if path.is_dir() and not path.is_symlink():
            found = {f"{name}/{rel}": data for rel, data in regular_files(path).items()}
        else:
            try:
                found = {name: read_regular(path)}
            except OSError:  # absent, or not a regular file
                found = {}
        files.update(found)
    if sum(len(data) for data in files.values()) > MAX_SNAPSHOT_BYTES:
        raise CadillacError(
            f"the home's memory, notes and skills are over {MAX_SNAPSHOT_BYTES >> 20} MB: too "
            "much to send with every build (consolidate or prune them)"
        )
    return files


def task_files(folder: Path) -> dict[str, bytes]:
    """The task's folder (task.toml, acceptance/, repo/), by relative path, for the node."""
    return regular_files(folder)


def unpack(root: Path, files: dict[str, bytes]) -> None:
    """Write files the coordinator sent into ``root``, a fresh folder of the node's."""
    for rel, data in files.items():
        target = root / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def remote_build(job: BuildJob, home_files: dict[str, bytes], task: dict[str, bytes], keys):
    """The Ray task: one build in a home made for it on this node (see the module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="cadillac-build-"))
    saved = {name: os.environ.get(name) for name in keys}
    try:
        os.environ.update(keys)
        os.environ.setdefault("CADILLAC_CACHE_DIR", str(Path(tempfile.gettempdir()) / NODE_CACHE))
        home = work / "home"
        home.mkdir()
        unpack(home, home_files)
        folder = work / "task" / job.task.id
        folder.mkdir(parents=True)
        unpack(folder, task)
        here = job.task.model_copy()
        here._dir = folder
        local = job.model_copy(update={"home": home, "task": here})
        try:
            outcome = run_job(local)
        except KeyboardInterrupt:
            return failed(job, "interrupted", "the matrix run was stopped during this build")
        if outcome.run.run_id:
            outcome.files = collect(home / "runs" / outcome.run.run_id)
        return outcome
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(work, ignore_errors=True)


def _signal_handlers() -> dict:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore(handlers: dict) -> None:
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)


def own_token(folder: Path) -> None:
    """A Ray started for one run authenticates with a token of its own, in its temporary
    folder (Ray would otherwise make ``~/.ray/auth_token`` in the user's home)."""
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    token = folder / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    os.environ.setdefault("RAY_AUTH_MODE", "token")


def _import_path() -> str:
    """This interpreter's import folders, for the workers of a Ray started here (they run
    this machine's cadillac, and the scripted models a test names)."""
    return os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))


def node_digest() -> tuple[str, str]:
    """(this node's Ray id, the digest of the cadillac it imports)."""
    return ray_module().get_runtime_context().get_node_id(), source_digest()


class RaySession:
    """A connection to a Ray cluster (or a Ray started for the run), and its nodes that run
    this cadillac: what the matrix engine and the improve cycle's trials share."""

    def __init__(self, config: EngineConfig):
        self.started_here = False
        self.temp: str | None = None
        address = config.address()
        if address is None:  # a Ray of our own for this run, its files in a temp folder
            self.temp = tempfile.mkdtemp(prefix="cadillac-ray-", dir="/tmp")
            own_token(Path(self.temp))
        self.ray = ray = ray_module()
        handlers = _signal_handlers()  # ray.init puts its own on SIGTERM: cadillac's stand
        try:
            if address is None:
                ray.init(
                    include_dashboard=False,
                    _temp_dir=self.temp,
                    runtime_env={"env_vars": {"PYTHONPATH": _import_path()}},
                    logging_level="ERROR",
                    log_to_driver=False,
                    configure_logging=False,
                )
                self.started_here = True
            else:
                ray.init(
                    address=address,
                    logging_level="ERROR",
                    log_to_driver=False,
                    configure_logging=False,
                )
        except CadillacError:
            raise
        except Exception as exc:
            self._drop_temp()
            raise CadillacError(
                f"could not reach the Ray cluster at {address or 'a local Ray'}: "
                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            ) from None
        finally:
            _restore(handlers)
        self.labels: dict[str, str] = {}
        """A node's id -> how the records name it: its address and the start of its id."""
        self.refused: list[str] = []
        self.nodes = self._same_code()
        self.turn = itertools.cycle(self.nodes)
        self.lock = threading.Lock()

    def _alive(self) -> list[str]:
        alive = [n for n in self.ray.nodes() if n.get("Alive")]
        for n in alive:
            self.labels[n["NodeID"]] = f"{n.get('NodeManagerAddress', '?')}/{n['NodeID'][:8]}"
        return [n["NodeID"] for n in alive]

    def _same_code(self) -> list[str]:
        """The nodes running this cadillac; a line for each one refused."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ask = self.ray.remote(num_cpus=0, max_retries=0)(node_digest)
        mine = source_digest()
        good = []
        refs = {
            node: ask.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote()
            for node in self._alive()
        }
        for node, ref in refs.items():
            try:
                _, theirs = self.ray.get(ref, timeout=120)
            except Exception as exc:  # a node that cannot run a task: not used
                self.refused.append(f"Ray node {node[:8]} could not be asked its code: {exc}")
                continue
            if theirs != mine:
                self.refused.append(
                    f"Ray node {node[:8]} runs another cadillac (source {theirs}, this one "
                    f"{mine}): no build goes there; install this version on it"
                )
            else:
                good.append(node)
        if not good:
            self.close()
            raise CadillacError(
                "no node of the Ray cluster runs this cadillac: "
                + ("; ".join(self.refused) or "the cluster has no node")
            )
        return good

    def node_for(self, avoid: str | None = None) -> str | None:
        """The next good node alive in turn (not ``avoid`` when another is left)."""
        with self.lock:
            alive = set(self._alive())
            self.nodes = [n for n in self.nodes if n in alive]
            choices = [n for n in self.nodes if n != avoid] or (
                [] if avoid is not None else self.nodes
            )
            if not choices:
                return None
            for node in self.turn:
                if node in choices:
                    return node
        return None

    def on(self, node: str) -> dict:
        """The options that send a task to ``node`` alone."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False)}

    def label(self, node: str) -> str:
        return self.labels.get(node, node[:8])

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()
        self._drop_temp()

    def _drop_temp(self) -> None:
        if self.temp is not None:
            shutil.rmtree(self.temp, ignore_errors=True)
            self.temp = None


class RayEngine:
    """Builds as Ray tasks (see the module docstring)."""

    def __init__(self, config: EngineConfig, ended: queue.Queue, home: Path):
        self.ended, self.config, self.keys = ended, config, dict(config.keys)
        self.session = RaySession(config)
        self.ray = ray = self.session.ray
        self.refused = self.session.refused
        self.remote = ray.remote(max_retries=0, num_cpus=1)(remote_build)
        self.snapshot = ray.put(snapshot(home))
        self.flight: dict = {}
        """A running task's ref -> (job, the node it was sent to, tries so far)."""
        self.task_refs: dict[str, object] = {}
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self.stopping = False
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        self.waiter.start()

    # ------------------------------------------------------------------ the builds
    def submit(self, job: BuildJob, tries: int = 0, avoid: str | None = None) -> None:
        node = self.session.node_for(avoid)
        if node is None:
            why = "its worker died and no other node of the cluster is left to retry it on"
            self.ended.put(failed(job, "lost", why))
            return
        if job.task.id not in self.task_refs:
            self.task_refs[job.task.id] = self.ray.put(task_files(job.task.dir))
        ref = self.remote.options(**self.session.on(node)).remote(
            job, self.snapshot, self.task_refs[job.task.id], self.keys
        )
        with self.lock:
            self.flight[ref] = (job, node, tries)

    def _wait(self) -> None:
        ray = self.ray
        while not self.closing.is_set():
            with self.lock:
                refs = list(self.flight)
            if not refs:
                self.closing.wait(0.2)
                continue
            done, _ = ray.wait(refs, num_returns=1, timeout=0.5)
            for ref in done:
                with self.lock:
                    job, node, tries = self.flight.pop(ref)
                self._ended(ref, job, node, tries)

    def _ended(self, ref, job: BuildJob, node: str, tries: int) -> None:
        ray = self.ray
        try:
            outcome: Outcome = ray.get(ref)
        except (ray.exceptions.TaskCancelledError, ray.exceptions.RayTaskError) as exc:
            if self.stopping or isinstance(exc, ray.exceptions.TaskCancelledError):
                outcome = failed(job, "interrupted", "the matrix run was stopped during this build")
            else:
                outcome = failed(job, "crashed", str(exc).splitlines()[-1][:500])
        except Exception as exc:  # the worker or its node died
            if self.stopping:
                outcome = failed(job, "interrupted", "the matrix run was stopped during this build")
            elif tries == 0:
                self.submit(job, tries=1, avoid=node)  # once more, elsewhere when possible
                return
            else:
                outcome = failed(
                    job, "lost", f"its worker died twice ({type(exc).__name__}): not scored"
                )
        outcome.run.node = self.session.label(node)
        self.ended.put(outcome)

    def stop(self) -> None:
        self.stopping = True
        with self.lock:
            refs = list(self.flight)
        for ref in refs:
            self.ray.cancel(ref, force=False)

    def kill(self) -> None:
        self.stopping = True
        with self.lock:
            refs = list(self.flight)
        for ref in refs:
            self.ray.cancel(ref, force=True)

    def close(self) -> None:
        self.closing.set()
        if self.waiter is not threading.current_thread():
            self.waiter.join(timeout=5)
        self.session.close()
