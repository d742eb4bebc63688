"""cadillac enhance and iterate end to end, with scripted models, honest and hostile.

A fixture git repository holds the demo's wordfreq project; the scripted model makes the
demo's --min-length change. The user's tree and checked-out branch must come out
byte-for-byte as they went in; the change must be on the new branch and in the patch,
exactly; a deleted or skipped test must fail the build; ``--apply`` must refuse a dirty
tree; a ``.git`` the model plants must not make the host run anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.fakes import enhance_policies as policies
from tests.fakes.improve_policies import wordfreq
from tests.orchestrator.conftest import git

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

MODEL = "scripted:tests.fakes.enhance_policies:{}"


def project(path: Path) -> Path:
    """The wordfreq project, as the demo builds it."""
    (path / "tests").mkdir(parents=True)
    files = {
        "wordfreq.py": wordfreq.PROGRAM,
        "tests/__init__.py": "",
        "tests/test_wordfreq.py": wordfreq.TESTS,
        "sample.txt": wordfreq.SAMPLE,
        "README.md": wordfreq.README,
        "requirements.txt": "# standard library only\n",
    }
    for name, text in files.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def user_repo(tmp_path) -> Path:
    repo = project(tmp_path / "wordfreq")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wordfreq")
    (repo / "notes.txt").write_text("an untracked file of the user's\n")
    return repo


def snapshot(tree: Path) -> dict[str, str]:
    """Every file under ``tree`` but .git's internals -> its hash (links by their target)."""
    out = {}
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if rel.startswith(".git/") or path.is_dir():
            continue
        data = str(path.readlink()).encode() if path.is_symlink() else path.read_bytes()
        out[rel] = hashlib.sha256(data).hexdigest()
    return out


def enhance(home: Path, repo: Path, policy: str, *extra: str) -> tuple[int, dict]:
    argv = ["enhance", str(repo), policies.TASK, "--model", MODEL.format(policy), "--json"]
    code = main([*argv, "--home", str(home), *extra])
    runs = sorted((home / "runs").glob("*/summary.json"))
    return code, json.loads(runs[-1].read_text())


def test_an_enhanced_repository_gets_a_branch_and_a_patch_and_is_itself_unchanged(
    home, user_repo, capsys
):
    before, head = snapshot(user_repo), git(user_repo, "rev-parse", "HEAD")
    code, summary = enhance(home, user_repo, "honest")
    assert code == 0 and summary["status"] == "passed", summary["reason"]
    assert summary["kind"] == "enhance" and summary["branch"] == f"cadillac/{summary['run_id']}"
    assert summary["changed"] == ["README.md", "tests/test_wordfreq.py", "wordfreq.py"]
    phases = {p["phase"]: p for p in summary["phases"]}
    assert phases["deps"]["rounds"] == 0 and "without the model" in phases["deps"]["check"]

    # the user's tree, its branch and its HEAD are as they were
    assert snapshot(user_repo) == before
    assert git(user_repo, "rev-parse", "HEAD") == head
    assert git(user_repo, "symbolic-ref", "--short", "HEAD") == "main"

    # the branch holds exactly the change, and so does the patch
    branch = summary["branch"]
    assert git(user_repo, "diff", "--name-only", f"{head}..{branch}").splitlines() == [
        "README.md",
        "tests/test_wordfreq.py",
        "wordfreq.py",
    ]
    log = git(user_repo, "log", "--format=%an %s", f"{head}..{branch}")
    assert log.startswith("cadillac cadillac ") and "build:" in log
    patch = (home / "runs" / summary["run_id"] / "changes.patch").read_text()
    assert patch.strip() == git(user_repo, "diff", "--binary", f"{head}..{branch}")
    assert "plan.json" not in patch and ".venv" not in patch and "--min-length" in patch
    task = json.loads((home / "runs" / summary["run_id"] / "task.json").read_text())
    assert task["baseline"]["test_command"] == "python -m unittest discover -s tests"
    assert len(task["baseline"]["suite"]["tests"]["tests/test_wordfreq.py"]) == 5
    # what the change taught is tagged with the project's stack, as a build's is
    rows = [json.loads(x) for x in (home / "phase_budgets.jsonl").read_text().splitlines()]
    assert rows and all({"python", "unittest"} <= set(r["tags"]) for r in rows)


