"""The shared JSONL file: torn and corrupt lines, quarantine, incremental reads, rewrites."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import warnings

import pytest
from pydantic import BaseModel

from memory.jsonl import CorruptLineWarning, JsonlFile

BOM = b"\xef\xbb\xbf"


class Row(BaseModel):
    n: int


def lines(path) -> list[str]:
    return path.read_text().splitlines()


def test_append_and_read_back(tmp_path):
    path = tmp_path / "rows.jsonl"
    f = JsonlFile(path, Row)
    change = f.append([Row(n=1), Row(n=2)])
    assert [r.n for r in change.added] == [1, 2]
    assert lines(path) == ['{"n":1}', '{"n":2}']
    assert [r.n for r in JsonlFile(path, Row).refresh().added] == [1, 2]


def test_missing_file_reads_as_empty(tmp_path):
    f = JsonlFile(tmp_path / "none.jsonl", Row)
    assert f.refresh().added == [] and f.records == []


def test_corrupt_line_is_skipped_with_its_line_number(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\nnot json\n{"n": "x"}\n{"n": 4}\n')
    f = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning) as caught:
        f.refresh()
    assert [r.n for r in f.records] == [1, 4]
    messages = [str(w.message) for w in caught]
    assert any(":2: invalid line" in m for m in messages)
    assert any(":3: invalid line" in m and "n:" in m for m in messages)
    assert [r.lineno for r in f.rejected] == [2, 3]


def test_rewrite_moves_bad_lines_aside_instead_of_dropping_them(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\nnot json\n{"n": 3}\n{"n": 4, "tor')  # corrupt line + torn tail
    f = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning):
        f.refresh()
    with f.lock, pytest.warns(CorruptLineWarning, match="moved 2 invalid line"):
        f.refresh_locked()
        f.rewrite_locked(f.records[:1])
    assert lines(path) == ['{"n": 1}']  # an unchanged record keeps its very line
    kept = [json.loads(x) for x in lines(f.rejected_path)]
    assert [(k["lineno"], k["raw"]) for k in kept] == [(2, "not json"), (4, '{"n": 4, "tor')]


def test_append_after_torn_line_does_not_glue_onto_it(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\n{"n": 2, "to')
    f = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning, match=":2: torn"):
        f.refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the torn line was reported once already
        change = f.append([Row(n=3)])
    assert [r.n for r in change.added] == [3]
    assert lines(path) == ['{"n": 1}', '{"n": 2, "to', '{"n":3}']
    assert [r.n for r in f.records] == [1, 3]
    assert [r.lineno for r in f.rejected] == [2]
    fresh = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning, match=":2: invalid"):
        fresh.refresh()
    assert [r.n for r in fresh.records] == [1, 3]


def test_valid_last_line_without_newline_is_a_record(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\n{"n": 2}')
    f = JsonlFile(path, Row)
    assert [r.n for r in f.refresh().added] == [1, 2]
    f.append([Row(n=3)])
    assert lines(path) == ['{"n": 1}', '{"n": 2}', '{"n":3}']
    assert [r.n for r in f.records] == [1, 2, 3]
    assert [r.n for r in JsonlFile(path, Row).refresh().added] == [1, 2, 3]


def test_growth_is_read_incrementally_and_a_replacement_from_scratch(tmp_path):
    path = tmp_path / "rows.jsonl"
    mine, other = JsonlFile(path, Row), JsonlFile(path, Row)
    mine.append([Row(n=1)])
    first = mine.records[0]
    other.append([Row(n=2)])  # another writer appends
    change = mine.refresh()
    assert not change.reset and [r.n for r in change.added] == [2]
    assert mine.records[0] is first  # the old record was not parsed again
    assert mine.refresh().added == []  # unchanged: nothing read
    with other.lock:
        other.refresh_locked()
        other.rewrite_locked([Row(n=9)])  # another writer replaces the file
    change = mine.refresh()
    assert change.reset and [r.n for r in mine.records] == [9]


def test_a_rewrite_serialises_changed_records_and_copies_the_rest(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1,  "x": 0}\n{"n": 2}\n')
    f = JsonlFile(path, Row)
    f.refresh()
    one, two = f.records
    two.n = 20
    with f.lock:
        f.refresh_locked()
        f.rewrite_locked([one, two], changed=[two])
    assert lines(path) == ['{"n": 1,  "x": 0}', '{"n":20}']
    assert [r.n for r in JsonlFile(path, Row).refresh().added] == [1, 20]


def test_blank_lines_are_ignored_without_warning(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\n\n   \n{"n": 2}\n')
    f = JsonlFile(path, Row)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.refresh()
    assert [r.n for r in f.records] == [1, 2]


def test_rewrite_is_atomic_and_leaves_no_temporary_files(tmp_path):
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "rows.jsonl"
    f = JsonlFile(path, Row)
    f.append([Row(n=i) for i in range(5)])
    with f.lock:
        f.refresh_locked()
        f.rewrite_locked([r for r in f.records if r.n % 2 == 0])
    assert lines(path) == ['{"n":0}', '{"n":2}', '{"n":4}']
    assert sorted(p.name for p in path.parent.iterdir()) == ["rows.jsonl", "rows.jsonl.lock"]


def test_a_home_where_no_lock_can_be_made_can_still_be_read(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\n')
    (tmp_path / "rows.jsonl.lock").mkdir()  # the lock file cannot be created
    f = JsonlFile(path, Row)
    assert [r.n for r in f.refresh().added] == [1]


# ---------------------------------------------------------------- symlinks
def rewrite(f: JsonlFile, keep) -> None:
    with f.lock:
        f.refresh_locked()
        f.rewrite_locked([r for r in f.records if keep(r)])


def test_a_rewrite_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    shared, home, other_home = tmp_path / "shared", tmp_path / "mine", tmp_path / "other"
    for folder in (shared, home, other_home):
        folder.mkdir()
    target = shared / "lessons.jsonl"
    link = home / "rows.jsonl"
    link.symlink_to("../shared/lessons.jsonl")  # relative, as `ln -s ../shared/...` makes it
    (other_home / "rows.jsonl").symlink_to(target)
    f, other = JsonlFile(link, Row), JsonlFile(other_home / "rows.jsonl", Row)
    f.append([Row(n=i) for i in range(4)])
    assert [r.n for r in other.refresh().added] == [0, 1, 2, 3]
    rewrite(f, lambda r: r.n % 2)
    assert link.is_symlink() and os.readlink(link) == "../shared/lessons.jsonl"
    assert lines(target) == ['{"n":1}', '{"n":3}']
    assert sorted(os.listdir(shared)) == ["lessons.jsonl", "lessons.jsonl.lock"]  # no temporary
    assert os.listdir(home) == ["rows.jsonl"]
    assert f.lock.lock_file == other.lock.lock_file == str(target) + ".lock"  # one lock for both
    assert other.refresh().reset and [r.n for r in other.records] == [1, 3]
    rewrite(other, lambda r: r.n == 3)
    assert (other_home / "rows.jsonl").is_symlink() and lines(target) == ['{"n":3}']
    assert [r.n for r in f.refresh().added] == [3]


# ---------------------------------------------------------------- writes that cannot be made
def one_line_naming(exc: BaseException, path) -> str:
    message = str(exc)
    assert "\n" not in message and str(path) in message and "nothing was changed" in message
    return message


def test_a_read_only_file_is_never_changed_and_says_so_in_one_line(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    path = folder / "rows.jsonl"
    path.write_text('{"n": 1}\nnot json\n{"n": 2}\n')
    path.chmod(0o444)  # honoured by root too, who could otherwise write it
    before = path.read_bytes()
    f = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning):
        f.refresh()
    with f.lock, pytest.raises(PermissionError) as caught:
        f.refresh_locked()
        f.rewrite_locked(f.records[:1])
    assert "read-only" in one_line_naming(caught.value, path) and "chmod" in str(caught.value)
    assert caught.value.filename == str(path)
    with pytest.raises(PermissionError) as caught:
        f.append([Row(n=3)])
    assert "read-only" in one_line_naming(caught.value, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(folder)) == ["rows.jsonl", "rows.jsonl.lock"]  # nothing moved aside
    path.chmod(0o644)  # made writable, the same object writes as usual
    with pytest.warns(CorruptLineWarning, match="moved 1 invalid line"):
        rewrite(f, lambda r: r.n == 1)
    assert lines(path) == ['{"n": 1}']


def test_a_folder_where_no_temporary_file_fits_fails_in_one_line_and_keeps_the_file(tmp_path):
    # 250 characters: the file and its lock file have legal names, a temporary beside them not,
    # so mkstemp fails here even for root.
    folder = tmp_path / "d"
    folder.mkdir()
    path = folder / ("m" * 244 + ".jsonl")
    path.write_text('{"n": 1}\n{"n": 2}\n')
    before = path.read_bytes()
    f = JsonlFile(path, Row)
    f.refresh()
    with f.lock, pytest.raises(OSError) as caught:
        f.refresh_locked()
        f.rewrite_locked(f.records[:1])
    message = one_line_naming(caught.value, path)
    assert "temporary file" in message and f"in {folder} (" in message
    assert path.read_bytes() == before
    assert sorted(os.listdir(folder)) == [path.name, path.name + ".lock"]
    assert [r.n for r in f.refresh().added] == [] and [r.n for r in f.records] == [1, 2]


FOLDER_WITHOUT_WRITE = """
import os, sys
from pathlib import Path
from pydantic import BaseModel
from memory.jsonl import JsonlFile

