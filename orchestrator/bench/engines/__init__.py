"""Where a matrix run's builds run: in this process, in worker processes, or on a Ray cluster.

The matrix run's coordinator (:func:`orchestrator.bench.matrix.run_matrix`) decides
*which* build runs next and alone writes the home's memory, budgets and results; an
engine decides only *where* a build runs. Each build is a :class:`~.worker.BuildJob`
(the task, its repeat, the build's settings) and comes back as an
:class:`~.worker.Outcome` (the scored :class:`TaskRun`, the learning it would make, the
node it ran on), put on the coordinator's queue. The same function builds and scores in
every engine (:func:`~.worker.run_job`), so a build's verdict does not depend on where it
ran.

* ``local`` with one job: the build runs in a thread of this process, as a single build
  does (``--verbose`` traces it, an in-process plugin hears it);
* ``local`` with more jobs: each build is a process of its own, forked from a server
  that has cadillac imported (a build mostly waits on its model, but the host's own work
  — the index, the checks' parsing, litellm — holds the interpreter, so threads would
  queue on it). Ctrl-C reaches every worker at once; SIGTERM to the coordinator is passed
  on as SIGINT; a worker that has not ended :data:`STOP_GRACE_S` later is killed;
* ``ray``: each build is a Ray task on a node of a cluster (:mod:`.ray_engine`).

How many builds run at once is bounded by what the machine holds (:func:`local_bound`):
each build's commands may use their memory cgroup's room, so ``--jobs`` times that room
must fit in the machine's memory.
"""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Protocol

from orchestrator.bench.engines.config import (
    RAY_ADDRESS_ENV,
    STOP_GRACE_S,
    EngineConfig,
    check_jobs,
    local_bound,
)

__all__ = [
    "RAY_ADDRESS_ENV",
    "STOP_GRACE_S",
    "Engine",
    "EngineConfig",
    "check_jobs",
    "engine_for",
    "local_bound",
]


class Engine(Protocol):
    """Runs builds somewhere and puts each one's Outcome on ``ended`` when it ends."""

    def submit(self, job) -> None: ...

    def stop(self) -> None:
        """Tell every running build to stop (it records that it was stopped)."""

    def kill(self) -> None:
        """End every build still running, now (after :data:`STOP_GRACE_S`)."""

    def close(self) -> None:
        """Release what the engine holds (worker processes, a local cluster)."""


def engine_for(
    config: EngineConfig,
    ended: queue.Queue,
    on_builder=None,
    hooks=None,
    home: Path | None = None,
) -> Engine:
    """The engine ``config`` names, reporting to ``ended``; a Ray engine sends the nodes
    a snapshot of ``home``."""
    if config.kind == "ray":
        from orchestrator.bench.engines.ray_engine import RayEngine

        return RayEngine(config, ended, home or Path("."))
    from orchestrator.bench.engines.local import ProcessEngine, ThreadEngine

    if config.jobs == 1:
        return ThreadEngine(ended, on_builder, hooks)
    return ProcessEngine(ended, on_builder)
