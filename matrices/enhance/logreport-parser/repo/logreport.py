"""logreport: a summary of a web server's request log.

Usage: python logreport.py LOGFILE [--top N]

Each line of the log is ``TIMESTAMP METHOD PATH STATUS DURATION``, for instance
``2024-05-01T10:00:00 GET /index.html 200 12ms``. Blank lines and lines starting with
``#`` are skipped; any other line that does not read is an error, named by its number.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


@dataclass(frozen=True)
class Entry:
    """One request of the log."""

    timestamp: datetime
    method: str
    path: str
    status: int
    duration_ms: int


class ParseError(ValueError):
    """A line of the log that does not read; ``line_no`` is its number, from 1."""

    def __init__(self, line_no: int, reason: str) -> None:
        super().__init__(f"line {line_no}: {reason}")
        self.line_no = line_no


def parse_line(line: str, line_no: int = 1) -> Entry | None:
    """The entry of one log line; None for a blank or comment line; ParseError otherwise."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    fields = text.split()
    if len(fields) != 5:
        raise ParseError(line_no, f"expected 5 fields, found {len(fields)}")
    stamp, method, path, status, duration = fields
    try:
        timestamp = datetime.fromisoformat(stamp)
    except ValueError:
        raise ParseError(line_no, f"bad timestamp {stamp!r}") from None
    if method not in METHODS:
        raise ParseError(line_no, f"unknown method {method!r}")
    if not path.startswith("/"):
        raise ParseError(line_no, f"the path {path!r} does not start with /")
    if not (status.isdigit() and 100 <= int(status) <= 599):
        raise ParseError(line_no, f"bad status {status!r}")
    if not (duration.endswith("ms") and duration[:-2].isdigit()):
        raise ParseError(line_no, f"bad duration {duration!r}; expected a number of ms")
    return Entry(timestamp, method, path, int(status), int(duration[:-2]))


def parse_lines(lines: Iterable[str]) -> list[Entry]:
    """The entries of the log's lines, in order (ParseError at the first bad line)."""
    entries = []
    for line_no, line in enumerate(lines, 1):
        entry = parse_line(line, line_no)
        if entry is not None:
            entries.append(entry)
    return entries


def summarize(entries: list[Entry], top: int = 3) -> dict:
    """Requests, status classes, the mean duration and the ``top`` slowest paths by mean."""
    classes = Counter(f"{e.status // 100}xx" for e in entries)
    by_path: dict[str, list[int]] = defaultdict(list)
    for entry in entries:
        by_path[entry.path].append(entry.duration_ms)
    means = {path: sum(d) / len(d) for path, d in by_path.items()}
    slowest = sorted(means.items(), key=lambda item: (-item[1], item[0]))[:top]
    total = sum(e.duration_ms for e in entries)
    return {
        "requests": len(entries),
        "statuses": dict(sorted(classes.items())),
        "mean_ms": round(total / len(entries), 1) if entries else 0.0,
        "slowest": [(path, round(mean, 1)) for path, mean in slowest],
        "first": entries[0].timestamp.isoformat() if entries else None,
        "last": entries[-1].timestamp.isoformat() if entries else None,
    }


def render(summary: dict) -> str:
    """The summary as the text the command prints."""
    lines = [f"requests: {summary['requests']}"]
    if summary["first"]:
        lines.append(f"period: {summary['first']} .. {summary['last']}")
    for name, count in summary["statuses"].items():
        lines.append(f"status {name}: {count}")
    lines.append(f"mean duration: {summary['mean_ms']} ms")
    for path, mean in summary["slowest"]:
        lines.append(f"slow: {path} {mean} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarize a request log.")
    parser.add_argument("logfile", help="the log file")
    parser.add_argument("--top", type=int, default=3, help="slowest paths to list (default 3)")
    args = parser.parse_args(argv)
    try:
        with open(args.logfile, encoding="utf-8") as handle:
            entries = parse_lines(handle)
    except OSError as exc:
        print(f"error: cannot read {args.logfile}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ParseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(render(summarize(entries, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
