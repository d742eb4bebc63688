"""Where the orchestrator is weak: failures of a matrix run, grouped by phase and error signature.

Three kinds of weakness are read from a matrix's results and its runs' events:

* ``phase``: builds that ended in a phase without passing it (budget exhausted
  in build, an error in deps ...); signature ``phase:<phase>:<outcome>``;
* ``acceptance``: a hidden check that failed in builds that reached validate;
  signature ``acceptance:<task>:<check>``;
* ``tool``: the same tool error repeated (three times or more in a run);
  signature ``tool:<tool>:<first words of the error>``;
* ``scoring``: builds whose scoring found them tampered with or broken (a project that
  cannot be set up from its declared dependencies, say); signature
  ``scoring:<task>:<verdict>``.

Each weakness has a stable id derived from its signature (the same failure in
a later cycle has the same id, so rejected attempts can be remembered against
it), the score it cost (weighted share of the train score lost to it), excerpts of
evidence, and the files a patch would most likely touch: the phase's prompt
and module first. The worst weakness comes first.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.bench.results import MatrixResults
from orchestrator.sandbox.files import read_regular, what_is
from phases import PHASES

EXCERPTS = 5


class Weakness(BaseModel):
    id: str
    kind: str
    signature: str
    phase: str | None = None
    occurrences: int
    cost: float
    """Weighted score lost, summed over the builds it hit (higher is worse)."""
    tasks: list[str]
    evidence: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    """Files a patch may change, most likely first (paths relative to the repository)."""


def weakness_id(signature: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", signature.lower()).strip("-")[:40]
    return f"{slug}-{hashlib.blake2b(signature.encode(), digest_size=3).hexdigest()}"


def _targets(phase: str | None, kind: str) -> list[str]:
    files = []
    if phase in PHASES:
        files += [f"phases/{phase}.md", f"phases/{phase}.py"]
    if kind in ("acceptance", "scoring"):
        files += ["phases/build.md", "phases/validate.md", "phases/plan.md"]
    if kind == "tool":
        files += ["orchestrator/tools/box.py"]
    files += ["phases/system.md", "orchestrator/loop/agent.py"]
    return list(dict.fromkeys(files))


EVENTS_LIMIT = 8_000_000
"""The most of a build's events read (bytes): a trial wrote them, and they reach a prompt."""


def _events(runs_dirs: list[Path], run_id: str) -> list[dict]:
    """A build's events, from the one of ``runs_dirs`` that holds its folder; none for a
    run id that names no run folder, or a file that is a link (a trial's folders are its
    own: nothing is read through a link it made)."""
    if not re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", run_id or ""):
        return []
    found = [d for d in runs_dirs if what_is(d / run_id) == "a folder"]
    if not found:
        return []
    try:
        data = read_regular(found[0] / run_id / "events.jsonl", EVENTS_LIMIT)
    except OSError:
        return []
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def build_folders(results: MatrixResults, runs_dir: Path) -> list[Path]:
    """Where the builds of ``results`` have their run folders: every round's folder of
    merged results (an improve cycle's rounds each ran in a trial of their own), else the
    run's ``runs_dir``, else ``runs_dir``."""
    if results.runs_dirs:
        return [Path(folder) for folder in results.runs_dirs]
    return [Path(results.runs_dir) if results.runs_dir else runs_dir]


def find_weaknesses(
    results: MatrixResults, runs_dir: Path, split: str | None = "train"
) -> list[Weakness]:
    """The weaknesses of a matrix run's ``split`` tasks (train: the holdout stays held out,
    none of its failures or checks reach the improver), worst first. Merged rounds are read
    whole: each build's events from its own round's folder (:func:`build_folders`)."""
    folders = build_folders(results, runs_dir)
    kept = {t.task_id for t in results.tasks if split is None or t.split == split}
    weights = results.weights()
    total_weight = sum(weights.get(t, 1.0) for t in kept) or 1.0
    found: dict[str, dict] = defaultdict(lambda: {"n": 0, "cost": 0.0, "tasks": set(), "ev": []})

    def hit(signature: str, kind: str, phase: str | None, task: str, lost: float, ev: str):
        w = found[signature]
        w.update(kind=kind, phase=phase)
        w["n"] += 1
        w["cost"] += lost
        w["tasks"].add(task)
        if len(w["ev"]) < EXCERPTS and ev:
            w["ev"].append(ev[:600])

    built = Counter(r.task_id for r in results.runs)
    for run in results.runs:
        if run.task_id not in kept:
            continue  # each task's builds share its weight (merged rounds: not alike per task)
        share = weights.get(run.task_id, 1.0) / total_weight / max(built[run.task_id], 1)
        lost = (1.0 - run.score) * share
        if run.score >= 1.0:
            continue
        if run.verdict in ("tampered", "broken"):
            signature = f"scoring:{run.task_id}:{run.verdict}"
            hit(signature, "scoring", None, run.task_id, lost, f"{run.run_id}: {run.failure}")
        elif not run.reached_validate:
            phase = run.failed_phase or "build"
            signature = f"phase:{phase}:{run.phase_outcome or run.status}"
            hit(signature, "phase", phase, run.task_id, lost, f"{run.run_id}: {run.failure}")
        else:
            for failure in [f for f in run.failure.split("; ") if f.strip()] or ["unknown"]:
                check = failure.split(": ")[0].strip()
                hit(
                    f"acceptance:{run.task_id}:{check}",
                    "acceptance",
                    None,
                    run.task_id,
                    lost,
                    f"{run.run_id}: {failure}",
                )
        errors = Counter()
        for event in _events(folders, run.run_id):
            data = event.get("data", {})
            if event.get("kind") == "tool" and not data.get("ok") and data.get("tool") != "run":
                words = " ".join(str(data.get("error", "")).split()[:8])
                errors[(data.get("tool"), words, event.get("phase"))] += 1
        for (tool, words, phase), count in errors.items():
            if count >= 3:
                hit(
                    f"tool:{tool}:{words}",
                    "tool",
                    phase,
                    run.task_id,
                    0.0,
                    f"{run.run_id}: {count}x {words}",
                )
    out = [
        Weakness(
            id=weakness_id(sig),
            kind=w["kind"],
            signature=sig,
            phase=w["phase"],
            occurrences=w["n"],
            cost=round(w["cost"], 6),
            tasks=sorted(w["tasks"]),
            evidence=w["ev"],
            targets=_targets(w["phase"], w["kind"]),
        )
        for sig, w in found.items()
    ]
    return sorted(out, key=lambda w: (-w.cost, -w.occurrences, w.id))
