"""Hidden checks for csv-json-transform: type inference, writing, grouping and the CLI."""

import json
import os
import subprocess
import sys
import tempfile

from csvjson import csv_to_records, group_by, records_to_csv

ROOT = os.getcwd()
CSV = (
    "name,age,score,active,city\n"
    "Ann,31,9.5,true,Oslo\n"
    "Bob,-4,10,false,\n"
    '"Lee, Jr.",7,0.25,yes,Oslo\n'
)


def _run(*args):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "csvjson.py"), *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


def test_csv_to_records_infers_types():
    records = csv_to_records(CSV)
    assert records[0] == {"name": "Ann", "age": 31, "score": 9.5, "active": True, "city": "Oslo"}
    assert records[1] == {"name": "Bob", "age": -4, "score": 10, "active": False, "city": None}
    assert records[2]["name"] == "Lee, Jr." and records[2]["active"] == "yes"
    assert type(records[1]["score"]) is int and type(records[2]["score"]) is float
    assert list(records[0]) == ["name", "age", "score", "active", "city"]


def test_strings_that_only_look_like_values_stay_strings():
    records = csv_to_records("a,b,c,d,e\n1.5e3,True,+7,007x,.5\n")
    assert records == [{"a": "1.5e3", "b": "True", "c": "+7", "d": "007x", "e": ".5"}]


def test_records_to_csv():
    records = [{"id": 1, "ok": True}, {"id": 2, "note": "a, b", "ok": None}, {"note": "x"}]
    assert records_to_csv(records) == 'id,ok,note\n1,true,\n2,,"a, b"\n,,x\n'
    assert records_to_csv([]) == ""


def test_round_trip():
    records = csv_to_records(CSV)
    assert csv_to_records(records_to_csv(records)) == records


def test_group_by():
    records = [{"k": "b", "v": 1}, {"k": "a", "v": 2}, {"v": 3}, {"k": "b", "v": 4}]
    groups = group_by(records, "k")
    assert list(groups) == ["b", "a", None]
    assert groups["b"] == [{"k": "b", "v": 1}, {"k": "b", "v": 4}]
    assert groups[None] == [{"v": 3}]


def test_cli_to_json_and_group_by():
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, "people.csv", CSV)
        plain = _run("to-json", path)
        grouped = _run("to-json", path, "--group-by", "city")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == json.dumps(csv_to_records(CSV), indent=2)
    assert grouped.returncode == 0, grouped.stderr
    groups = json.loads(grouped.stdout)
    assert list(groups) == ["Oslo", "null"]
    assert [r["name"] for r in groups["Oslo"]] == ["Ann", "Lee, Jr."]


def test_cli_to_csv():
    records = [{"a": 1, "b": "x"}, {"a": 2, "c": False}]
    with tempfile.TemporaryDirectory() as folder:
        proc = _run("to-csv", _write(folder, "data.json", json.dumps(records)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "a,b,c\n1,x,\n2,,false\n"


def test_cli_errors():
    with tempfile.TemporaryDirectory() as folder:
        missing = _run("to-json", os.path.join(folder, "nope.csv"))
        broken = _run("to-csv", _write(folder, "bad.json", "{not json"))
    for proc in (missing, broken):
        assert proc.returncode == 1
        assert proc.stderr.lstrip().startswith("error:")
