"""Recall quality on the real lesson corpus: nDCG@10 of each scorer against hand grades.

Two label sets, made by two graders independently: for each realistic build
task, the lessons of the earlier system's corpus
(tests/fixtures/cadillac_corpus/lessons.jsonl, cited by 1-based line number)
were graded by reading them: 2 = clearly useful for the task, 1 = partly
useful, absent = not relevant. ``recall_labels.json`` (34 tasks, generous
grading) is the set the default scorer's few settings were chosen on;
``recall_labels_heldout.json`` (24 other tasks, strict grading) was made
afterwards and never tuned on. The script prints, per set, nDCG@10 for the
default scorer, the seed's formula, plain BM25 over trigger and fix, BM25 over
trigger, fix *and tags* (the store's own index; no layers, no other signals: the
fair baseline, since the tags carry the stack), the ``build`` variant
(memory.recall.BUILD_SCORER) and the ``learned`` re-ranker
(memory.recall.LEARNED_SCORER; fitted on both sets, so its figures here are in
sample: benchmarks/fit_ranker.py prints the out-of-fold ones). Each figure has a
95% confidence interval from a bootstrap over tasks (numpy, fixed seed, 10,000
resamples), and so have the paired differences default - BM25 with tags and
learned - default (the same resampled tasks for both).

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
from memory.recall import BUILD_SCORER, LEARNED_SCORER, RelevanceScorer  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus" / "lessons.jsonl"
LABEL_SETS = {
    "tuning set": Path(__file__).with_name("recall_labels.json"),
    "held-out set": Path(__file__).with_name("recall_labels_heldout.json"),
}
K = 10
SCORERS = {"default": "default", "seed": "seed", "build": BUILD_SCORER, "learned": LEARNED_SCORER}
LABELS = {
    "default": "default scorer",
    "seed": "seed scorer",
    "bm25": "plain BM25",
    "bm25_tags": "BM25 with tags",
    "build": "build variant",
    "learned": "learned re-ranker",
}
RESAMPLES = 10_000
SEED = 13


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
    tagged = store._sync()  # the store's own index: trigger, fix and tags
    results: dict[str, list[float | None]] = {name: [] for name in LABELS}
    for case in labels["tasks"]:
        grades = {lessons[int(line) - 1].id: g for line, g in case["grades"].items()}
        for name, scorer in SCORERS.items():
            ranked = [r.lesson.id for r in store.recall(case["task"], K, scorer=scorer, now=now)]
            results[name].append(ndcg(ranked, grades))
        results["bm25"].append(ndcg(plain_bm25(plain, case["task"]), grades))
        results["bm25_tags"].append(ndcg(plain_bm25(tagged, case["task"]), grades))
    return results


def bootstrap(values: np.ndarray, rng_seed: int = SEED) -> tuple[float, float, float]:
    """Mean and 95% percentile interval of the mean, resampling tasks with replacement."""
    rng = np.random.default_rng(rng_seed)
    picks = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    means = values[picks].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(values.mean()), float(lo), float(hi)


def summarise(results: dict[str, list[float | None]]) -> dict[str, dict[str, float]]:
    """Per scorer (and for the paired difference): mean with its interval, over graded tasks."""
    graded = [i for i, v in enumerate(results["bm25"]) if v is not None]
    arrays = {name: np.array([vals[i] for i in graded]) for name, vals in results.items()}
    out = {}
    for name, values in arrays.items():
        mean, lo, hi = bootstrap(values)
        out[name] = {"mean": mean, "lo": lo, "hi": hi}
    for name in ("default", "build"):
        mean, lo, hi = bootstrap(arrays[name] - arrays["bm25_tags"])
        out[f"{name}-bm25_tags"] = {"mean": mean, "lo": lo, "hi": hi}
    mean, lo, hi = bootstrap(arrays["learned"] - arrays["default"])
    out["learned-default"] = {"mean": mean, "lo": lo, "hi": hi}
    return out


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
        figures = summarise(results)
        graded = sum(1 for v in results["bm25"] if v is not None)
        report[set_name] = {"tasks": len(labels["tasks"]), "graded": graded, "ndcg@10": figures}
        if args.json:
            continue
        if args.per_task:
            print("  ".join(f"{n:>9}" for n in LABELS) + "  task")
            for i, case in enumerate(labels["tasks"]):
                row = [results[n][i] for n in LABELS]
                cells = "  ".join(f"{'-' if v is None else f'{v:.2f}':>9}" for v in row)
                print(f"{cells}  {case['task'][:60]}")
        print(f"{set_name} ({path.name}): {graded} graded tasks, nDCG@{K} [95% CI over tasks]")
        for name, label in LABELS.items():
            f = figures[name]
            print(f"  {label:<26} {f['mean']:.3f}  [{f['lo']:.3f}, {f['hi']:.3f}]")
        for name in ("default", "build"):
            f = figures[f"{name}-bm25_tags"]
            label = f"{name} - BM25 with tags"
            print(f"  {label:<26} {f['mean']:+.3f} [{f['lo']:+.3f}, {f['hi']:+.3f}]  (paired)")
        f = figures["learned-default"]
        label = "learned - default"
        cells = f"{f['mean']:+.3f} [{f['lo']:+.3f}, {f['hi']:+.3f}]"
        print(f"  {label:<26} {cells}  (paired, in sample)")
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