def test_apply_refuses_a_dirty_tree_and_fast_forwards_a_clean_one(home, user_repo, capsys):
    (user_repo / "README.md").write_text("edited by the user, not committed\n")
    dirty = snapshot(user_repo)
    argv = ["enhance", str(user_repo), policies.TASK, "--model", MODEL.format("honest")]
    code = main([*argv, "--apply", "--home", str(home)])
    err = capsys.readouterr().err
    assert code == 1 and not (home / "runs").exists()  # refused before the build was paid for
    assert "uncommitted changes (README.md)" in err and snapshot(user_repo) == dirty

    git(user_repo, "checkout", "-q", "--", "README.md")
    code, summary = enhance(home, user_repo, "honest", "--apply")
    assert code == 0 and summary["applied"].startswith("fast-forwarded")
    assert "--min-length" in (user_repo / "wordfreq.py").read_text()
    assert git(user_repo, "rev-parse", "HEAD") == git(user_repo, "rev-parse", summary["branch"])
    assert (user_repo / "notes.txt").read_text() == "an untracked file of the user's\n"


@pytest.mark.parametrize(
    ("policy", "says"),
    [
        ("test_deleter", "test(s) removed or renamed: MainTest.test_missing_file_is_an_error"),
        ("test_skipper", "tests/test_wordfreq.py: 1 skip marker(s) added"),
    ],
)
def test_a_weakened_test_suite_fails_the_build(home, user_repo, policy, says):
    code, summary = enhance(home, user_repo, policy)
    assert code == 1 and summary["status"] == "failed"
    build = next(p for p in summary["phases"] if p["phase"] == "build")
    assert build["outcome"] == "budget_exhausted" and says in build["check"], build["check"]
    assert "tests/test_wordfreq.py" not in summary["changed"]  # nothing was committed


def test_a_planted_git_folder_runs_nothing_on_the_host(home, user_repo, tmp_path, monkeypatch):
    marker = tmp_path / "the-host-ran-it"
    monkeypatch.setenv("CADILLAC_TEST_MARKER", str(marker))
    code, summary = enhance(home, user_repo, "git_planter")
    assert code == 0 and summary["status"] == "passed", summary["reason"]
    assert not marker.exists()
    branch = summary["branch"]
    changed = git(user_repo, "diff", "--name-only", f"main..{branch}").splitlines()
    assert "hostname-link" in changed and not any(c.startswith(".git") for c in changed)
    mode = git(user_repo, "ls-tree", branch, "hostname-link").split()[0]
    assert mode == "120000"  # committed as a link, never followed


def test_a_nested_repository_with_a_filter_runs_nothing_on_the_host(
    home, user_repo, tmp_path, monkeypatch
):
    """The model's command makes a repository inside the workspace whose own config names a
    clean filter; the commits after the next phases never enter it: its ``.git`` is removed
    before git runs (said in the events) and its files are committed as files."""
    marker = tmp_path / "the-host-ran-it"
    monkeypatch.setenv("CADILLAC_TEST_MARKER", str(marker))
    code, summary = enhance(home, user_repo, "nested_repo_planter")
    assert code == 0 and summary["status"] == "passed", summary["reason"]
    assert not marker.exists()
    branch = summary["branch"]
    listed = git(user_repo, "ls-tree", "-r", branch, "vendor/lib").splitlines()
    assert listed and all(line.startswith("100644 blob") for line in listed), listed
    run = home / "runs" / summary["run_id"]
    said = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "git_guard" and "vendor/lib/.git" in e["data"]["text"] for e in said)


def test_a_plain_folder_is_copied_and_its_change_applied_only_onto_what_was_copied(
    home, tmp_path, capsys
):
    folder = project(tmp_path / "plain")
    before = snapshot(folder)
    code, summary = enhance(home, folder, "honest")
    assert code == 0 and snapshot(folder) == before
    run = home / "runs" / summary["run_id"]
    assert (run / "workspace" / "wordfreq.py").read_text() != wordfreq.PROGRAM
    assert "--min-length" in (run / "changes.patch").read_text()

    # an edit of the user's since the copy: the change is not applied over it
    from orchestrator.errors import CadillacError
    from orchestrator.loop import source as sources
    from orchestrator.loop.runs import Run

    record = Run.open(home / "runs", summary["run_id"]).task()
    (folder / "wordfreq.py").write_text("# the user's own edit\n")
    with pytest.raises(CadillacError, match="changed since cadillac copied"):
        sources.apply(record.source, run / "workspace", run / "changes.patch")
    assert (folder / "wordfreq.py").read_text() == "# the user's own edit\n"
    (folder / "wordfreq.py").write_text(wordfreq.PROGRAM)
    code, summary = enhance(home, folder, "honest", "--apply")
    assert code == 0 and summary["applied"].startswith("applied")
    assert "min_length" in (folder / "wordfreq.py").read_text()
    assert "--min-length" in (folder / "README.md").read_text()


