"""Issue 22: the ``runs`` commands a user of similar tools expects, and item 21's
``runs`` parts.

``runs list --kind/--status/--limit`` with enhance and iterate runs as their own kinds,
a task of several lines on one line; ``runs show`` of a matrix run readable and of an
enhance run with its branch and patch; ``runs prune`` of old runs, with an enhance run's
worktree and branch, never a running one, never following a link the model left.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from filelock import FileLock

from orchestrator.loop.runs import RunSummary, TaskRecord
from orchestrator.loop.source import Source
from tests.orchestrator.conftest import git
from tests.support import one_error_line, run

ROOT = Path(__file__).resolve().parents[3]
WORDS = "scripted:tests.fakes.policies:last_user_words"
"""A model that never calls a tool: a build of it fails at plan, quickly."""
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
DAY = 86400.0


def write(path: Path, record) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2) + "\n")


def made_run(home: Path, run_id: str, *, status="passed", kind="build", task="a tool", ago=0.0):
    """A build's records as a build leaves them: ``kind`` build, enhance (of a folder) or
    iterate (of a run), ended ``ago`` days ago."""
    folder = home / "runs" / run_id
    source = None
    if kind != "build":
        source = Source(
            kind="run" if kind == "iterate" else "folder",
            path=str(home / "elsewhere"),
            parent_run="20200101-000000-000000" if kind == "iterate" else None,
            git_dir=str(folder / "git"),
            base="0" * 40,
            branch=f"cadillac/{run_id}",
        )
    started = time.time() - ago * DAY - 60
    record = TaskRecord(
        run_id=run_id,
        task=task,
        created=started,
        cadillac_version="0",
        config={},
        kind="build" if kind == "build" else "enhance",
        source=source,
    )
    write(folder / "task.json", record)
    summary = RunSummary(
        run_id=run_id, task=task, status=status, started=started, ended=started + 60
    )
    summary.kind = record.kind
    write(folder / "summary.json", summary)
    (folder / "workspace").mkdir()
    return folder


def listed(capsys, *argv: str) -> list[str]:
    code, out, err = run(capsys, "runs", "list", *argv, "--json")
    assert code == 0, err
    return [row["run_id"] for row in json.loads(out)]


def runs_of_each_kind(home: Path) -> None:
    made_run(home, "20260101-000000-aaaaaa", status="passed", ago=5)
    made_run(home, "20260102-000000-bbbbbb", status="failed", ago=4)
    made_run(home, "20260103-000000-cccccc", status="passed", kind="enhance", ago=3)
    made_run(home, "20260104-000000-dddddd", status="failed", kind="iterate", ago=2)
    (home / "runs" / "matrix-20260105-000000-eeeeee").mkdir()  # killed before its results


def test_the_kinds_runs_takes_are_the_kinds_of_run():
    from orchestrator.cli.runs import KINDS
    from orchestrator.loop.runs import BUILD_KINDS, OTHER_KINDS

    assert (*BUILD_KINDS, *OTHER_KINDS) == KINDS


def test_runs_list_narrows_by_kind_status_and_limit(home, capsys):
    runs_of_each_kind(home)
    code, out, _ = run(capsys, "runs", "list", "--json")
    kinds = {row["run_id"]: row["kind"] for row in json.loads(out)}
    assert kinds == {
        "20260101-000000-aaaaaa": "build",
        "20260102-000000-bbbbbb": "build",
        "20260103-000000-cccccc": "enhance",
        "20260104-000000-dddddd": "iterate",
        "matrix-20260105-000000-eeeeee": "matrix",
    }
    assert listed(capsys, "--kind", "enhance") == ["20260103-000000-cccccc"]
    assert listed(capsys, "--kind", "iterate") == ["20260104-000000-dddddd"]
    assert listed(capsys, "--kind", "build") == ["20260102-000000-bbbbbb", "20260101-000000-aaaaaa"]
    assert listed(capsys, "--status", "failed") == [
        "20260104-000000-dddddd",
        "20260102-000000-bbbbbb",
    ]
    assert listed(capsys, "--limit", "2") == [  # newest first: the matrix began in January
        "20260104-000000-dddddd",
        "20260103-000000-cccccc",
    ]
    assert listed(capsys, "--status", "passed", "--limit", "1") == ["20260103-000000-cccccc"]
    assert listed(capsys, "--kind", "nightly") == []

    code, out, _ = run(capsys, "runs", "list", "--kind", "iterate")
    assert code == 0 and "iterate" in out and "20260104-000000-dddddd" in out
    assert "20260103-000000-cccccc" not in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--kind", "banana"), "--kind: invalid choice"),
        (("--status", "done"), "--status: invalid choice"),
        (("--limit", "0"), "--limit: '0' must be at least 1"),
        (("--limit", "x"), "--limit: 'x' is not a whole number"),
    ],
)
def test_runs_list_refuses_a_bad_filter_in_one_line(home, capsys, argv, says):
    code, out, err = run(capsys, "runs", "list", *argv)
    assert code == 2 and out == "" and says in one_error_line(err), err


def test_21_a_task_of_several_lines_is_listed_on_one(home, capsys):
    made_run(home, "20260101-000000-aaaaaa", task="a word counter\nthat reads stdin\n\nfast")
    code, out, _ = run(capsys, "runs", "list")
    assert code == 0 and "a word counter ↵ that reads stdin ↵ fast" in out
    (row,) = [line for line in out.splitlines() if "20260101-000000-aaaaaa" in line]
    assert "fast" in row  # the whole task on the run's own line


def test_21_runs_show_of_a_matrix_run_is_a_readable_summary(home, capsys):
    args = ["matrix", "run", "--matrix", str(SMALL), "--model", WORDS, "--no-learn", "--json"]
    code, out, _ = run(capsys, *args)
    results = json.loads(out)
    matrix_id = "matrix-" + results["id"]

    code, out, _ = run(capsys, "runs", "show", matrix_id)
    assert code == 0 and not out.lstrip().startswith("{")
    assert f"matrix {matrix_id}: finished" in out and f"model {WORDS}" in out
    for build in results["runs"]:
        assert build["task_id"] in out and build["run_id"] in out
    assert "score" in out and "results.json" in out

    code, out, _ = run(capsys, "runs", "show", matrix_id, "--json")
    assert code == 0 and json.loads(out)["id"] == results["id"]


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's repository with one commit, and an untracked file of theirs."""
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "tool.py").write_text("print('hi')\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tool")
    (repo / "notes.txt").write_text("the user's own\n")
    return repo


