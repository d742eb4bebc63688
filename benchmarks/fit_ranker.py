"""Fit the ``learned`` re-ranker (memory/rank.py) and print its cross-validated figures.

Data: the 58 hand-graded tasks of benchmarks/recall_labels.json (34, generous
grading) and benchmarks/recall_labels_heldout.json (24, strict), over the real
corpus. For each task the default scorer's best ``POOL`` lessons are described
by memory.rank.FEATURES; the model is linear, fitted with a pairwise logistic
loss (RankNet) plus L2 on every pair of differently graded pooled lessons of a
task, each task weighing the same, by Newton's method (numpy, deterministic).
The layers' penalty enters the loss as a fixed offset (-log penalty), as it does
when scoring.

Hyperparameters (L2 strength, pair weighting) are chosen by 5-fold
cross-validation over tasks *inside* each training split (nested), so every
out-of-fold figure is for a task that neither the weights nor the choice saw.
Two outer splits are reported: leave-one-set-out (fit on one set, score the
other) and 5-fold over the pooled tasks. Each figure has a 95% bootstrap
interval over tasks, as in recall_quality.py. Last, the configuration chosen by
5-fold CV on all 58 tasks is fitted on all of them and printed as the constants
for memory/rank.py.

    python benchmarks/fit_ranker.py [--quick]
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from recall_quality import CORPUS, LABEL_SETS, K, bootstrap, plain_bm25  # noqa: E402

from memory import MemoryStore  # noqa: E402
from memory.rank import FEATURES  # noqa: E402
from memory.recall import LearnedScorer  # noqa: E402

LAMBDAS = (1.0, 10.0)
PAIR_WEIGHTS = ("uniform",)  # "gain" (pairs weighted by 2^g_i - 2^g_j) is the other option
FOLDS = 5
SEED = 13


class Task:
    """One graded task: its pooled candidates, their features, grades and offsets."""

    def __init__(self, text, set_name, slots, x, grades, offset, idcg, default, bm25):
        self.text, self.set_name, self.slots, self.x = text, set_name, slots, x
        self.grades, self.offset, self.idcg = grades, offset, idcg
        self.default, self.bm25 = default, bm25
        self._pairs: dict[str, tuple] = {}

    def pairs(self, weighting: str):
        """(feature differences, offset differences, weights) of the task's graded pairs."""
        if weighting not in self._pairs:
            g = self.grades
            i, j = np.nonzero(g[:, None] > g[None, :])
            w = (2.0 ** g[i] - 2.0 ** g[j]) if weighting == "gain" else np.ones(len(i))
            diff = self.x[i] - self.x[j]
            self._pairs[weighting] = (diff, self.offset[i] - self.offset[j], w / max(w.sum(), 1))
        return self._pairs[weighting]


def dcg(grades: np.ndarray) -> float:
    return float(sum((2.0**g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:K])))


def load_tasks() -> list[Task]:
    store = MemoryStore(CORPUS)
    lessons = store.all()
    now = max(lesson.ts for lesson in lessons) + 86400
    index = store._sync()
    scorer = LearnedScorer()
    tasks = []
    for set_name, path in LABEL_SETS.items():
        for case in json.loads(path.read_text())["tasks"]:
            by_slot = {
                index.by_id[lessons[int(line) - 1].id]: g for line, g in case["grades"].items()
            }
            idcg = dcg(np.array(sorted(by_slot.values(), reverse=True), float))
            if idcg == 0:
                continue
            s, pool, x = scorer.pool_features(index, case["task"], now)
            grades = np.array([by_slot.get(int(i), 0) for i in pool], float)
            bm25 = [index.by_id[lid] for lid in plain_bm25(index, case["task"])]
            bm25_grades = np.array([by_slot.get(i, 0) for i in bm25], float)
            tasks.append(
                Task(
                    case["task"],
                    set_name,
                    pool,
                    x,
                    grades,
                    -np.log(s.penalty[pool]),
                    idcg,
                    dcg(grades) / idcg,  # the pool is in the default's order
                    dcg(bm25_grades) / idcg,
                )
            )
    return tasks


def fit(tasks: list[Task], lam: float, weighting: str):
    """(mean, scale, weights) minimising the per-task pairwise logistic loss + lam/2 |w|^2."""
    x_all = np.vstack([t.x for t in tasks])
    mean = x_all.mean(axis=0)
    scale = x_all.std(axis=0)
    scale[scale < 1e-9] = 1.0
    parts = [t.pairs(weighting) for t in tasks]
    d = np.vstack([p[0] for p in parts]) / scale  # the mean cancels in a difference
    off = np.concatenate([p[1] for p in parts])
    pw = np.concatenate([p[2] for p in parts])
    w = np.zeros(len(FEATURES))
    for _ in range(30):
        m = d @ w + off
        p = 1.0 / (1.0 + np.exp(np.clip(m, -50, 50)))  # sigmoid(-m)
        grad = -(d * (pw * p)[:, None]).sum(axis=0) + lam * w
        hess = (d * (pw * p * (1 - p))[:, None]).T @ d + lam * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return mean, scale, w


