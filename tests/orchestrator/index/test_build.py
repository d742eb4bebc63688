"""Building an index: what is walked and skipped, what is written, and incremental builds."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from orchestrator.errors import CadillacError
from orchestrator.index import SCHEMA_VERSION, CodeIndex, IndexConfig, build_index
from orchestrator.index import build as build_module
from orchestrator.index.walk import Entry, Walk
from tests.orchestrator.index.conftest import LEFT_OUT


def _paths(out: Path) -> set[str]:
    return {json.loads(line)["path"] for line in (out / "files.jsonl").read_text().splitlines()}


def test_ignored_folders_gitignored_and_binary_files_are_left_out(built, out):
    paths = _paths(out)
    assert "src/shop/models.py" in paths and "web/src/cart.ts" in paths
    assert "web/.gitignore" in paths and "scripts/tool.lua" in paths
    assert not paths & set(LEFT_OUT)  # *.log, /scratch/, web/'s own .gitignore, skip folders
    assert "data/logo.png" not in paths
    assert "data/logo.png: a binary file, not read" in built.skipped
    assert not any(s.startswith(tuple(LEFT_OUT)) for s in built.skipped)  # ignored quietly


def test_nested_gitignore_negation_and_folder_rules(tree, out):
    (tree / "logs").mkdir()
    (tree / "logs" / ".gitignore").write_text("!keep.log\n")
    (tree / "logs" / "keep.log").write_text("kept\n")
    (tree / "logs" / "drop.log").write_text("dropped\n")
    build_index(tree, out)
    paths = _paths(out)
    assert "logs/keep.log" in paths and "logs/drop.log" not in paths


def test_oversized_files_and_the_file_cap_are_reported(tree, out):
    (tree / "big.txt").write_text("x" * 5000)
    report = build_index(tree, out, config=IndexConfig(max_file_bytes=4096))
    assert "big.txt: 5,000 bytes, over the size limit" in report.skipped
    capped = build_index(tree, out, full=True, config=IndexConfig(max_files=5))
    assert capped.files == 5
    assert any("the walk stopped here, at the limit (5 files" in s for s in capped.skipped)


def test_the_output_files_and_their_records(built, out, tree):
    assert sorted(p.name for p in out.iterdir()) == [
        "digest.md",
        "files.jsonl",
        "index.json",
        "relations.jsonl",
        "symbols.jsonl",
    ]  # nothing temporary left behind
    rows = [json.loads(line) for line in (out / "files.jsonl").read_text().splitlines()]
    files = {row["path"]: row for row in rows}
    broken = files["src/shop/broken.py"]
    assert broken["parse_errors"] is True and broken["language"] == "python"
    assert len(broken["sha256"]) == 64 and broken["lines"] == 10
    assert files["docs/notes.txt"]["parse_errors"] is False
    symbol = json.loads((out / "symbols.jsonl").read_text().splitlines()[0])
    assert list(symbol) == "name kind path start_line end_line signature doc parent".split()
    meta = json.loads((out / "index.json").read_text())
    assert meta["schema_version"] == SCHEMA_VERSION and meta["root"] == str(tree)
    assert meta["counts"]["files"] == built.files == len(files)
    assert meta["counts"]["symbols"] == built.symbols
    assert meta["languages"]["python"] == 9 and built.languages == meta["languages"]
    assert built.parsed == built.files and built.reused == 0


def test_an_edit_reindexes_exactly_that_file(built, tree, out):
    again = build_index(tree, out)
    assert (again.parsed, again.reused, again.removed) == (0, built.files, 0)
    pricing = tree / "src" / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text() + "\n\ndef discount(x: float) -> float:\n    return x\n")
    edited = build_index(tree, out)
    assert (edited.parsed, edited.reused) == (1, built.files - 1)
    assert edited.symbols == built.symbols + 1
    found = CodeIndex.load(out).symbol("discount")
    assert [(s.path, s.start_line) for s in found] == [("src/shop/pricing.py", 13)]
    assert CodeIndex.load(out).symbol("total")  # the reused files' symbols are still there


def test_files_that_go_are_dropped_and_new_ones_parsed(built, tree, out):
    (tree / "docs" / "notes.txt").unlink()
    (tree / "docs" / "more.md").write_text("# More\n")
    report = build_index(tree, out)
    assert (report.parsed, report.removed, report.files) == (1, 1, built.files)
    assert "docs/notes.txt" not in _paths(out) and "docs/more.md" in _paths(out)


def test_full_and_a_schema_change_rebuild_everything(built, tree, out, monkeypatch):
    assert build_index(tree, out, full=True).parsed == built.files
    meta = json.loads((out / "index.json").read_text())
    (out / "index.json").write_text(json.dumps({**meta, "schema_version": SCHEMA_VERSION - 1}))
    assert build_index(tree, out).parsed == built.files
    monkeypatch.setattr(build_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    assert build_index(tree, out).parsed == built.files


def test_an_index_of_the_last_schema_loads_and_is_rebuilt(tree, out):
    # Schema 1 missed definitions under a module's if/try/with: its records still load
    # (the reader says to rebuild), and the next build parses every file again.
    (tree / "src" / "shop" / "locks.py").write_text(
        'import os\n\nif os.name == "nt":\n\n    def lock(f):\n        return True\n\n'
        "else:\n\n    def lock(f):\n        return False\n"
    )
    built = build_index(tree, out)
    lines = (out / "symbols.jsonl").read_text().splitlines()
    (out / "symbols.jsonl").write_text("".join(f"{x}\n" for x in lines if '"lock"' not in x))
    meta = json.loads((out / "index.json").read_text())
    (out / "index.json").write_text(json.dumps({**meta, "schema_version": 1}))
    old = CodeIndex.load(out)
    assert old.files and old.symbol("lock") == []
    assert old.problems == [f"the index in {out} has schema 1, this cadillac reads 2: rebuild it"]
    assert build_index(tree, out).parsed == built.files
    assert [s.start_line for s in CodeIndex.load(out).symbol("lock")] == [5, 10]


def test_a_damaged_index_is_rebuilt_not_trusted(built, tree, out):
    with open(out / "symbols.jsonl", "a") as fh:
        fh.write("not json\n")
    assert build_index(tree, out).parsed == built.files


def test_an_index_kept_inside_the_tree_leaves_itself_out(tree):
    inside = tree / ".cadillac-index"
    build_index(tree, inside)
    build_index(tree, inside)
    assert not any(p.startswith(".cadillac-index") for p in _paths(inside))


def test_the_output_folder_must_be_a_folder(tree, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(CadillacError, match="a symbolic link"):
        build_index(tree, tmp_path / "link")
    with pytest.raises(CadillacError, match="not a folder"):
        build_index(tmp_path / "missing", tmp_path / "out")


# --- a tree written by a hostile model --------------------------------------------------

SECRET = "s3cr3t-token-do-not-index"


def _hostile(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f'TOKEN = "{SECRET}"\ndef leaked(): ...\n')
    (tree / "innocent.py").symlink_to(outside / "secret.py")
    (tree / "vendored").symlink_to(outside)
    (tree / "src" / ".gitignore").symlink_to(outside / "secret.py")
    os.mkfifo(tree / "pipe.py")


def test_links_out_of_the_tree_and_a_fifo_are_listed_never_read(tree, out, tmp_path):
    _hostile(tree, tmp_path)
    done: list = []
    worker = threading.Thread(target=lambda: done.append(build_index(tree, out)), daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "the walk hung on the FIFO"
    report = done[0]
    assert "innocent.py: a symbolic link, not read" in report.skipped
    assert "vendored: a symbolic link, not read" in report.skipped
    assert "src/.gitignore: a symbolic link, not read" in report.skipped
    assert "pipe.py: a FIFO, not read" in report.skipped
    for path in out.iterdir():
        text = path.read_text()
        assert SECRET not in text and "leaked" not in text, path.name
    assert not CodeIndex.load(out).symbol("leaked")


def test_a_file_swapped_for_a_link_after_listing_is_refused(tree, tmp_path):
    _hostile(tree, tmp_path)
    walk = Walk(tree)
    for entry in walk:
        if entry.rel == "Makefile":
            os.unlink(tree / "Makefile")
            os.symlink(tmp_path / "outside" / "secret.py", tree / "Makefile")
            with pytest.raises(OSError):
                entry.read(1024)


def test_files_settled_since_the_last_walk_are_not_read_again(tree, out, monkeypatch):
    hour_ago = time.time_ns() - 3600 * 10**9
    for path in tree.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, ns=(hour_ago, hour_ago))
    first = build_index(tree, out)
    reads: list[str] = []
    real_read = Entry.read
    monkeypatch.setattr(
        Entry, "read", lambda self, limit: reads.append(self.rel) or real_read(self, limit)
    )
    pricing = tree / "src" / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text().replace("0.2", "0.3"))  # same size, a new time
    again = build_index(tree, out)
    assert (again.parsed, again.reused) == (1, first.files - 1)
    read = [r for r in reads if not r.endswith(".gitignore")]
    assert read == ["data/logo.png", "src/shop/pricing.py"]  # the binary has no record to trust


def test_a_long_walk_tells_how_far_it_is(tmp_path, monkeypatch):
    """``cadillac index`` shows this as it goes: files walked and parsed, never going back."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(60):
        (tree / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    monkeypatch.setattr(build_module, "PROGRESS_EVERY_S", 0.0)
    heard: list[tuple[int, int]] = []
    report = build_module.build_index(tree, tmp_path / "out", progress=lambda *p: heard.append(p))
    assert len(heard) >= 59 and heard == sorted(heard)
    assert heard[-1][0] <= report.files == 60 and heard[-1][1] <= report.parsed
    again: list[tuple[int, int]] = []
    build_module.build_index(tree, tmp_path / "out", progress=lambda *p: again.append(p))
    assert again and all(parsed == 0 for _, parsed in again)  # all reused the second time
