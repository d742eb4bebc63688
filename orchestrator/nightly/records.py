"""What a night is on disk: its record, its folder, the per-home lock, and a killed night.

One nightly at a time per home. The lock is an ``flock`` on ``<home>/nightly.lock``,
which the kernel releases when its process dies, so a run killed with SIGKILL never
blocks the next night. Beside it, ``nightly.lock.json`` says which process holds it and
since when. A night whose record still says ``running`` while nobody holds the lock was
killed; :func:`stale_running_becomes_interrupted` says so in its record.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field

from orchestrator.errors import CadillacError
from orchestrator.home import Home

Status = Literal["running", "finished", "interrupted", "failed"]


class NightlyRecord(BaseModel):
    v: int = 1
    date: str
    status: Status = "running"
    reason: str = ""
    pid: int = Field(default_factory=os.getpid)
    host: str = Field(default_factory=socket.gethostname)
    started: float = Field(default_factory=time.time)
    ended: float | None = None
    model: str = ""
    improver_model: str = ""
    improve_id: str | None = None


def parse_duration(text: str) -> float:
    """Seconds in '6h', '90m', '45s', '1.5h' or a bare number of minutes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([hms]?)\s*", text or "")
    if not match:
        raise CadillacError(f"cannot read the duration {text!r}: write it like 6h, 90m or 45s")
    value, unit = float(match.group(1)), match.group(2) or "m"
    return value * {"h": 3600, "m": 60, "s": 1}[unit]


class NightlyLock:
    """The per-home lock of nightly runs, with who holds it."""

    def __init__(self, home: Home):
        self.lock = FileLock(str(home.root / "nightly.lock"), timeout=0)
        self.info = home.root / "nightly.lock.json"

    def acquire(self, folder: Path) -> bool:
        try:
            self.lock.acquire()
        except Timeout:
            return False
        self.info.write_text(
            json.dumps({"pid": os.getpid(), "since": time.time(), "folder": str(folder)})
        )
        return True

    def holder(self) -> str:
        try:
            info = json.loads(self.info.read_text())
        except (OSError, ValueError):
            return "another process"
        since = datetime.fromtimestamp(info["since"]).strftime("%Y-%m-%d %H:%M:%S")
        return f"process {info['pid']} (since {since}, {info.get('folder', '?')})"

    def acquire_probe(self) -> bool:
        probe = FileLock(self.lock.lock_file, timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return False
        probe.release()
        return True

    def release(self) -> None:
        self.info.unlink(missing_ok=True)
        self.lock.release()


def night_folder(home: Home, today: date | None = None) -> Path:
    """runs/nightly-<date>, or -2, -3 ... when that night already ran."""
    base = f"nightly-{(today or date.today()).isoformat()}"
    folder, n = home.runs_dir / base, 1
    while folder.exists():
        n += 1
        folder = home.runs_dir / f"{base}-{n}"
    return folder


def stale_running_becomes_interrupted(home: Home) -> None:
    """A night still 'running' while nobody holds the lock was killed: say so."""
    lock = NightlyLock(home)
    if not lock.acquire_probe():
        return
    for path in home.runs_dir.glob("nightly-*/nightly.json"):
        try:
            record = NightlyRecord.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
        if record.status == "running":
            record.status = "interrupted"
            record.reason = "the process was killed before the night ended"
            path.write_text(record.model_dump_json(indent=2) + "\n")