def ndcg_of(task: Task, model) -> float:
    mean, scale, w = model
    score = ((task.x - mean) / scale) @ w + task.offset
    order = np.lexsort((task.slots, -score))
    return dcg(task.grades[order]) / task.idcg


def folds(n: int, k: int, seed: int) -> list[np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(perm[f::k]) for f in range(k)]


def cv_score(tasks: list[Task], config, seed: int = SEED) -> float:
    scores = []
    for test in folds(len(tasks), FOLDS, seed):
        test_set = set(test.tolist())
        train = [t for i, t in enumerate(tasks) if i not in test_set]
        model = fit(train, *config)
        scores += [ndcg_of(tasks[i], model) for i in test]
    return float(np.mean(scores))


def choose(tasks: list[Task], configs, verbose: bool = False) -> tuple:
    scores = {c: cv_score(tasks, c) for c in configs}
    if verbose:
        for c, v in scores.items():
            print(f"  lambda {c[0]:<5g} {c[1]:<8} 5-fold CV nDCG@10 {v:.3f}")
    return max(configs, key=lambda c: (scores[c], -c[0]))


def out_of_fold(tasks: list[Task], splits, configs) -> tuple[np.ndarray, list]:
    """Each task's nDCG under a model fitted (and chosen) without it."""
    result = np.full(len(tasks), np.nan)
    chosen = []
    for test in splits:
        test_set = set(test.tolist())
        train = [t for i, t in enumerate(tasks) if i not in test_set]
        config = choose(train, configs)
        chosen.append(config)
        model = fit(train, *config)
        for i in test:
            result[i] = ndcg_of(tasks[i], model)
    return result, chosen


def ci(values: np.ndarray) -> str:
    mean, lo, hi = bootstrap(np.asarray(values))
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def dci(values: np.ndarray) -> str:
    mean, lo, hi = bootstrap(np.asarray(values))
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def report(tasks: list[Task], oof: np.ndarray, title: str) -> None:
    print(title)
    sets = {t.set_name for t in tasks}
    for set_name in [*LABEL_SETS, "pooled"]:
        if set_name != "pooled" and set_name not in sets:
            continue
        idx = [i for i, t in enumerate(tasks) if set_name in ("pooled", t.set_name)]
        d = np.array([tasks[i].default for i in idx])
        b = np.array([tasks[i].bm25 for i in idx])
        r = oof[idx]
        print(f"  {set_name} ({len(idx)} tasks)")
        print(f"    default scorer           {ci(d)}")
        print(f"    BM25 with tags           {ci(b)}")
        print(f"    learned (out of fold)    {ci(r)}")
        print(f"    learned - default        {dci(r - d)}  (paired)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one configuration, no nesting")
    args = parser.parse_args()
    tasks = load_tasks()
    configs = [(lam, pw) for pw in PAIR_WEIGHTS for lam in LAMBDAS]
    if args.quick:
        configs = [(10.0, "uniform")]
    print(f"{len(tasks)} graded tasks, {len(FEATURES)} features, pool {len(tasks[0].slots)}")

    names = list(LABEL_SETS)
    loso = [np.array([i for i, t in enumerate(tasks) if t.set_name == name]) for name in names]
    oof, chosen = out_of_fold(tasks, loso, configs)
    report(tasks, oof, f"leave-one-set-out (chosen per split: {chosen})")
    oof5, chosen5 = out_of_fold(tasks, folds(len(tasks), FOLDS, SEED + 1), configs)
    report(tasks, oof5, f"5-fold over tasks (chosen per fold: {chosen5})")

    print("\nconfiguration for the shipped weights, by 5-fold CV on all tasks:")
    config = choose(tasks, configs, verbose=True)
    mean, scale, w = fit(tasks, *config)
    print(f"\nfinal: {config}, fitted on all {len(tasks)} tasks; constants for memory/rank.py:")
    np.set_printoptions(precision=6, suppress=True, linewidth=100, floatmode="maxprec")
    for name, arr in (("MEAN", mean), ("SCALE", scale), ("WEIGHTS", w)):
        print(f"{name} = np.array([")
        for f, v in zip(FEATURES, arr, strict=True):
            print(f"    {float(v):.6g},  # {f}")
        print("])")
    fitted = np.array([ndcg_of(t, (mean, scale, w)) for t in tasks])
    print(f"in-sample nDCG@10 (optimistic): {ci(fitted)}")


if __name__ == "__main__":
    main()
