"""Recall quality on the real lesson corpus: nDCG@10 of each scorer against hand grades.

Two label sets, made by two graders independently: for each realistic build
task, the lessons of the earlier system's corpus
(tests/fixtures/cadillac_corpus/lessons.jsonl, cited by 1-based line number)
were graded by reading them: 2 = clearly useful for the task, 1 = partly
useful, absent = not relevant. ``recall_labels.json`` (34 tasks, generous
grading) is the set the default scorer's few settings were chosen on;
``recall_labels_heldout.json`` (24 other tasks, strict grading) was made
afterwards and never tuned on. The script prints nDCG@10 for the default
scorer, the seed's formula, and plain BM25 over trigger and fix (no layers, no
other signals).

    python benchmarks/recall_quality.py [--per-task] [--json]

Scoring uses ``now`` = one day after the newest lesson, so that the figures do
not drift with the calendar (the corpus would otherwise decay as it ages).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory import MemoryStore  # noqa: E402
from memory.index import LessonIndex  # noqa: E402
from memory.recall import SCORERS, RelevanceScorer  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus" / "lessons.jsonl"
LABEL_SETS = {
    "tuning set": Path(__file__).with_name("recall_labels.json"),
    "held-out set": Path(__file__).with_name("recall_labels_heldout.json"),
}
K = 10


def ndcg(ranked_ids: list[str], grades: dict[str, int], k: int = K) -> float | None:
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return None
    dcg = sum(
        (2 ** grades.get(lid, 0) - 1) / math.log2(i + 2) for i, lid in enumerate(ranked_ids[:k])
    )
    return dcg / idcg


def text_only_index(lessons: list) -> LessonIndex:
    """An index over trigger and fix alone (the store's index also holds the tags)."""
    return LessonIndex([lesson.model_copy(update={"tags": []}) for lesson in lessons])


def plain_bm25(index: LessonIndex, task: str) -> list[str]:
    raw = RelevanceScorer().bm25(index, task)
    order = [i for i in np.argsort(-raw, kind="stable")[:K] if raw[i] > 0]
    return [index.slots[i].id for i in order]


def evaluate(store: MemoryStore, labels: dict, now: float) -> dict[str, list[float | None]]:
    lessons = store.all()
    plain = text_only_index(lessons)
    results: dict[str, list[float | None]] = {name: [] for name in [*SCORERS, "bm25"]}
    for case in labels["tasks"]:
        grades = {lessons[int(line) - 1].id: g for line, g in case["grades"].items()}
        for name in SCORERS:
            ranked = [r.lesson.id for r in store.recall(case["task"], K, scorer=name, now=now)]
            results[name].append(ndcg(ranked, grades))
        results["bm25"].append(ndcg(plain_bm25(plain, case["task"]), grades))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-task", action="store_true", help="print each task's figures")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    store = MemoryStore(CORPUS)
    lessons = store.all()
    assert len(lessons) == 403 and not store.file.rejected, "the corpus must load whole"
    now = max(lesson.ts for lesson in lessons) + 86400
    report = {}
    for set_name, path in LABEL_SETS.items():
        labels = json.loads(path.read_text())
        results = evaluate(store, labels, now)
        means = {
            name: float(np.mean([v for v in vals if v is not None]))
            for name, vals in results.items()
        }
        graded = sum(1 for v in results["bm25"] if v is not None)
        report[set_name] = {"tasks": len(labels["tasks"]), "graded": graded, "ndcg@10": means}
        if args.json:
            continue
        if args.per_task:
            print(f"{'default':>8} {'seed':>6} {'bm25':>6}  task")
            for i, case in enumerate(labels["tasks"]):
                row = [results[n][i] for n in ("default", "seed", "bm25")]
                cells = " ".join(f"{'-' if v is None else f'{v:.2f}':>6}" for v in row)
                print(f"  {cells}  {case['task'][:70]}")
        print(f"{set_name} ({path.name}): {graded} graded tasks, nDCG@{K}")
        for name in ("default", "seed", "bm25"):
            label = {"bm25": "plain BM25"}.get(name, f"{name} scorer")
            print(f"  {label:<16} {means[name]:.3f}")
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
