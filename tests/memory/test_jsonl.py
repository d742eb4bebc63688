"""The shared JSONL file: torn and corrupt lines, quarantine, incremental reads, rewrites."""

from __future__ import annotations

import json
import warnings

import pytest
from pydantic import BaseModel

from memory.jsonl import CorruptLineWarning, JsonlFile


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
