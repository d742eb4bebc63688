"""The host's half of a judge that runs in the sandbox: handing it a secret, reading its
signed result line.

A verdict decided inside the sandbox (a matrix build's hidden checks,
:mod:`orchestrator.bench.scoring`; a plan's user stories, :mod:`phases.stories.runner`)
comes from a standard-library script on cadillac's own interpreter (``-I -S``) that takes a
fresh secret from a file and removes it before any project code runs, and signs its last
line with it. The judge's half (``take_key``, ``signed``, ``protect``) lives in
:data:`JUDGE_FILES`, which every such script loads from beside itself; this module is the
host's half, one definition for every judge.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
JUDGE_FILES = (BENCH / "acceptance_runner.py", BENCH / "judge_rpc.py")
"""The judge's own files (the acceptance runner and its wire): copied beside a judge
script, read-only in the sandbox."""
JUDGE_PYTHON = Path(sys.executable).resolve()
"""A judge runs on cadillac's own interpreter (the one the project's environment links
to), with ``-I -S``: nothing of the environment's ``site-packages`` runs in it."""


def new_key() -> str:
    return secrets.token_hex(32)


def hand_key(project: Path, key: str, prefix: str = ".cadillac-judge-") -> Path:
    """The run's secret, in a new file of a random name the judge removes before any
    project code runs: a result line signed with it can only come from the judge."""
    path = project / f"{prefix}{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key)
    return path


def last_report(output: str, key: str) -> dict | None:
    """The judge's signed result line (a report with an integer ``total``); lines anything
    else printed (forgeries) are not."""
    for line in reversed(output.strip().splitlines()):
        try:
            signed = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(signed, dict) and isinstance(signed.get("report"), str)):
            continue
        text, mac = signed["report"], str(signed.get("judge", ""))
        expected = hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, expected):
            continue
        report = json.loads(text)
        if isinstance(report, dict) and isinstance(report.get("total"), int):
            return report
    return None
