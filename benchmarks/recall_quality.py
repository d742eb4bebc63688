"""Recall quality on the real lesson corpus: nDCG@10 of each scorer against hand grades.

Three label sets: for each realistic build task, the lessons of the earlier
system's corpus (tests/fixtures/cadillac_corpus/lessons.jsonl, cited by 1-based
line number) were graded by reading them: 2 = clearly useful for the task, 1 =
partly useful, absent = not relevant. ``recall_labels.json`` (34 tasks, generous
grading) and ``recall_labels_heldout.json`` (24 other tasks, strict grading), by
two graders independently, are the sets the default scorer's settings were chosen
on (the held-out set was made after the first settings and was never tuned on
until the stack prior and build-mates were weighed on both).
``recall_labels_blind.json`` (16 further tasks, by two more graders, 8 each, every
one of the 403 lessons judged for every task) was made after those weights were
fixed, without the graders seeing any scorer's output: it is the honest estimate,
and nothing may be tuned on it. The script prints, per set, nDCG@10 for the
default scorer, the seed's formula, plain BM25 over trigger and fix, BM25 over
trigger, fix *and tags* (the store's own index; no layers, no other signals: the
fair baseline, since the tags carry the stack), the ``build`` variant
(memory.recall.BUILD_SCORER), the previous default (text relevance alone:
no stack prior, no build-mates, stacks from tags; :data:`PREVIOUS_DEFAULT`, the
scorer the issue measured at 0.657 on its own set) and the default on raw tags
(each lesson's stacks from its tags alone, not its text: :data:`TAGS_DEFAULT`).
Each figure has a 95% confidence interval from a bootstrap over tasks (numpy,
fixed seed, 10,000 resamples), and so have the paired differences default - BM25
with tags, build - BM25 with tags, default - previous and default - raw tags (the
same resampled tasks for both).

The blind set stayed blind until the lessons' own stacks were weighed: three
ways of reading a lesson's stacks from its text were compared on all three sets,
and the one that gained on each of them was kept, so its blind figure is a second
reading, not an unseen one.

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
from memory.recall import BUILD_SCORER, RelevanceScorer  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus" / "lessons.jsonl"
LABEL_SETS = {
    "tuning set": Path(__file__).with_name("recall_labels.json"),
    "held-out set": Path(__file__).with_name("recall_labels_heldout.json"),
    "blind set": Path(__file__).with_name("recall_labels_blind.json"),
}
K = 10
PREVIOUS_DEFAULT = RelevanceScorer(build_weight=0.0, prior=0.0, own_stacks=False, name="previous")
"""The default scorer the issue measured: text relevance alone, stacks from tags alone
(before the stack prior, build-mates and lessons' own stacks joined it)."""
TAGS_DEFAULT = RelevanceScorer(own_stacks=False, name="tags")
"""The default scorer with each lesson's stacks taken from its tags alone."""
SCORERS = {
    "default": "default",
    "seed": "seed",
    "build": BUILD_SCORER,
    "previous": PREVIOUS_DEFAULT,
    "tags": TAGS_DEFAULT,
}
LABELS = {
    "default": "default scorer",
    "seed": "seed scorer",
    "bm25": "plain BM25",
    "bm25_tags": "BM25 with tags",
    "build": "build variant",
    "previous": "previous default",
    "tags": "default on raw tags",
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
    for name in ("previous", "tags"):
        mean, lo, hi = bootstrap(arrays["default"] - arrays[name])
        out[f"default-{name}"] = {"mean": mean, "lo": lo, "hi": hi}
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
    pooled: dict[str, list[float | None]] = {name: [] for name in LABELS}
    for set_name, path in LABEL_SETS.items():
        labels = json.loads(path.read_text())
        results = evaluate(store, labels, now)
        for name, values in results.items():
            pooled[name] += values
        report[set_name] = describe(set_name, path, labels, results, args)
    graded = sum(1 for v in pooled["bm25"] if v is not None)
    figures = summarise(pooled)
    report["all sets"] = {"tasks": len(pooled["bm25"]), "graded": graded, "ndcg@10": figures}
    if args.json:
        print(json.dumps(report))
        return
    print(f"all sets pooled: {graded} graded tasks")
    for name in ("default", "previous", "tags", "bm25_tags"):
        f = figures[name]
        print(f"  {LABELS[name]:<26} {f['mean']:.3f}  [{f['lo']:.3f}, {f['hi']:.3f}]")
    print_differences(figures)


def print_differences(figures: dict) -> None:
    """The paired differences of the default against the scorers it replaced."""
    for name in ("previous", "tags"):
        f = figures[f"default-{name}"]
        label = f"default - {name}"
        print(f"  {label:<26} {f['mean']:+.3f} [{f['lo']:+.3f}, {f['hi']:+.3f}]  (paired)")


def describe(set_name: str, path: Path, labels: dict, results: dict, args) -> dict:
    """One set's figures; printed unless ``--json``."""
    figures = summarise(results)
    graded = sum(1 for v in results["bm25"] if v is not None)
    if not args.json:
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
        print_differences(figures)
    return {"tasks": len(labels["tasks"]), "graded": graded, "ndcg@10": figures}


if __name__ == "__main__":
    main()
