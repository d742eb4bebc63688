"""Memory at scale: a 100,000-lesson file, timed for cold load, recall and save.

Prints figures; it asserts nothing. Targets on the 2-core machine: cold load
<= 1.5 s, warm recall p50 <= 10 ms, save p50 (with dedup) <= 2 ms. Cold loads
run in a fresh interpreter: the first builds the index and writes its snapshot
(memory/snapshot.py), the second starts from the snapshot, as every later
build does.

    python benchmarks/bench_memory.py [--lessons 100000] [--queries 200] [--saves 300]

The lessons are variations of the real corpus (tests/fixtures/cadillac_corpus):
each takes a real lesson, moves it to one of a dozen stacks, and names files,
modules and identifiers of its own, so that texts, tags and source tasks vary
the way a long-lived memory's do and dedup finds few exact restatements.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory import Lesson, MemoryStore  # noqa: E402
from memory.lesson import assign_id  # noqa: E402
from memory.recall import BUILD_SCORER, RelevanceScorer  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus" / "lessons.jsonl"
STACKS = [
    ("python", ["python", "pytest"], ".py"),
    ("flask", ["python", "flask", "sqlite"], ".py"),
    ("fastapi", ["python", "fastapi", "aiosqlite"], ".py"),
    ("django", ["python", "django"], ".py"),
    ("pygame", ["python", "pygame"], ".py"),
    ("pytorch", ["python", "pytorch"], ".py"),
    ("react", ["typescript", "react", "vitest"], ".tsx"),
    ("express", ["typescript", "express", "jest"], ".ts"),
    ("node", ["javascript", "node"], ".js"),
    ("go", ["go"], ".go"),
    ("rust", ["rust", "cargo"], ".rs"),
    ("electron", ["typescript", "electron"], ".ts"),
]
WORDS = (
    "cache queue parser router worker ledger invoice auth session token upload export report "
    "scheduler plugin widget canvas sprite shader tensor loader batch stream socket channel "
    "migration schema index cursor pool retry backoff config logger metrics tracer"
).split()
TASKS = [
    "Build a {s} service for {a} and {b}",
    "A {s} command-line tool that manages {a}",
    "Write a {s} library for {a} {b} with tests",
    "A {s} app with a {a} dashboard",
]


def synthesize(n: int, seed: int = 1) -> list[Lesson]:
    rng = random.Random(seed)
    base = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    now = time.time()
    out: list[Lesson] = []
    taken: set[str] = set()
    for i in range(n):
        src = rng.choice(base)
        name, tags, ext = rng.choice(STACKS)
        a, b = rng.sample(WORDS, 2)
        ident = f"{a}_{b}{i}"
        lesson = Lesson(
            ts=now - rng.uniform(0, 400) * 86400,
            type=src["type"],
            trigger=f"{src['trigger']} in {ident}{ext}",
            fix=f"{src['fix']} (see {a}/{b}{ext})",
            confidence=round(rng.uniform(0.2, 1.0), 2),
            used=int(rng.expovariate(0.3)),
            polarity=src["polarity"],
            tags=[*tags, rng.choice(["build", "scaffold", "integrate", "validate"])],
            source_task=rng.choice(TASKS).format(s=name, a=a, b=b) if rng.random() < 0.6 else "",
        )
        assign_id(lesson, taken)
        taken.add(lesson.id)
        out.append(lesson)
    return out


def write(lessons: list[Lesson], path: Path) -> None:
    with path.open("w") as fh:
        for lesson in lessons:
            fh.write(lesson.model_dump_json() + "\n")


COLD = """
import sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from memory import MemoryStore
store = MemoryStore({path!r})
t1 = time.perf_counter()
store.file.refresh()
t2 = time.perf_counter()
n = len(store.all())
t3 = time.perf_counter()
store.recall("Build a flask service for cache and queue")
t4 = time.perf_counter()
print(f"{{t3 - t1:.2f}} s  (read and validate {{t2 - t1:.2f}} s, index {{t3 - t2:.2f}} s, "
      f"{{n:,}} lessons; imports {{t1 - t0:.2f}} s more; then the first recall "
      f"{{(t4 - t3) * 1000:.0f}} ms)")
"""


def cold_load(path: Path) -> str:
    """Open the memory in a fresh interpreter, as a new build would."""
    code = COLD.format(root=str(ROOT), path=str(path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--saves", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.jsonl"
        t0 = time.perf_counter()
        lessons = synthesize(args.lessons)
        write(lessons, path)
        size_mb = path.stat().st_size / 1e6
        print(
            f"memory file: {args.lessons:,} lessons, {size_mb:.1f} MB "
            f"(made in {time.perf_counter() - t0:.1f} s)"
        )

        for label in ("first open, no snapshot yet", "later open, with snapshot"):
            print(f"cold load, {label}: {cold_load(path)}")
        store = MemoryStore(path)
        store.all()

        rng = random.Random(2)
        tasks = [
            rng.choice(TASKS).format(s=rng.choice(STACKS)[0], a=a, b=b)
            for a, b in (rng.sample(WORDS, 2) for _ in range(args.queries))
        ]
        # Interleaved: each task is recalled under every scorer in turn, so that the
        # machine's other load falls on all of them alike and their figures compare.
        previous = RelevanceScorer(build_weight=0.0, prior=0.0, name="previous default")
        scorers = ("default", previous, "seed", BUILD_SCORER)
        for scorer in scorers:
            store.recall(tasks[0], scorer=scorer)  # warm the per-term arrays once
        times: dict[int, list[float]] = {k: [] for k in range(len(scorers))}
        for task in tasks:
            for k, scorer in enumerate(scorers):
                t0 = time.perf_counter()
                store.recall(task, limit=10, scorer=scorer)
                times[k].append((time.perf_counter() - t0) * 1000)
        for k, scorer in enumerate(scorers):
            name = getattr(scorer, "name", scorer)
            print(
                f"recall ({name}, warm): p50 {percentile(times[k], 50):.2f} ms, "
                f"p95 {percentile(times[k], 95):.2f} ms over {len(times[k])} tasks"
            )

        new_times: list[float] = []
        for lesson in synthesize(args.saves, seed=99):
            lesson.id = ""
            lesson.trigger += f" seen in run{rng.randrange(10**9)} of job{rng.randrange(10**9)}"
            t0 = time.perf_counter()
            merged = store.add(lesson)[1]
            if not merged:
                new_times.append((time.perf_counter() - t0) * 1000)
        print(
            f"save of a new lesson (dedup check + append): p50 {percentile(new_times, 50):.2f} ms,"
            f" p95 {percentile(new_times, 95):.2f} ms over {len(new_times)} saves"
        )
        merge_times = []
        for lesson in rng.sample(store.all(), 10):
            copy = lesson.model_copy(update={"id": "", "confidence": 0.3})
            t0 = time.perf_counter()
            assert store.add(copy)[1]
            merge_times.append((time.perf_counter() - t0) * 1000)
        print(
            f"save that merges (dedup + rewrite of the whole file): "
            f"p50 {percentile(merge_times, 50):.0f} ms over {len(merge_times)} saves"
        )

        times = []
        for task in tasks[:50]:
            store.save(Lesson(type="tool_pattern", trigger=f"{task} {time.time_ns()}", fix="x"))
            t0 = time.perf_counter()
            store.recall(task)
            times.append((time.perf_counter() - t0) * 1000)
        print(
            f"recall right after a save: p50 {percentile(times, 50):.2f} ms, "
            f"p95 {percentile(times, 95):.2f} ms"
        )


if __name__ == "__main__":
    main()