class Row(BaseModel):
    n: int

path = Path(sys.argv[1])
f = JsonlFile(path, Row)
f.refresh()
try:
    with f.lock:
        f.refresh_locked()
        f.rewrite_locked(f.records[:1])
except OSError as exc:
    print("refused:", str(exc).splitlines()[0])
"""


def test_a_folder_without_write_permission_fails_in_one_line_and_keeps_the_file(tmp_path):
    """Run as an unprivileged user (in cadillac's sandbox, where even root's mapped user has
    no capabilities), so the folder's permission bits bind whoever runs the tests."""
    import sys
    from pathlib import Path

    from orchestrator.sandbox.executor import ExecConfig, run_command

    folder = tmp_path / "d"
    folder.mkdir()
    path = folder / "rows.jsonl"
    path.write_text('{"n": 1}\n{"n": 2}\n')
    (folder / "rows.jsonl.lock").touch()
    folder.chmod(0o555)
    root = Path(__file__).resolve().parents[2]
    try:
        done = run_command(
            f"python -c '{FOLDER_WITHOUT_WRITE}' {path}",
            tmp_path,
            ExecConfig(),
            path_prefix=[Path(sys.executable).parent],
            env={"PYTHONPATH": str(root)},
            visible=[root, Path(sys.prefix)],
        )
        assert done.ok, done.output
        (refusal,) = [x for x in done.output.splitlines() if x.startswith("refused:")]
        assert "temporary file" in refusal and str(path) in refusal
        assert lines(path) == ['{"n": 1}', '{"n": 2}']
        assert sorted(os.listdir(folder)) == ["rows.jsonl", "rows.jsonl.lock"]
    finally:
        folder.chmod(0o755)


