"""The cache notices a file another process replaced, even when its inode number comes back.

ext4 (and other file systems) give a freed inode number to the next new file: after
two rename-replaces the memory file can carry the very (device, inode) a reader
cached, and be longer than what it read. These tests run on the real temporary
folder (``filesystem`` and ``inode_reused`` are recorded as test properties and
printed) and never patch the code under test.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

import memory
from memory import Lesson, MemoryStore
from memory.jsonl import JsonlFile

ROOT = Path(memory.__file__).resolve().parents[1]  # the package under test, for the helper


class Row(BaseModel):
    n: int
    pad: str = ""


def filesystem(path: Path) -> str:
    """The type of the file system ``path`` is on, from /proc/self/mountinfo."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    real, best, kind = os.path.realpath(path), "", "unknown"
    for line in mounts:
        left, _, right = line.partition(" - ")
        point = left.split()[4]
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, right.split()[0]
    return kind


def rewrite(f: JsonlFile, keep) -> None:
    with f.lock:
        f.refresh_locked()
        f.rewrite_locked([r for r in f.records if keep(r)])


def old_rule_says_same_file(before: os.stat_result, now: os.stat_result, offset: int) -> bool:
    """The comparison ``refresh_locked`` made before: same (dev, inode), and it only grew."""
    return (before.st_dev, before.st_ino) == (now.st_dev, now.st_ino) and now.st_size >= offset


def forget_two_then_grow(writer: JsonlFile) -> None:
    """Another writer forgets the first two rows (two rewrites), then appends past the old size."""
    past = os.stat(writer.path).st_size
    for _ in range(2):
        first = writer.records[0]
        rewrite(writer, lambda r, first=first: r is not first)
    while os.stat(writer.path).st_size < past + 10:
        writer.append([Row(n=max(r.n for r in writer.records) + 1, pad="y" * 20)])


ROUNDS = 8


def test_a_reused_inode_number_fools_the_old_rule_but_not_the_cache(tmp_path, record_property):
    fs = filesystem(tmp_path)
    path = tmp_path / "rows.jsonl"
    writer = JsonlFile(path, Row)
    writer.append([Row(n=i, pad="x" * 20) for i in range(2 * ROUNDS + 5)])

    # 1. Nobody holds the file: how often would the old rule have taken the new file for the old?
    fooled = 0
    for _ in range(ROUNDS):
        before = os.stat(path)
        forget_two_then_grow(writer)
        fooled += old_rule_says_same_file(before, os.stat(path), before.st_size)
    record_property("filesystem", fs)
    record_property("old_rule_fooled_rounds", fooled)
    print(f"{fs}: the inode number came back (old rule fooled) in {fooled} of {ROUNDS} rounds")
    if not fooled:  # this file system did not reuse it: build the situation it would have made
        before, now = os.stat(path), os.stat(path)
        now = os.stat_result((now.st_mode, before.st_ino, *now[2:]))
        assert old_rule_says_same_file(before, now, before.st_size)

    # 2. A reader that cached the file: the same rounds never fool it.
    reader = JsonlFile(path, Row)
    reader.refresh()
    for _ in range(ROUNDS):
        held = os.stat(path).st_ino
        forget_two_then_grow(writer)
        assert os.stat(path).st_ino != held  # the reader holds it: the number cannot return
        assert reader.refresh().reset
        truth = [r.n for r in JsonlFile(path, Row).refresh().added]
        assert [r.n for r in reader.records] == truth
        assert not reader.rejected


# ---------------------------------------------------------------- two real processes
OTHER_PROCESS = r"""
import json, os, sys, tempfile
from memory import Lesson, MemoryStore

path, forget, word = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
past = os.stat(path).st_size
store = MemoryStore(path)
for lesson_id in forget:  # each forget is a rewrite: a new file renamed into place
    store.forget(lesson_id)
added = []
while os.stat(path).st_size < past + 10:  # then appends, until longer than what was cached
    n = len(added)
    lesson = Lesson(type="tool_pattern", trigger=f"{word} fresh{n} item{n}", fix="x")
    added.append(store.save(lesson).id)
inode = os.stat(path).st_ino

# The control: the same two rewrites of a file nobody holds. Does its number come back?
control = os.path.join(os.path.dirname(path), "control.jsonl")
with open(control, "w") as fh:
    fh.write("{}\n")
first = os.stat(control).st_ino
for _ in forget:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    os.write(fd, b"{}\n")
    os.close(fd)
    os.replace(tmp, control)
reused = os.stat(control).st_ino == first
os.unlink(control)
print(json.dumps({"inode": inode, "added": added, "control_reused": reused}))
"""