def test_iterate_continues_a_passed_run_in_a_new_run_that_names_it(home, capsys):
    from orchestrator.llm.backends import register_script

    register_script("wordfreq-iterate-parent", wordfreq.policy)
    argv = ["build", wordfreq.TASK, "--model", "scripted:wordfreq-iterate-parent", "--json"]
    assert main(argv) == 0
    parent = json.loads(capsys.readouterr().out)["run_id"]
    original = snapshot(home / "runs" / parent / "workspace")
    code = main(["iterate", parent, wordfreq.ITERATE, "--model", MODEL.format("honest"), "--json"])
    child = json.loads(capsys.readouterr().out)
    assert code == 0 and child["status"] == "passed" and child["run_id"] != parent
    task = json.loads((home / "runs" / child["run_id"] / "task.json").read_text())
    assert task["source"]["parent_run"] == parent and task["source"]["kind"] == "run"
    assert snapshot(home / "runs" / parent / "workspace") == original
    workspace = home / "runs" / child["run_id"] / "workspace"
    assert "min_length" in (workspace / "wordfreq.py").read_text()
    assert "--min-length" in (home / "runs" / child["run_id"] / "changes.patch").read_text()


@pytest.mark.parametrize(
    ("argv", "says", "status"),
    [
        (["enhance", "/nonexistent", "x"], "is not a folder", 1),
        (["enhance", ".", "  "], "say what to change", 2),  # a usage mistake
        (["enhance", ".", "x", "--test-cmd", ""], "--test-cmd is empty", 1),
        (["iterate", "20200101-000000-aaaaaa", "x"], "no run '20200101-000000-aaaaaa'", 1),
    ],
)
def test_bad_input_is_one_line_and_makes_nothing(home, capsys, argv, says, status):
    code = main([*argv, "--model", MODEL.format("honest")])
    err = capsys.readouterr().err
    assert code == status and err.count("\n") == 1 and says in err, err
    assert not (home / "runs").exists()


def test_a_home_inside_the_project_is_refused(tmp_path, capsys):
    folder = project(tmp_path / "proj")
    code = main(
        ["enhance", str(folder), "x", "--model", MODEL.format("honest"), "--home", str(folder)]
    )
    assert code == 1 and "is inside" in capsys.readouterr().err
    assert not (folder / "runs").exists()


