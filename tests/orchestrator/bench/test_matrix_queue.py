"""A matrix run's size is bounded, its builds are queued lazily, and it can go on later.

``--repeats`` and ``--jobs`` have bounds the error and ``--help`` name; at most ``jobs``
builds are under way at once, the next one starting as one ends; builds that never ran
(a cap, a stop) are one line and a count in the results, never rows scoring 0; while no
build has ended the run says which run and for how long; ``--resume ID`` keeps a stopped
run's finished builds and runs the rest in its folder.
"""

from __future__ import annotations

import json
import re
import signal
import tracemalloc
from pathlib import Path

import pytest
from filelock import FileLock

from orchestrator.bench import MAX_JOBS, MAX_REPEATS
from orchestrator.bench import matrix as bench_matrix
from orchestrator.bench.matrix import run_matrix
from orchestrator.bench.results import MatrixResults
from orchestrator.cli import main
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from tests.orchestrator.cli.test_stopping import (
    SLEEPER,
    marked_matrix,
    marker,
    start,
    stop_and_check,
)
from tests.support import build_config

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
RUN = ["matrix", "run", "--matrix", str(SMALL), "--model", BUILDER, "--no-learn"]


@pytest.mark.parametrize(
    ("option", "value", "bound"),
    [
        ("--repeats", "999999999999", f"between 1 and {MAX_REPEATS}"),
        ("--repeats", "0", f"between 1 and {MAX_REPEATS}"),
        ("--jobs", "100000", f"between 1 and {MAX_JOBS}"),
    ],
)
def test_repeats_and_jobs_out_of_bounds_are_one_line_naming_the_bound(
    home, capsys, option, value, bound
):
    assert main([*RUN, option, value]) == 2
    err = capsys.readouterr().err
    assert bound in err and option in err and len(err.strip().splitlines()) == 1, err
    assert not (Path(home) / "runs").exists()
    with pytest.raises(CadillacError, match=bound):
        run_matrix(Home(home), build_config(BUILDER), SMALL, **{option[2:]: int(value)})


