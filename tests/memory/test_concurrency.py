"""Several processes writing one memory file at once lose nothing."""

from __future__ import annotations

import json
import multiprocessing as mp

from memory import Lesson, MemoryStore

WORKERS = 4
PER_WORKER = 200
SHARED = 50  # lessons every worker saves with the same trigger: merged, not duplicated


def _worker(path: str, worker: int, queue, barrier) -> None:
    store = MemoryStore(path)
    barrier.wait(timeout=60)  # all four start writing together
    merged = 0
    for i in range(PER_WORKER):
        if i < SHARED:
            trigger = f"shared pitfall{i} in case{i} of sqlite{i}"
        else:
            trigger = f"worker{worker} lesson{i} about topic{worker * 1000 + i}"
        lesson = Lesson(
            type="error_pattern", trigger=trigger, fix=f"fix from {worker}", tags=["python"]
        )
        merged += store.add(lesson)[1]
    queue.put(merged)


def test_four_processes_saving_200_lessons_each_lose_nothing(home):
    path = home / "memory.jsonl"
    ctx = mp.get_context("spawn")
    queue, barrier = ctx.Queue(), ctx.Barrier(WORKERS)
    procs = [
        ctx.Process(target=_worker, args=(str(path), w, queue, barrier)) for w in range(WORKERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    merged = sum(queue.get(timeout=5) for _ in procs)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert merged == SHARED * (WORKERS - 1)
    assert len(rows) == WORKERS * PER_WORKER - merged
    triggers = [r["trigger"] for r in rows]
    assert len(set(triggers)) == len(triggers)
    for w in range(WORKERS):
        mine = [t for t in triggers if t.startswith(f"worker{w} ")]
        assert len(mine) == PER_WORKER - SHARED
    assert len({r["id"] for r in rows}) == len(rows)
    assert len(MemoryStore(path).all()) == len(rows)