def enhanced(capsys, repo: Path) -> str:
    """An enhance run of ``repo`` (it fails at plan, leaving its worktree and branch)."""
    code, out, err = run(capsys, "enhance", str(repo), "add a flag", "--model", WORDS, "--json")
    assert code == 1, err
    return json.loads(out)["run_id"]


def worktrees(repo: Path) -> list[str]:
    return [
        line.removeprefix("worktree ")
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def test_21_runs_show_of_an_enhance_run_names_its_branch_and_patch(home, capsys, user_repo):
    run_id = enhanced(capsys, user_repo)
    code, out, _ = run(capsys, "runs", "show", run_id)
    assert code == 0
    assert "kind: enhance" in out and f"branch: cadillac/{run_id} in {user_repo}" in out
    assert f"patch: {home / 'runs' / run_id / 'changes.patch'}" in out


def test_runs_prune_removes_an_enhance_run_with_its_worktree_and_branch(
    home, capsys, user_repo, tmp_path
):
    run_id = enhanced(capsys, user_repo)
    workspace = home / "runs" / run_id / "workspace"
    branch = f"cadillac/{run_id}"
    assert str(workspace) in worktrees(user_repo) and git(user_repo, "branch", "--list", branch)
    outside = tmp_path / "outside"  # what links the model left in its workspace point at
    outside.mkdir()
    (outside / "precious.txt").write_text("not the run's\n")
    (workspace / "link").symlink_to(outside)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "file-link").symlink_to(outside / "precious.txt")
    (home / "runs" / "nightly-cron.log").write_text("cron's own log\n")
    before = sorted(p.name for p in user_repo.iterdir())

    code, out, _ = run(capsys, "runs", "prune", "--keep", "0", "--dry-run")
    assert code == 0 and f"would remove {run_id} (enhance, failed" in out
    assert f"worktree and branch {branch} in {user_repo}" in out
    assert "1 run(s) would be removed" in out
    assert workspace.is_dir() and git(user_repo, "branch", "--list", branch)

    code, out, _ = run(capsys, "runs", "prune", "--keep", "0")
    assert code == 0 and f"removed {run_id} (enhance, failed" in out, out
    assert "left" not in out
    assert not (home / "runs" / run_id).exists()
    assert worktrees(user_repo) == [str(user_repo)]
    assert git(user_repo, "branch", "--list", branch) == ""
    assert (outside / "precious.txt").read_text() == "not the run's\n"
    assert sorted(p.name for p in user_repo.iterdir()) == before
    assert git(user_repo, "status", "--porcelain") == "?? notes.txt"
    assert (home / "runs" / "nightly-cron.log").read_text() == "cron's own log\n"