# ---------------------------------------------------------------- bytes kept exactly
def test_rejected_lines_are_kept_byte_for_byte_in_a_jsonl_file(tmp_path):
    bad = [
        b"not json\r",
        b'{"n": "caf\xc3\xa9"}',  # valid UTF-8, not a valid record
        b'{"n": 1, "note": "caf\xe9"}',  # Latin-1: not UTF-8
        b"\xff\xfe\x00{garbage",
        b"\xed\xa0\x80 half a surrogate",  # not UTF-8 either, though some encoders make it
    ]
    torn = b'{"n": 9, "t\xc3'  # a writer killed inside a UTF-8 sequence
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"n": 1}\n' + b"\n".join(bad) + b'\n{"n": 2}\n' + torn)
    f = JsonlFile(path, Row)
    with pytest.warns(CorruptLineWarning):
        f.refresh()
    with pytest.warns(CorruptLineWarning, match="moved 6 invalid line"):
        rewrite(f, lambda r: True)
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2}\n'
    kept = f.rejected_path.read_bytes()
    entries = [json.loads(line) for line in kept.split(b"\n")[:-1]]  # one JSON object a line
    assert len(entries) == 6 and kept.endswith(b"\n")
    recovered = [
        base64.b64decode(e["raw_b64"]) if "raw_b64" in e else e["raw"].encode("utf-8")
        for e in entries
    ]
    assert recovered == [*bad, torn]
    assert ["raw_b64" in e for e in entries] == [False, False, True, True, True, True]
    assert [e["lineno"] for e in entries] == [2, 3, 4, 5, 6, 8]
    assert all(e["source"] == str(path) and e["error"] for e in entries)
    if shutil.which("jq"):
        done = subprocess.run(["jq", "-c", ".lineno", str(f.rejected_path)], capture_output=True)
        assert done.returncode == 0 and done.stdout.split() == [b"2", b"3", b"4", b"5", b"6", b"8"]


def test_a_byte_order_mark_is_read_past_and_dropped_by_a_rewrite(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(BOM + b'{"n": 1}\n{"n": 2}\n')
    f = JsonlFile(path, Row)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.refresh()
        assert [r.n for r in f.records] == [1, 2] and not f.rejected
        f.append([Row(n=3)])  # an append leaves the start of the file alone
        assert path.read_bytes() == BOM + b'{"n": 1}\n{"n": 2}\n{"n":3}\n'
        assert [r.n for r in JsonlFile(path, Row).refresh().added] == [1, 2, 3]
        rewrite(f, lambda r: True)
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2}\n{"n":3}\n'  # the rewrite drops it
    assert [r.n for r in JsonlFile(path, Row).refresh().added] == [1, 2, 3]
