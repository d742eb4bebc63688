"""Hidden checks for numpy-sensor-stats: loading, statistics and the command line."""

import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import sensorstats

ROOT = os.getcwd()
CSV = """timestamp,sensor,value
2024-01-01T00:00,temp,20.5
2024-01-01T00:00,humidity,40
2024-01-01T00:01,temp,21.5
2024-01-01T00:01,humidity,
2024-01-01T00:02,temp,23.0
2024-01-01T00:02,humidity,n/a
2024-01-01T00:03,temp,19.0
2024-01-01T00:03,humidity,44
"""


def _csv_file(folder):
    path = os.path.join(folder, "readings.csv")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(CSV)
    return path


def test_load_readings_groups_and_skips_bad_values():
    with tempfile.TemporaryDirectory() as folder:
        readings = sensorstats.load_readings(_csv_file(folder))
    assert sorted(readings) == ["humidity", "temp"]
    assert isinstance(readings["temp"], np.ndarray)
    assert readings["temp"].dtype == np.float64
    assert readings["temp"].tolist() == [20.5, 21.5, 23.0, 19.0]
    assert readings["humidity"].tolist() == [40.0, 44.0]


def test_summarize_returns_plain_floats():
    summary = sensorstats.summarize(np.array([1.0, 2.0, 3.0, 4.0]))
    assert summary["count"] == 4 and type(summary["count"]) is int
    for key in ("mean", "std", "min", "max", "median"):
        assert type(summary[key]) is float, key
    assert summary["mean"] == 2.5 and summary["median"] == 2.5
    assert math.isclose(summary["std"], math.sqrt(1.25))
    assert (summary["min"], summary["max"]) == (1.0, 4.0)
    try:
        sensorstats.summarize(np.array([]))
    except ValueError:
        pass
    else:
        raise AssertionError("an empty array must raise ValueError")


def test_moving_average():
    result = sensorstats.moving_average(np.array([1.0, 2.0, 3.0, 4.0, 10.0]), 2)
    assert np.allclose(result, [1.5, 2.5, 3.5, 7.0])
    assert len(sensorstats.moving_average(np.arange(5.0), 5)) == 1
    for window in (0, 6):
        try:
            sensorstats.moving_average(np.arange(5.0), window)
        except ValueError:
            continue
        raise AssertionError(f"window {window} must raise ValueError")


def test_zscore_outliers():
    values = np.array([10.0] * 20 + [100.0] + [10.0] * 5 + [-80.0])
    assert sensorstats.zscore_outliers(values, threshold=3.0) == [20, 26]
    assert sensorstats.zscore_outliers(np.array([5.0, 5.0, 5.0])) == []
    small = np.array([1.0, 2.0, 3.0])
    assert sensorstats.zscore_outliers(small, threshold=1.0) == [0, 2]


def test_normalize():
    assert np.allclose(sensorstats.normalize(np.array([2.0, 4.0, 6.0])), [0.0, 0.5, 1.0])
    assert np.allclose(sensorstats.normalize(np.array([3.0, 3.0])), [0.0, 0.0])


def test_cli_prints_rounded_json():
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "sensorstats.py"), _csv_file(folder)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
        )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report) == ["humidity", "temp"]
    temp = report["temp"]
    assert temp["count"] == 4 and temp["mean"] == 21.0 and temp["median"] == 21.0
    assert temp["std"] == round(float(np.std([20.5, 21.5, 23.0, 19.0])), 4)
    assert report["humidity"] == {
        "count": 2,
        "mean": 42.0,
        "std": 2.0,
        "min": 40.0,
        "max": 44.0,
        "median": 42.0,
    }


def test_cli_window_adds_moving_average():
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "sensorstats.py"), _csv_file(folder)]
            + ["--window", "3"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
        )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["temp"]["moving_average"] == [round(65 / 3, 4), round(63.5 / 3, 4)]
    assert report["humidity"]["moving_average"] == []
