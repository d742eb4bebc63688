"""Stopping a night: Ctrl-C and SIGTERM of ``cadillac nightly`` mid-build, and its token cap.

The night runs as a real process with the ``sleeper`` builder, which starts a marked command
and waits on it, so the signal lands while the survey's trial is building. The night must
end within seconds, its record, report and improve summary must say ``interrupted``, each
build the trial began must say so too, and no process, worktree or branch may be left.
"""

from __future__ import annotations

import json
import signal

import pytest

from orchestrator.cli import main
from tests.orchestrator.bench.test_matrix_signals import (
    STOP_WITHIN_S,
    nothing_left,
    signal_once_building,
    start_group,
)
from tests.orchestrator.cli.test_stopping import IMPROVER, LIFT, SLEEPER, marked_matrix, marker
from tests.orchestrator.conftest import git
from tests.orchestrator.nightly.test_nightly import nightly_args

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

TALKER = "scripted:tests.fakes.policies:last_user_words"


@pytest.mark.parametrize(
    "sig, group",
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c-to-the-group", "sigterm-to-the-process"],
)
def test_a_stopped_nightly_ends_in_seconds_says_interrupted_and_leaves_nothing(
    home, repo, tmp_path, sig, group
):
    mark = marker()
    matrix = marked_matrix(tmp_path, mark, LIFT)
    args = ["nightly", "--repo", str(repo), "--matrix", str(matrix), "--model", SLEEPER]
    proc = start_group(home, *args, "--improver-model", IMPROVER, "--iterations", "1")

    def trial_building():  # a build of the survey's trial has begun and has a record
        return list((home / "runs").glob("nightly-*/improve/*-trial/home/runs/*/task.json"))

    took, err, below = signal_once_building(proc, mark, sig, group=group, ready=trial_building)
    assert took <= STOP_WITHIN_S
    assert proc.returncode == 130 and "Traceback" not in err
    nothing_left(proc, mark, below)
    assert git(repo, "worktree", "list").count("\n") == 0  # only the main worktree
    assert git(repo, "branch", "--list", "cadillac/*") == ""
    assert not (home / "nightly.lock.json").exists()

    (night,) = (home / "runs").glob("nightly-*")
    record = json.loads((night / "nightly.json").read_text())
    assert record["status"] == "interrupted" and record["ended"], record
    for report in ("report.html", "report.md"):
        assert "interrupted" in (night / report).read_text(), report
    cycle = json.loads((night / "improve" / "summary.json").read_text())
    assert cycle["stopped_because"] == "interrupted" and cycle["ended"]
    builds = sorted((night / "improve").glob("*-trial/home/runs/*/task.json"))
    assert builds, "the trial's builds left no records"
    for task in builds:
        summary = task.parent / "summary.json"
        status = json.loads(summary.read_text())["status"] if summary.is_file() else "running"
        assert status == "interrupted", (task.parent.name, status)


def test_a_night_stopped_by_its_token_cap_says_why(home, repo, capsys):
    # one build at a time, each ending quickly in the plan phase (the last flag wins)
    args = nightly_args(repo, "--max-tokens", "1", "--jobs", "1", "--model", TALKER)
    assert main(args) == 0  # a cap is a clean stop
    (night,) = (home / "runs").glob("nightly-*")
    record = json.loads((night / "nightly.json").read_text())
    assert record["status"] == "finished" and record["ended"]
    assert "token cap of 1 was reached" in record["reason"], record["reason"]
    cycle = json.loads((night / "improve" / "summary.json").read_text())
    assert "token cap of 1 was reached" in cycle["stopped_because"]
    assert cycle["iterations"] == [] and cycle["tokens"] > 1
    assert cycle["builds"] == 1  # the survey's first build spent it; no other build began
    built = list((night / "improve").glob("*-trial/home/runs/*/task.json"))
    assert len(built) == 1
    for report in ("report.html", "report.md"):
        assert "token cap of 1 was reached" in (night / report).read_text(), report
    assert "token cap of 1 was reached" in (night / "nightly.log").read_text()
