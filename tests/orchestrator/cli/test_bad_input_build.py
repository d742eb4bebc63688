"""`cadillac build` and `cadillac runs` with bad input, as a new user would give it.

Each test says which item of issue 11 it covers. A bad command line is one line on
stderr and a non-zero exit, and it makes no run folder; a damaged run record is shown as
unreadable, with the reason, and never hides the other runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from orchestrator.cli import main
from tests.fakes.openai_server import FakeOpenAI
from tests.support import one_error_line

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
WORDS = "scripted:tests.fakes.policies:last_user_words"
"""A model that never calls a tool: its build fails at plan, quickly, without commands."""
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"


def failed_build(capsys, task: str = "a tiny word counter", *extra: str) -> str:
    """A real build that fails at plan; returns its run id."""
    assert main(["build", task, "--model", WORDS, "--json", *extra]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "failed"
    return summary["run_id"]


def listed(capsys) -> list[dict]:
    assert main(["runs", "list", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes (locks aside)."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


# ---------------------------------------------------------------------- item 2
@pytest.mark.parametrize(
    "argv",
    [
        ["\udcff\udcfe x", "--model", WORDS],  # what Python makes of the bytes ff fe
        ["a tool", "--model", WORDS, "--api-base", "http://local\udcff/v1"],
        ["a tool", "--model", WORDS, "--fallback-model", "openai/\udce9"],
    ],
    ids=["task", "api-base", "fallback-model"],
)
def test_2_text_that_is_not_utf8_is_refused_before_a_run_folder(home, capsys, argv):
    assert main(["build", *argv]) == 1
    err = one_error_line(capsys.readouterr().err)
    assert "UTF-8" in err
    assert not (home / "runs").exists()


def test_2_a_task_of_raw_bytes_from_a_shell_is_one_line(home):
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", b"\xff\xfe x", "--model", WORDS],
        env={**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)},
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    err = one_error_line(done.stderr)
    assert "the task is not valid UTF-8" in err and "0xff" in err
    assert not (home / "runs").exists()


# ---------------------------------------------------------------------- item 4
def damage(path: Path, how: str) -> None:
    if how == "not json":
        path.write_text("{bad")
    elif how == "not utf-8":
        path.write_bytes(b'{"task": "caf\xe9"}')
    else:  # valid JSON, a wrong value
        record = json.loads(path.read_text())
        if path.name == "summary.json":
            record["status"] = "banana"
        else:
            record["created"] = "banana"
        path.write_text(json.dumps(record))


REASONS = {"not json": "not JSON", "not utf-8": "not UTF-8", "a wrong value": "banana"}


@pytest.mark.parametrize("how", list(REASONS))
@pytest.mark.parametrize("name", ["summary.json", "task.json"])
def test_4_a_damaged_run_record_is_listed_as_unreadable_and_the_others_still_are(
    home, capsys, name, how
):
    good = failed_build(capsys)
    bad = failed_build(capsys)
    damage(home / "runs" / bad / name, how)
    before = tree(home / "runs")

    rows = {r["run_id"]: r for r in listed(capsys)}
    assert rows[good]["status"] == "failed" and rows[good]["task"] == "a tiny word counter"
    assert rows[bad]["status"] == "unreadable"
    assert name in rows[bad]["reason"] and REASONS[how] in rows[bad]["reason"]

    assert main(["runs", "list"]) == 0
    out = capsys.readouterr().out
    assert good in out and bad in out and "unreadable" in out

    for extra in ([], ["--json"]):
        assert main(["runs", "show", bad, *extra]) == 1
        err = one_error_line(capsys.readouterr().err)
        assert f"run {bad} is unreadable" in err and name in err and REASONS[how] in err
    assert main(["runs", "show", good]) == 0
    assert "plan" in capsys.readouterr().out

    assert main(["build", "--resume", bad, "--model", WORDS]) == 1
    assert "unreadable" in one_error_line(capsys.readouterr().err)
    assert tree(home / "runs") == before  # nothing stored changed


# ---------------------------------------------------------------------- item 9
@pytest.mark.parametrize(
    "model",
    [
        "replay:{tmp}/nope.jsonl",
        "replay:{tmp}",  # a folder
        "scripted:nosuch",
        "scripted:tests.fakes.policies:nosuch",
        "scripted:no.such.module:policy",
    ],
)
def test_9_a_model_that_cannot_be_used_makes_no_run_folder(home, capsys, tmp_path, model):
    model = model.format(tmp=tmp_path)
    assert main(["build", "a tool", "--model", model]) == 1
    one_error_line(capsys.readouterr().err)
    assert not (home / "runs").exists()
    assert main(["build", "a tool", "--model", WORDS, "--fallback-model", model]) == 1
    one_error_line(capsys.readouterr().err)
    assert not (home / "runs").exists()
    fresh = tmp_path / "new home"  # a build that fails makes no home either
    assert main(["build", "a tool", "--model", model, "--home", str(fresh)]) == 1
    one_error_line(capsys.readouterr().err)
    assert not fresh.exists()


def test_9_a_replay_folder_is_said_to_be_a_folder(home, capsys, tmp_path):
    assert main(["build", "a tool", "--model", f"replay:{tmp_path}"]) == 1
    err = one_error_line(capsys.readouterr().err)
    assert "is a folder" in err and "does not exist" not in err


def test_9_a_resume_with_a_bad_model_changes_nothing_and_the_run_resumes_later(home, capsys):
    run_id = failed_build(capsys)
    before = tree(home / "runs")
    assert main(["build", "--resume", run_id, "--model", "scripted:nosuch"]) == 1
    one_error_line(capsys.readouterr().err)
    assert tree(home / "runs") == before
    assert main(["build", "--resume", run_id, "--model", WORDS, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "failed"


# ---------------------------------------------------------------------- item 11
def test_11_resume_takes_the_model_and_its_server_from_the_run(home, capsys, monkeypatch):
    monkeypatch.delenv("CADILLAC_MODEL", raising=False)
    monkeypatch.delenv("CADILLAC_API_BASE", raising=False)
    with FakeOpenAI(lambda body: "no tools today") as server:
        args = ["build", "a tiny word counter", "--model", "openai/m", "--api-base"]
        assert main([*args, server.api_base, "--json"]) == 1
        run_id = json.loads(capsys.readouterr().out)["run_id"]
        first = len(server.requests)
        assert first > 0

        assert main(["build", "--resume", run_id]) == 1
        captured = capsys.readouterr()
        assert "no model given" not in captured.err
        assert f"model openai/m at {server.api_base} (as the run recorded it)" in captured.err
        assert len(server.requests) > first  # the resumed build asked the recorded server
        summary = json.loads((home / "runs" / run_id / "summary.json").read_text())
        assert summary["status"] == "failed" and summary["model"] == "openai/m"

        # a model given again wins, and the recorded server (which was the old model's)
        # is not sent to it
        asked = len(server.requests)
        assert main(["build", "--resume", run_id, "--model", WORDS, "--json"]) == 1
        capsys.readouterr()
        assert len(server.requests) == asked


def test_11_resume_keeps_the_recorded_fallbacks_unless_given_again(home, capsys, monkeypatch):
    from orchestrator.cli import build_parser
    from orchestrator.cli.config import build_config

    monkeypatch.delenv("CADILLAC_MODEL", raising=False)
    monkeypatch.delenv("CADILLAC_API_BASE", raising=False)
    fallbacks = ["--fallback-model", "openai/f", "--fallback-api-base", "http://127.0.0.1:9/v1"]
    run_id = failed_build(capsys, "a tiny word counter", "--api-base", "http://a/v1", *fallbacks)
    recorded = json.loads((home / "runs" / run_id / "task.json").read_text())["config"]

    def resumed(*argv: str):
        args = build_parser().parse_args(["build", "--resume", run_id, *argv])
        return build_config(args, recorded=recorded).llm

    llm = resumed()
    assert (llm.model, llm.api_base) == (WORDS, "http://a/v1")
    assert llm.fallback_models == ["openai/f"]
    assert llm.fallback_api_bases == ["http://127.0.0.1:9/v1"]
    llm = resumed("--api-base", "http://b/v1")
    assert (llm.model, llm.api_base, llm.fallback_models) == (WORDS, "http://b/v1", ["openai/f"])
    llm = resumed("--model", "openai/other")
    assert (llm.model, llm.api_base) == ("openai/other", None)
    llm = resumed("--model", WORDS)  # the same model again keeps its server
    assert (llm.model, llm.api_base) == (WORDS, "http://a/v1")
    llm = resumed("--fallback-model", "openai/g")
    assert (llm.fallback_models, llm.fallback_api_bases) == (["openai/g"], [])


# ---------------------------------------------------------------------- item 21
@pytest.mark.parametrize("run_id", ["", "  "])
def test_21_an_empty_resume_id_says_so(home, capsys, run_id):
    assert main(["build", "--resume", run_id, "--model", WORDS]) == 1
    err = one_error_line(capsys.readouterr().err)
    assert "--resume" in err and "empty" in err and "say what to build" not in err


def test_21_a_resume_id_cannot_reach_outside_runs(home, capsys, tmp_path):
    import shutil

    run_id = failed_build(capsys)
    outside = tmp_path / "outside"
    shutil.copytree(home / "runs" / run_id, outside)
    before = tree(outside)
    for bad in ("../../outside", str(outside), "..", "."):
        assert main(["build", "--resume", bad, "--model", WORDS]) == 1
        assert "no run" in one_error_line(capsys.readouterr().err)
        assert main(["runs", "show", bad]) == 1
        assert "no run" in one_error_line(capsys.readouterr().err)
    assert tree(outside) == before


# ---------------------------------------------------------------------- item 23
def command_runs(proc: subprocess.Popen, mark: str) -> None:
    """Wait until the sleeper's own command runs in its sandbox (not just bubblewrap starting:
    a signal then is what these tests are about, not a sandbox that is half made)."""
    from tests.orchestrator.cli.test_stopping import holding, wait_for

    def started() -> bool:
        for pid in holding(mark, proc.pid):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"python3\0"):
                    return True
            except OSError:
                continue
        return False

    assert wait_for(started), "the sleeper's command never started"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_23_an_interrupted_build_says_how_to_resume_it(home, tmp_path, sig):
    from tests.orchestrator.cli.test_stopping import SLEEPER, marker, start, stop_and_check

    mark = marker()
    proc = start(home, "build", f"({mark}) a wordfreq tool", "--model", SLEEPER)
    command_runs(proc, mark)
    err = stop_and_check(proc, mark, sig)
    assert proc.returncode == 130 and "Traceback" not in err
    (run,) = (home / "runs").iterdir()
    lines = err.strip().splitlines()
    assert lines[-1] == "cadillac: interrupted"
    assert lines[-2] == (
        f"cadillac: run {run.name} was stopped; resume with: cadillac build --resume {run.name}"
    )


def test_23_the_resume_line_names_a_home_given_by_flag(tmp_path):
    from tests.orchestrator.cli.test_stopping import SLEEPER, marker, start, stop_and_check

    other = tmp_path / "other home"
    mark = marker()
    proc = start(
        tmp_path / "unused", "build", f"({mark}) x", "--model", SLEEPER, "--home", str(other)
    )
    err = stop_and_check(proc, mark, signal.SIGINT)
    (run,) = (other / "runs").iterdir()
    home_arg = f"'{other}'"
    assert f"resume with: cadillac build --resume {run.name} --home {home_arg}" in err


# ---------------------------------------------------------------------- README: runs list
def record(path: Path, model) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model.model_dump_json(indent=2) + "\n")


def test_runs_list_shows_every_kind_of_run_with_its_status(home, capsys, tmp_path):
    from orchestrator.home import Home
    from orchestrator.improve.git import cycle_lock
    from orchestrator.improve.records import ImproveSummary
    from orchestrator.nightly.records import NightlyLock, NightlyRecord
    from tests.orchestrator.conftest import git

    args = ["matrix", "run", "--matrix", str(SMALL), "--model", WORDS, "--no-learn", "--json"]
    assert main(args) == 0
    matrix_id = "matrix-" + json.loads(capsys.readouterr().out)["id"]
    build_id = failed_build(capsys)

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    now = time.time()
    improve = ImproveSummary(
        id="20200101-000000-aaaaaa", repo=str(repo), base_commit=base, tip_commit=base, started=now
    )
    record(home / "runs" / f"improve-{improve.id}" / "summary.json", improve)
    done = improve.model_copy(
        update={"id": "20200101-000001-bbbbbb", "ended": now + 5, "stopped_because": "done"}
    )
    record(home / "runs" / f"improve-{done.id}" / "summary.json", done)
    night = NightlyRecord(date="2020-01-02", model=WORDS, improver_model="x", started=now - 9)
    record(home / "runs" / "nightly-2020-01-02" / "nightly.json", night)

    rows = {r["run_id"]: r for r in listed(capsys)}
    kinds = {r["kind"] for r in rows.values()}
    assert kinds == {"build", "matrix", "improve", "nightly"}
    assert rows[matrix_id]["status"] == "finished" and rows[matrix_id]["kind"] == "matrix"
    assert rows[build_id]["status"] == "failed" and rows[build_id]["phases_passed"] == 0
    assert set(rows[build_id]) >= {"run_id", "task", "status", "phases_passed", "cost_usd"}
    assert rows[f"improve-{improve.id}"]["status"] == "interrupted"  # nobody holds the lock
    assert rows[f"improve-{done.id}"]["status"] == "finished"
    assert rows["nightly-2020-01-02"]["status"] == "interrupted"  # nor the nightly lock
    builds = [r for r in rows.values() if r["kind"] == "build"]
    assert len(builds) == 1 + 3  # the matrix's three builds are builds too

    held = cycle_lock(repo)
    nightly = NightlyLock(Home(home))
    assert nightly.acquire(home / "runs" / "nightly-2020-01-02")
    try:
        rows = {r["run_id"]: r for r in listed(capsys)}
        assert rows[f"improve-{improve.id}"]["status"] == "running"
        assert rows["nightly-2020-01-02"]["status"] == "running"
    finally:
        held.release()
        nightly.release()

    assert main(["runs", "list"]) == 0
    out = capsys.readouterr().out
    assert "kind" in out and "nightly" in out and "improve" in out and "matrix" in out

    assert main(["runs", "show", "nightly-2020-01-02"]) == 0
    assert "interrupted" in capsys.readouterr().out
    assert main(["runs", "show", "nightly-2020-01-02", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["date"] == "2020-01-02"


def test_runs_list_tells_a_killed_matrix_run_from_a_running_one(home, capsys):
    args = ["matrix", "run", "--matrix", str(SMALL), "--model", WORDS, "--no-learn", "--json"]
    assert main(args) == 0
    matrix_id = "matrix-" + json.loads(capsys.readouterr().out)["id"]
    path = home / "runs" / matrix_id / "results.json"
    results = json.loads(path.read_text())
    results["ended"] = None
    path.write_text(json.dumps(results))
    (home / "runs" / "matrix-20200101-000000-cccccc").mkdir()  # no results yet
    (home / "runs" / "improve-20200101-000000-dddddd").mkdir()  # no summary: unreadable
    (home / "runs" / "improve-20200101-000000-eeeeee").mkdir()
    (home / "runs" / "improve-20200101-000000-eeeeee" / "summary.json").write_bytes(b"\xff")

    rows = {r["run_id"]: r for r in listed(capsys)}
    assert rows[matrix_id]["status"] == "interrupted" and "killed" in rows[matrix_id]["reason"]
    assert rows["matrix-20200101-000000-cccccc"]["status"] == "interrupted"
    held = FileLock(str(home / "runs" / matrix_id / "run.lock"))
    with held:  # a matrix run in progress holds its folder's lock
        rows = {r["run_id"]: r for r in listed(capsys)}
        assert rows[matrix_id]["status"] == "running"
    assert rows["improve-20200101-000000-dddddd"]["status"] == "unreadable"
    assert rows["improve-20200101-000000-dddddd"]["reason"] == "summary.json: missing"
    assert rows["improve-20200101-000000-eeeeee"]["status"] == "unreadable"
    for bad in ("improve-20200101-000000-eeeeee", "improve-20200101-000000-dddddd"):
        assert main(["runs", "show", bad]) == 1
        assert "unreadable" in one_error_line(capsys.readouterr().err)
