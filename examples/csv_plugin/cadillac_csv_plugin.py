"""An example cadillac plugin: append one CSV line per build, whatever its status.

The file is ``$CADILLAC_BUILDS_CSV``, else ``builds.csv`` in the build's home (the
``home`` of the summary when cadillac gives it, else ``$CADILLAC_HOME``, else the current
folder). A new or empty file gets a header first. Each line is written with one call, so
builds of several cadillac processes do not interleave within a line.
"""

from __future__ import annotations

import csv
import io
import os
import time
from pathlib import Path

from orchestrator.hooks import hookimpl

ENV_VAR = "CADILLAC_BUILDS_CSV"
COLUMNS = (
    "ended",
    "run_id",
    "kind",
    "task",
    "status",
    "phases_passed",
    "seconds",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "model",
    "reason",
)


def csv_path(summary: dict) -> Path:
    given = os.environ.get(ENV_VAR)
    if given:
        return Path(given).expanduser()
    home = summary.get("home") or os.environ.get("CADILLAC_HOME") or "."
    return Path(home).expanduser() / "builds.csv"


def row(summary: dict) -> list[str]:
    phases = summary.get("phases") or []
    values = {
        "ended": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(summary.get("ended") or None)),
        "phases_passed": sum(1 for p in phases if p.get("outcome") == "passed"),
        "cost_usd": "" if summary.get("cost_usd") is None else summary["cost_usd"],
    }
    return [str(values.get(name, summary.get(name, ""))) for name in COLUMNS]


@hookimpl
def build_end(summary: dict) -> None:
    path = csv_path(summary)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text)
    if not path.exists() or path.stat().st_size == 0:
        writer.writerow(COLUMNS)
    writer.writerow(row(summary))
    with path.open("a", encoding="utf-8", newline="") as fh:
        fh.write(text.getvalue())
