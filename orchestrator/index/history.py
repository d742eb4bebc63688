"""Files that change together, from the history of a *trusted* git checkout.

Only ``IndexConfig.history`` is ever asked, never the indexed tree by default: a model's
workspace could hold a ``.git/config`` naming commands git would run (``core.fsmonitor``,
hooks, pagers). Even for a trusted folder, git runs through cadillac's one safe runner
(:mod:`orchestrator.sandbox.git`: no system or global configuration, no hooks, drivers
or fsmonitor, no terminal prompt) with a timeout.
Of the last ``git_commits`` commits, those touching at most ``max_commit_files`` files
count; a pair of indexed files changed together at least ``min_cochange`` times is a
``cochange`` relation weighted by that count. Any failure of git gives no relations.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from pathlib import Path

from orchestrator.index.records import IndexConfig, Relation
from orchestrator.sandbox.git import GitError, run_git

COMMIT_MARK = "\x1ecommit"  # what --format=%x1ecommit prints before each commit
LOG = ("log", "--no-color", "--no-renames", "--relative", "--name-only", "--format=%x1ecommit")


def git_log(history: Path, config: IndexConfig) -> str | None:
    """The names of the files of the last commits, or None when git fails."""
    try:
        out = run_git(
            *LOG,
            "-n",
            str(config.git_commits),
            repo=history,
            binary=True,
            timeout=config.git_timeout,
        )
    except GitError:
        return None
    return bytes(out).decode("utf-8", "replace")


def commits(log: str) -> list[list[str]]:
    """The files of each commit in a ``git_log`` output."""
    out = []
    for chunk in log.split(COMMIT_MARK):
        names = [line.strip() for line in chunk.splitlines() if line.strip()]
        if names:
            out.append(names)
    return out


def cochange_relations(root: Path, paths: set[str], config: IndexConfig) -> list[Relation]:
    if config.history is None:
        return []
    log = git_log(config.history, config)
    if log is None:
        return []
    prefix = _prefix(root, config.history)
    pairs: Counter[tuple[str, str]] = Counter()
    for files in commits(log):
        if len(files) > config.max_commit_files:
            continue
        mine = sorted({f[len(prefix) :] for f in files if f.startswith(prefix)} & paths)
        pairs.update(combinations(mine, 2))
    return [
        Relation(kind="cochange", source=a, target=b, weight=n, via="git")
        for (a, b), n in sorted(pairs.items())
        if n >= config.min_cochange
    ]


def _prefix(root: Path, history: Path) -> str:
    """Where the indexed root sits inside the history's folder, as a path prefix."""
    try:
        rel = Path(root).resolve().relative_to(Path(history).resolve())
    except ValueError:
        return ""
    return "" if str(rel) == "." else rel.as_posix() + "/"
