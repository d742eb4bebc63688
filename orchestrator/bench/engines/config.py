"""How many builds run at once and where: the engine's settings and the machine's bound."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.bench import MAX_JOBS
from orchestrator.errors import CadillacError

STOP_GRACE_S = 15.0
"""How long a stopped run waits for its running builds to record that they were stopped
before their workers are killed."""
RAY_ADDRESS_ENV = "CADILLAC_RAY_ADDRESS"


class EngineConfig(BaseModel):
    """Where a matrix run's builds run (``--engine``, ``--ray-address``, ``--jobs``)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = "local"
    jobs: int = Field(default=1, ge=1, le=MAX_JOBS)
    """Builds at once: worker processes (local), or Ray tasks in flight."""
    ray_address: str | None = None
    """A running cluster (``HOST:PORT`` or ``auto``); None: cadillac starts a local Ray
    for the run and stops it after (or reads ``CADILLAC_RAY_ADDRESS``)."""
    keys: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    """The values of the variables the builds' models read: sent with each build to a
    node of another machine, set there for that build alone. Never written or shown."""

    def address(self) -> str | None:
        return self.ray_address or os.environ.get(RAY_ADDRESS_ENV) or None


def memory_total() -> int:
    """The machine's memory in bytes (0 when it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def local_bound(room: int) -> tuple[int, str]:
    """(the most builds this machine holds at once, why): each build's commands may use
    ``room`` bytes (their memory cgroup's limit), so jobs x room must fit in memory."""
    total = memory_total()
    if total <= 0 or room <= 0:
        return MAX_JOBS, f"at most {MAX_JOBS}"
    fits = max(1, min(MAX_JOBS, total // room))
    return fits, (
        f"this machine holds {fits}: each build's commands may use {room / 1024**3:.1f} GiB "
        f"and it has {total / 1024**3:.1f} GiB"
    )


def check_jobs(config: EngineConfig, room: int) -> None:
    """CadillacError, in one line, for more local jobs than the machine holds."""
    if config.kind != "local" or config.jobs == 1:
        return
    fits, why = local_bound(room)
    if config.jobs > fits:
        raise CadillacError(
            f"--jobs {config.jobs} is more builds at once than {why} (give --jobs {fits} or "
            "fewer, or run them on a cluster: --engine ray)"
        )