def other_process(path: Path, forget: list[Lesson], word: str) -> dict:
    """Run a second interpreter that forgets ``forget`` (one rewrite each), then appends."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ids = ",".join(x.id for x in forget)
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(path), ids, word],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def file_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


def test_a_store_never_serves_or_writes_back_what_another_process_forgot(home, record_property):
    path = home / "memory.jsonl"
    store = MemoryStore(path)
    words = "zebra quasar walrus nebula harpoon tundra saffron glacier lantern orchid".split()
    saved = [
        store.save(Lesson(type="error_pattern", trigger=f"{w} {w}ish {w}ing problem", fix=w))
        for w in words
    ]
    keep = saved[-1]
    assert len(store.all()) == len(words)  # cached
    gone: list[Lesson] = []
    added: set[str] = set()
    came_back, control = [], []
    for round_, word in enumerate(("alpha", "beta", "gamma", "delta")):
        cached = os.stat(path).st_ino
        forget = saved[2 * round_ : 2 * round_ + 2]
        report = other_process(path, forget, word)  # two rewrites, then appends
        gone += forget
        added |= set(report["added"])
        came_back.append(report["inode"] == cached)
        control.append(report["control_reused"])
        if round_ % 2 == 0:  # this store writes before it reads: nothing comes back
            assert store.boost_confidence([keep.id]) == [keep.id]  # a rewrite
            store.save(Lesson(type="dependency", trigger=f"pin {word} omega version", fix="pin"))
            on_disk = set(file_ids(path))
            assert not {x.id for x in gone} & on_disk and added <= on_disk
        ids = [x.id for x in store.all()]
        assert ids == file_ids(path)
        for lost in gone:
            assert lost.id not in ids
            assert store.get(lost.id) is None
            assert all(r.lesson.id != lost.id for r in store.recall(lost.trigger))
        assert added <= set(ids)
        store.boost_confidence([keep.id])  # and a rewrite after reading writes back none either
        on_disk = set(file_ids(path))
        assert not {x.id for x in gone} & on_disk and added <= on_disk
    assert MemoryStore(path).get(keep.id).used == 6

    fs = filesystem(home)
    record_property("filesystem", fs)
    record_property("inode_came_back", came_back)
    record_property("control_inode_reused", control)
    print(f"{fs}: the other process's file had the cached inode number: {came_back};")
    print(f"{fs}: a file nobody held got its inode number back after two rewrites: {control}")
    assert came_back == [False] * 4  # this store held its file, so the number never came back


# ---------------------------------------------------------------- descriptors
def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")


@needs_proc
def test_one_descriptor_per_file_however_often_it_is_replaced(tmp_path):
    path = tmp_path / "rows.jsonl"
    mine, other = JsonlFile(path, Row), JsonlFile(path, Row)
    other.append([Row(n=0)])
    mine.refresh()
    base = open_fds()
    for i in range(1, 60):
        if i % 2:
            rewrite(other, lambda r: True)
        else:
            other.append([Row(n=i)])
        mine.refresh()
    assert [r.n for r in mine.records] == [r.n for r in other.records]
    assert open_fds() == base
    mine.close()
    other.close()
    assert open_fds() == base - 2
    assert [r.n for r in mine.refresh().added] == [r.n for r in other.records]  # usable again
    path.unlink()
    assert mine.refresh().reset and mine.records == []
    assert open_fds() == base - 2  # a vanished file's descriptor is let go


@needs_proc
def test_stores_that_are_dropped_let_their_descriptor_go(home):
    path = home / "memory.jsonl"
    MemoryStore(path).save(Lesson(type="performance", trigger="cache the parsed config", fix="x"))
    gc.collect()
    base = open_fds()
    most = 0
    for i in range(400):
        store = MemoryStore(path)
        assert len(store.all()) == 1
        if i % 50 == 0:
            store.boost_confidence([store.all()[0].id])
        most = max(most, open_fds())
    assert most <= base + 2  # this store's and, until it is rebound, the last one's
    del store
    gc.collect()
    assert open_fds() == base
    kept = MemoryStore(path)
    kept.all()
    assert open_fds() == base + 1
    kept.close()
    assert open_fds() == base
    assert len(kept.all()) == 1


# ---------------------------------------------------------------- in place, same inode
def test_a_file_rewritten_in_place_is_read_again(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(5)))
    reader = JsonlFile(path, Row)
    reader.refresh()
    inode = os.stat(path).st_ino
    with open(path, "r+b") as fh:  # an editor saving over the file: same inode, longer
        fh.write("".join(json.dumps({"n": i * 10}) + "\n" for i in range(1, 9)).encode())
    assert os.stat(path).st_ino == inode
    assert reader.refresh().reset
    assert [r.n for r in reader.records] == [10, 20, 30, 40, 50, 60, 70, 80]