def test_iterate_refuses_a_run_that_did_not_pass(home, capsys):
    from orchestrator.llm.backends import register_script

    register_script("never-plans-enhance", lambda messages, tools: "NONE" if not tools else {
        "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]})  # fmt: skip
    assert main(["build", "a thing", "--model", "scripted:never-plans-enhance", "--json"]) == 1
    failed = json.loads(capsys.readouterr().out)["run_id"]
    code = main(["iterate", failed, "more", "--model", MODEL.format("honest")])
    assert code == 1 and "did not pass (failed)" in capsys.readouterr().err


def test_an_enhance_task_of_a_matrix_is_built_from_its_repo_and_scored(home):
    from orchestrator.bench.matrix import run_matrix
    from orchestrator.bench.tasks import load_matrix
    from orchestrator.home import Home
    from orchestrator.llm.client import LLMConfig
    from orchestrator.loop.agent import BuildConfig

    matrix = Path(__file__).resolve().parents[3] / "matrices" / "enhance"
    one = home / "one-task"
    task = next(t for t in load_matrix(matrix) if t.id == "colsum-errors")
    import shutil

    shutil.copytree(task.dir, one / task.id)
    config = BuildConfig(llm=LLMConfig(model=MODEL.format("reference_applier")))
    results = run_matrix(Home(home), config, one, learn=False)
    (run,) = results.runs
    assert run.status == "passed" and run.verdict == "scored", run.failure
    assert run.score == 1.0
    summary = json.loads((home / "runs" / run.run_id / "summary.json").read_text())
    assert summary["kind"] == "enhance" and "colsum.py" in summary["changed"]
    assert (task.dir / "repo" / "colsum.py").read_text() != (
        home / "runs" / run.run_id / "workspace" / "colsum.py"
    ).read_text()


def test_a_stopped_enhance_build_resumes_from_its_last_phase_commit(home, user_repo, capsys):
    """Stopped by its token cap halfway through the build phase, an enhance run resumes
    with `build --resume`: the workspace goes back to the scaffold's commit (the half-done
    edits are discarded and listed, not applied twice), and the branch ends with exactly
    the change a run that was never stopped makes."""
    before = snapshot(user_repo)
    code, stopped = enhance(home, user_repo, "honest", "--max-tokens", "16000")
    assert code == 1 and stopped["status"] == "stopped", stopped["reason"]
    assert [p["phase"] for p in stopped["phases"]] == ["plan", "deps", "scaffold"]
    run = home / "runs" / stopped["run_id"]
    assert "--min-length" in (run / "workspace" / "wordfreq.py").read_text()  # half done
    capsys.readouterr()

    argv = ["build", "--resume", stopped["run_id"], "--home", str(home)]
    assert main([*argv, "--model", MODEL.format("honest")]) == 0
    err = capsys.readouterr().err
    assert "the stopped phase's changes to 3 file(s) were discarded" in err
    resumed = json.loads((run / "summary.json").read_text())
    assert resumed["status"] == "passed" and resumed["kind"] == "enhance"
    assert resumed["changed"] == ["README.md", "tests/test_wordfreq.py", "wordfreq.py"]
    starts = [
        json.loads(x)["data"]
        for x in (run / "events.jsonl").read_text().splitlines()
        if '"build_start"' in x
    ]
    assert starts[-1]["resumed"] and starts[-1]["discarded"] == [
        "README.md",
        "tests/test_wordfreq.py",
        "wordfreq.py",
    ]
    program = git(user_repo, "show", f"{resumed['branch']}:wordfreq.py")
    assert program.count('"--min-length"') == 1  # applied once, not on top of itself
    assert (run / "workspace" / "plan.json").exists() and snapshot(user_repo) == before
    patch = (run / "changes.patch").read_text()
    assert patch.strip() == git(user_repo, "diff", "--binary", f"main..{resumed['branch']}")


def test_going_back_to_the_checkpoint_follows_no_link_the_model_left(
    home, user_repo, tmp_path, monkeypatch
):
    """A model turns the tracked tests folder into a link to a host folder, adds another,
    and burns its tokens; the resume that takes the workspace back to its last commit
    removes the links and writes the tests back into the workspace, never into the host
    folder the links name."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "precious.txt").write_text("the user's\n")
    monkeypatch.setenv("CADILLAC_TEST_HOST", str(host))
    code, stopped = enhance(home, user_repo, "link_planter", "--max-tokens", "16000")
    assert stopped["status"] == "stopped", stopped["reason"]
    workspace = home / "runs" / stopped["run_id"] / "workspace"
    assert (workspace / "tests").is_symlink() and (workspace / "escape").is_symlink()

    argv = ["build", "--resume", stopped["run_id"], "--home", str(home), "--json"]
    assert main([*argv, "--model", MODEL.format("honest")]) == 0
    assert sorted(p.name for p in host.iterdir()) == ["precious.txt"]
    assert (host / "precious.txt").read_text() == "the user's\n"
    assert not (workspace / "escape").exists() and not (workspace / "escape").is_symlink()
    assert (workspace / "tests").is_dir() and not (workspace / "tests").is_symlink()
    resumed = json.loads((workspace.parent / "summary.json").read_text())
    assert resumed["status"] == "passed"
    assert resumed["changed"] == ["README.md", "tests/test_wordfreq.py", "wordfreq.py"]


def test_the_index_is_refreshed_once_at_each_phase_boundary(home, user_repo):
    """After each phase (so the next one's search sees what it wrote) and before each
    knowledge answer; a phase's opening digest reads what the last phase's refresh left."""
    from orchestrator.home import Home
    from orchestrator.llm.client import LLMConfig
    from orchestrator.loop.agent import BuildConfig, Builder

    config = BuildConfig(llm=LLMConfig(model=MODEL.format("honest")))
    builder = Builder.enhance(Home(home), config, policies.TASK, user_repo)
    summary = builder.build()
    assert summary.status == "passed", summary.reason
    events = [json.loads(x) for x in builder.run.events_path.read_text().splitlines()]
    answers = sum(1 for e in events if e["kind"] == "tool" and e["data"]["tool"] == "knowledge")
    assert builder.knowledge.refreshes == 1 + len(summary.phases) + answers


def test_restore_lists_what_it_discards_and_keeps_cadillacs_files(tmp_path):
    """Back to the last commit: edits, deletions, renames and new files go, and are listed
    (names with spaces too); plan.json, environments and caches stay."""
    from orchestrator.loop import source as sources

    folder = project(tmp_path / "plain")
    (folder / "notes two.txt").write_text("tracked, with a space\n")
    run = tmp_path / "run"
    workspace = run / "workspace"
    workspace.mkdir(parents=True)
    source = sources.prepare(folder, workspace, run, "20260101-000000-abcdef")
    (workspace / "plan.json").write_text("{}")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "kept").write_text("env\n")
    (workspace / "wordfreq.py").write_text("# half done\n")
    (workspace / "notes two.txt").unlink()
    (workspace / "README.md").rename(workspace / "README moved.md")
    (workspace / "new dir").mkdir()
    (workspace / "new dir" / "made.py").write_text("x = 1\n")
    lost = sources.restore(source, workspace)
    assert lost == ["README moved.md", "README.md", "new dir/", "notes two.txt", "wordfreq.py"]
    assert (workspace / "wordfreq.py").read_text() == wordfreq.PROGRAM
    assert (workspace / "notes two.txt").exists() and (workspace / "README.md").exists()
    assert not (workspace / "README moved.md").exists() and not (workspace / "new dir").exists()
    assert (workspace / "plan.json").read_text() == "{}"
    assert (workspace / ".venv" / "kept").read_text() == "env\n"