def test_runs_prune_keeps_the_newest_and_what_is_recent(home, capsys):
    made_run(home, "20200101-000000-aaaaaa", ago=90)
    made_run(home, "20200201-000000-bbbbbb", ago=60, kind="enhance")
    made_run(home, "20200301-000000-cccccc", ago=40, status="failed")
    made_run(home, "20260101-000000-dddddd", ago=1)
    (home / "runs" / "matrix-20191201-000000-eeeeee").mkdir()

    code, out, _ = run(capsys, "runs", "prune", "--older-than", "50")
    assert code == 0 and "3 run(s) removed, 2 kept" in out, out
    left = sorted(p.name for p in (home / "runs").iterdir())
    assert left == ["20200301-000000-cccccc", "20260101-000000-dddddd"]

    code, out, _ = run(capsys, "runs", "prune", "--keep", "1", "--older-than", "400")
    assert code == 0 and "0 run(s) removed, 2 kept" in out  # both: old AND past the newest
    code, out, _ = run(capsys, "runs", "prune", "--keep", "1")
    assert code == 0 and "removed 20200301-000000-cccccc (build, failed" in out
    assert [p.name for p in (home / "runs").iterdir()] == ["20260101-000000-dddddd"]


def test_runs_prune_never_removes_a_running_run(home, capsys):
    folder = made_run(home, "20200101-000000-aaaaaa", status="failed", ago=90)
    summary = json.loads((folder / "summary.json").read_text())
    summary.update(status="running", ended=None)
    (folder / "summary.json").write_text(json.dumps(summary))
    matrix = home / "runs" / "matrix-20200101-000000-bbbbbb"
    matrix.mkdir()
    with FileLock(str(folder / "run.lock")), FileLock(str(matrix / "run.lock")):
        for extra in ([], ["--dry-run"]):
            code, out, _ = run(capsys, "runs", "prune", "--older-than", "0", *extra)
            assert code == 0 and "kept 20200101-000000-aaaaaa (build, running" in out, out
            assert "kept matrix-20200101-000000-bbbbbb (matrix, running" in out
            assert folder.is_dir() and matrix.is_dir()
    code, out, _ = run(capsys, "runs", "prune", "--older-than", "0")
    assert "2 run(s) removed" in out and not folder.exists() and not matrix.exists()


def test_runs_prune_of_a_build_that_starts_meanwhile_leaves_it(home, capsys):
    """The lock is taken before anything goes: a run that began after the list was made
    (its lock held now) is kept."""
    from orchestrator.cli.runs import _prune_one

    folder = made_run(home, "20200101-000000-aaaaaa", status="failed", ago=90)
    row = {"run_id": folder.name, "kind": "build", "status": "failed", "started": 1.0}
    row["ended"] = 2.0
    with FileLock(str(folder / "run.lock")):
        assert _prune_one(home_of(home), row, dry_run=False) is None
    assert (folder / "task.json").is_file()
    assert "kept 20200101-000000-aaaaaa (build, failed" in capsys.readouterr().out


def home_of(path: Path):
    from orchestrator.home import Home

    return Home(path)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ((), "say which runs to remove: --older-than DAYS and/or --keep N"),
        (("--keep", "-1"), "--keep: '-1' must be a whole number, 0 or more"),
        (("--older-than", "soon"), "--older-than: 'soon' is not a number"),
        (("--older-than", "inf"), "--older-than: 'inf' must be a number of days"),
        (("--keep", "1", "--kind", "x"), "--kind: invalid choice"),
    ],
)
def test_runs_prune_refuses_bad_input_in_one_line(home, capsys, argv, says):
    made_run(home, "20200101-000000-aaaaaa", ago=90)
    code, out, err = run(capsys, "runs", "prune", *argv)
    assert code == 2 and says in one_error_line(err), err
    assert (home / "runs" / "20200101-000000-aaaaaa").is_dir()


def test_pruning_nights_rebuilds_the_index_of_nightly_reports(home, capsys):
    from orchestrator.home import Home
    from orchestrator.nightly.records import NightlyRecord
    from orchestrator.nightly.report import write_index

    for n, date in enumerate(("2026-01-01", "2026-01-02")):
        night = home / "runs" / f"nightly-{date}"
        night.mkdir(parents=True)
        ended = time.time() - (40 - n) * 86400
        record = NightlyRecord(date=date, status="finished", started=ended - 60, ended=ended)
        (night / "nightly.json").write_text(record.model_dump_json())
    write_index(Home(home))
    index = home / "runs" / "index.html"
    assert "nightly-2026-01-01" in index.read_text()
    code, out, _ = run(capsys, "runs", "prune", "--keep", "1", "--kind", "nightly")
    assert code == 0 and "removed nightly-2026-01-01" in out, out
    assert "nightly-2026-01-01" not in index.read_text()  # no link to a night that is gone
    assert "nightly-2026-01-02" in index.read_text()
