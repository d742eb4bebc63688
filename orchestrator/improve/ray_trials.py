"""An improve cycle's trials on a Ray cluster: each trial (one side of a round) a Ray task.

On a node the trial runs exactly as it does here (:class:`~.trial.SandboxedMatrix`): the
trial's code in its sandbox with no network but its egress gate, from the frozen memory
and budgets the cycle began with, then judged by the node's cadillac — which is this
cadillac, to the byte (nodes with other code are refused before the first trial) — with
the hidden checks, which go to the node in the task's folder and are never in the trial's
sight. The node returns the scored results and each build's records (summary, events,
the model's log), which the cycle reads for its weaknesses; they are written into the
trial's folder here, checked, by this process alone. The candidate's code goes to the
node as the files of its checkout; the trial's workspaces stay there and are removed.

A trial whose worker dies is run once more on another node; dying again, the round fails
with a line that says so. Ctrl-C or SIGTERM cancels the trials in flight.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

from orchestrator.bench.engines.config import EngineConfig
from orchestrator.bench.engines.ray_engine import NODE_CACHE, RaySession, task_files, unpack
from orchestrator.bench.engines.records import collect, write_records
from orchestrator.bench.results import MatrixResults
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.git import git
from orchestrator.improve.trial import CapReached, RoundSpec, SandboxedMatrix
from orchestrator.loop.runs import BUILD_ID
from orchestrator.sandbox.files import read_regular


def code_files(code: Path) -> dict[str, bytes]:
    """The trial's checkout as the sandbox sees it here: every file git tracks or would
    (the proposal's new ones too), regular files only, by path."""
    names = git(code, "ls-files", "-z", "--cached", "--others", "--exclude-standard", strip=False)
    files: dict[str, bytes] = {}
    for name in filter(None, names.split("\0")):
        try:
            files[name] = read_regular(code / name)
        except OSError:  # a link, or a file deleted in the worktree: not shipped
            continue
    return files


def remote_trial(runner_args: dict, code: dict, matrix: dict, memory: dict, label, spec, keys):
    """The Ray task: one trial and its judging on this node; (how it ended, the message,
    the results, each build's records by run id)."""
    work = Path(tempfile.mkdtemp(prefix="cadillac-trial-"))
    saved = {name: os.environ.get(name) for name in [*keys, "CADILLAC_CACHE_DIR"]}
    try:
        os.environ.update(keys)
        os.environ["CADILLAC_CACHE_DIR"] = str(Path(tempfile.gettempdir()) / NODE_CACHE)
        for folder, files in (("code", code), ("matrix", matrix), ("home", memory)):
            (work / folder).mkdir()
            unpack(work / folder, files)
        runner = SandboxedMatrix(Home(work / "home"), work / "matrix", **runner_args)
        try:
            results = runner.run(work / "code", label, work / "iter", spec)
        except CapReached as exc:
            return "capped", str(exc), exc.spent, {}
        except CadillacError as exc:
            return "error", str(exc), None, {}
        except KeyboardInterrupt:
            return "interrupted", "the improve cycle was stopped", None, {}
        runs = Path(results.runs_dir or work / "none")
        records = {
            run.run_id: collect(runs / run.run_id)
            for run in results.runs
            if BUILD_ID.fullmatch(run.run_id) and (runs / run.run_id).is_dir()
        }
        return "ok", "", results, records
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(work, ignore_errors=True)


class RayTrials(SandboxedMatrix):
    """The cycle's runner when its engine is Ray (see the module docstring)."""

    def __init__(self, *args, engine: EngineConfig, **kwargs):
        super().__init__(*args, **kwargs)
        self.session = RaySession(engine)
        self.refused = self.session.refused
        self.keys = dict(engine.keys)
        self.remote = self.session.ray.remote(max_retries=0, num_cpus=1)(remote_trial)
        self.matrix_ref = self.session.ray.put(task_files(self.matrix))
        self.memory_ref = self.session.ray.put(dict(self.snapshot))
        self.lock = threading.Lock()

    def _runner_args(self) -> dict:
        return {
            "llm": self.llm,
            "jobs": self.jobs,
            "executor": self.executor,
            "timeout_s": self.timeout_s,
            "carried": self.carried,
            "verbose": self.verbose,
        }

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        ray = self.session.ray
        packed = ray.put(code_files(code))
        avoid = None
        for _ in range(2):  # once more, elsewhere, when its worker dies
            node = self.session.node_for(avoid)
            if node is None:
                break
            ref = self.remote.options(**self.session.on(node)).remote(
                self._runner_args(), packed, self.matrix_ref, self.memory_ref, label, round,
                self.keys,
            )  # fmt: skip
            try:
                how, message, results, records = self._wait(ref)
            except KeyboardInterrupt:
                ray.cancel(ref, force=True)
                raise
            except Exception:  # its worker or node died: once more, elsewhere
                avoid = node
                continue
            return self._ended(how, message, results, records, label, folder, node)
        raise CadillacError(
            f"the {label} trial was lost: its Ray worker died twice"
            if avoid is not None
            else f"the {label} trial found no node of the Ray cluster to run on"
        )

    def _wait(self, ref):
        ray = self.session.ray
        while True:
            if self.stop.is_set():
                ray.cancel(ref, force=False)
                raise KeyboardInterrupt
            done, _ = ray.wait([ref], timeout=0.5)
            if done:
                return ray.get(ref)

    def _ended(self, how, message, results, records, label, folder, node) -> MatrixResults:
        if how == "interrupted":
            raise KeyboardInterrupt
        if how == "error":
            raise CadillacError(message)
        if how == "capped":
            raise CapReached(message, results)
        runs = folder / f"{label}-trial" / "home" / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        for run_id, files in records.items():
            write_records(runs, run_id, files)
        for run in results.runs:
            run.node = self.session.label(node)
        results.runs_dir = str(runs)
        return results

    def close(self) -> None:
        self.session.close()