def test_help_names_the_bounds(capsys):
    with pytest.raises(SystemExit):
        main(["matrix", "run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"1 to {MAX_REPEATS}" in out and f"1 to {MAX_JOBS}" in out


def test_builds_that_never_ran_are_one_line_and_a_count_not_scores(home, capsys):
    """A cap reached by the first build of 300: the 299 others are never queued, heard of
    as results nor printed as scores of 0."""
    heard = []
    results = run_matrix(
        Home(home),
        build_config(BUILDER),
        SMALL,
        repeats=MAX_REPEATS,
        jobs=1,
        learn=False,
        max_tokens=1,
        on_result=heard.append,
    )
    assert len(heard) == len(results.runs) == 1
    assert results.not_started == 3 * MAX_REPEATS - 1
    assert "token cap" in results.stopped_because
    assert main([*RUN, "--repeats", str(MAX_REPEATS), "--max-tokens", "1"]) == 0
    out, err = capsys.readouterr()
    assert "score 0.00" not in err and "skipped" not in err + out
    assert len((err + out).splitlines()) < 20
    (line,) = [x for x in out.splitlines() if "not started" in x]
    assert line.startswith(f"{3 * MAX_REPEATS - 1} build(s) not started: the token cap"), line
    assert "--resume" in line


def test_builds_to_come_take_no_memory(home, monkeypatch):
    """Nothing is held for a build until it starts: with the bound lifted, 60,000 builds
    to come cost no more memory than none (the cap stops all but the first); a run that
    submitted them all up front took 10 GB for --repeats 999999999999."""
    monkeypatch.setattr(bench_matrix, "MAX_REPEATS", 10**12, raising=False)

    def peak(repeats: int) -> tuple[int, MatrixResults]:
        heard: list = []

        def one_result(run):
            heard.append(run)
            assert len(heard) == 1, f"a build that never ran was reported: {run}"

        tracemalloc.start()
        try:
            results = run_matrix(
                Home(home),
                build_config(BUILDER),
                SMALL,
                repeats=repeats,
                learn=False,
                max_tokens=1,
                on_result=one_result,
            )
            return tracemalloc.get_traced_memory()[1], results
        finally:
            tracemalloc.stop()

    peak(1)  # what is made once a process (imports, caches) is not the queue's
    few, _ = peak(1)
    many, results = peak(20_000)
    assert results.not_started == 3 * 20_000 - 1 and len(results.runs) == 1
    assert many < few + 2 * 2**20, (few, many)


def test_the_run_says_which_builds_run_before_the_first_one_ends(home):
    heard: list = []
    run_matrix(
        Home(home),
        build_config(BUILDER),
        SMALL,
        repeats=2,
        jobs=2,
        learn=False,
        on_result=heard.append,
        on_progress=heard.append,
        progress_every_s=1.0,
    )
    first, later = heard[0], heard[1]
    assert hasattr(first, "running") and hasattr(later, "running"), heard[:2]  # before a result
    assert len(first.running) == 2 and first.done == 0 and first.total == 6
    assert sorted((t, r) for t, r, _ in first.running) == [("wf-a", 0), ("wf-b", 0)]
    assert all(0 <= s < 1 for _, _, s in first.running), first
    assert later.running[0][:2] == first.running[0][:2] and later.running[0][2] >= 1, later


def test_the_cli_says_which_builds_run_and_for_how_long_before_the_first_ends(home, capsys):
    assert main([*RUN, "--jobs", "2"]) == 0
    lines = capsys.readouterr().err.splitlines()
    first = next(i for i, x in enumerate(lines) if ": score " in x)
    said = next(x for x in lines[:first] if "running" in x)  # at once, then every 30 s
    assert re.fullmatch(
        r"matrix \S+: running wf-a #1 \(\d+ s\), wf-b #1 \(\d+ s\); 0 of 3 builds done", said
    ), said


def test_resume_keeps_finished_builds_and_runs_the_rest(home, capsys):
    h = Home(home)
    first = run_matrix(h, build_config(BUILDER), SMALL, repeats=2, learn=False, max_tokens=1)
    (kept,) = first.runs
    assert first.not_started == 5
    assert main([*RUN[:2], "--model", BUILDER, "--resume", first.id, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["id"] == first.id and again["not_started"] == 0 and again["repeats"] == 2
    assert len(again["runs"]) == 6 and not again["stopped_because"]
    assert kept.model_dump(mode="json") in again["runs"]  # the finished build, as it was
    assert list(h.runs_dir.glob("matrix-*")) == [h.runs_dir / f"matrix-{first.id}"]
    saved = json.loads((h.runs_dir / f"matrix-{first.id}" / "results.json").read_text())
    assert saved["learn"] is False and saved["not_started"] == 0


def test_an_interrupted_run_goes_on_where_it_stopped(home, capsys):
    """Ctrl-C after the first build: the run says how to go on, and going on keeps that
    build (by the id runs list shows, ``matrix-<id>``)."""
    h = Home(home)

    def interrupt(run):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_matrix(h, build_config(BUILDER), SMALL, learn=False, on_result=interrupt)
    (folder,) = h.runs_dir.glob("matrix-*")
    stopped = json.loads((folder / "results.json").read_text())
    assert stopped["stopped_because"] == "interrupted" and len(stopped["runs"]) == 1
    assert stopped["not_started"] == 2
    assert main([*RUN[:2], "--model", BUILDER, "--resume", folder.name]) == 0
    out, err = capsys.readouterr()
    assert "not started" not in out and "score " in out
    done = json.loads((folder / "results.json").read_text())
    assert done["runs"][0] == stopped["runs"][0] and len(done["runs"]) == 3
    assert not done["stopped_because"] and done["ended"]
    assert sorted(r["task_id"] for r in done["runs"]) == ["wf-a", "wf-b", "wf-h"]


def test_resume_refuses_what_it_cannot_go_on_with_in_one_line(home, capsys):
    h = Home(home)
    first = run_matrix(h, build_config(BUILDER), SMALL, learn=False, max_tokens=1)
    resume = [*RUN[:2], "--model", BUILDER, "--resume"]

    def refused(argv, status, words):
        assert main(argv) == status
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err

    with FileLock(str(h.runs_dir / f"matrix-{first.id}" / "run.lock"), timeout=0):
        refused([*resume, first.id], 1, "is still running")
    refused([*RUN[:2], "--model", SLEEPER, "--resume", first.id], 1, f"--model {BUILDER}")
    refused([*resume, first.id, "--repeats", "3"], 2, "leave out --repeats")
    refused([*resume, first.runs[0].run_id], 1, "is a build run, not a matrix run")
    (h.runs_dir / "improve-20260101-000000-aaaaaa").mkdir()
    refused([*resume, "improve-20260101-000000-aaaaaa"], 1, "is an improve run, not a matrix")
    refused([*resume, "nope"], 1, "no matrix run nope")
    refused([*resume, "../x"], 1, "no run '../x'")
    assert main([*resume, first.id, "--json"]) == 0
    capsys.readouterr()
    refused([*resume, first.id], 1, "has finished: all its 3 build(s) ran")


def test_sigterm_stops_a_run_of_the_most_repeats_within_seconds(home, tmp_path):
    mark = marker()
    matrix = marked_matrix(tmp_path, mark)
    args = ["matrix", "run", "--matrix", str(matrix), "--model", SLEEPER, "--no-learn"]
    proc = start(home, *args, "--jobs", "2", "--repeats", str(MAX_REPEATS))
    err = stop_and_check(proc, mark, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err
    (path,) = (Path(home) / "runs").glob("matrix-*/results.json")
    record = json.loads(path.read_text())
    assert record["stopped_because"] == "interrupted"
    assert len(record["runs"]) <= 2 and record["not_started"] >= 3 * MAX_REPEATS - 2
