"""What a night is on disk: its record, its folder, the per-home lock, and a killed night.

One nightly at a time per home. The lock is an ``flock`` on ``<home>/nightly.lock``,
which the kernel releases when its process dies, so a run killed with SIGKILL never
blocks the next night. Beside it, ``nightly.lock.json`` says which process holds it and
since when. A night whose record still says ``running`` while nobody holds the lock was
killed; :func:`stale_running_becomes_interrupted` says so in its record.
"""

from __future__ import annotations

import json
import math
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
from orchestrator.sandbox.files import replace_file

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


_DURATION = re.compile(
    r"(?:(?P<h>\d+(?:\.\d+)?)\s*h)?\s*(?:(?P<m>\d+(?:\.\d+)?)\s*m)?\s*(?:(?P<s>\d+(?:\.\d+)?)\s*s)?"
)
DURATION_HINT = "write it like 6h, 90m, 1h30m or 45s (a plain number is minutes)"


def parse_duration(text: str) -> float:
    """Seconds in a duration: '6h', '90m', '45s', '1.5h', '1h30m' (or '1h 30m'); a plain
    number is minutes. CadillacError (one line) for anything else, and for 0 or less.

    ``cadillac nightly --time-budget`` and ``cadillac improve --time-budget`` both read this."""
    raw = (text or "").strip().lower()
    shown = repr(text if len(text or "") <= 40 else text[:39] + "…")
    body = raw.removeprefix("-").removeprefix("+").strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", body):
        seconds = float(body) * 60
    elif body and (match := _DURATION.fullmatch(body)):
        units = {"h": 3600, "m": 60, "s": 1}
        seconds = sum(float(v) * units[k] for k, v in match.groupdict().items() if v)
    else:
        raise CadillacError(f"{shown} is not a duration: {DURATION_HINT}")
    if raw.startswith("-") or seconds <= 0:
        raise CadillacError(f"{shown} must be more than 0: {DURATION_HINT}")
    if not math.isfinite(seconds):
        raise CadillacError(f"{shown} is too long a duration")
    return seconds


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
        replace_file(
            self.info, json.dumps({"pid": os.getpid(), "since": time.time(), "folder": str(folder)})
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
    records = sorted(home.runs_dir.glob("nightly-*/nightly.json"))
    if not records:  # no night to mark: leave the lock file unmade
        return
    lock = NightlyLock(home)
    if not lock.acquire_probe():
        return
    for path in records:
        try:
            record = NightlyRecord.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
        if record.status == "running":
            record.status = "interrupted"
            record.reason = "the process was killed before the night ended"
            replace_file(path, record.model_dump_json(indent=2) + "\n")
