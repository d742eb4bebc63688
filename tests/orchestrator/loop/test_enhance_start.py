"""What ``cadillac enhance`` and ``iterate`` decide before the first phase (issue 22).

A bare repository is built from through a worktree, never copied in as the project (nor
is a repository's ``.git`` folder); a repository with no commit and an empty instruction
are refused in one line; the build is tagged with the project's stacks before it starts,
so the first phase gets the budgets and lessons learned for them; the user hears what
working from HEAD leaves out (uncommitted and untracked files, submodules), ``--apply``
on a tree that could not take the change is refused before the build is paid for, and a
project whose own tests already fail is said to be one, to the user and in the model's
prompt.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from memory.budgets import BudgetRow
from memory.tags import project_tags
from orchestrator.cli import main
from orchestrator.home import Home
from tests.fakes import enhance_policies as policies
from tests.orchestrator.conftest import git
from tests.orchestrator.loop.test_enhance import MODEL, project

pytestmark = pytest.mark.e2e


def committed(path: Path) -> Path:
    repo = project(path)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wordfreq")
    return repo


def enhance(home: Path, repo: Path, *extra: str, policy: str = "honest") -> int:
    argv = ["enhance", str(repo), policies.TASK, "--model", MODEL.format(policy), "--json"]
    return main([*argv, "--home", str(home), *extra])


def only_run(home: Path) -> Path:
    (run,) = (home / "runs").glob("2*")
    return run


def run_events(run: Path) -> list[dict]:
    """Each event's fields, with its kind."""
    lines = (run / "events.jsonl").read_text().splitlines()
    return [{"kind": e["kind"], "phase": e["phase"], **e["data"]} for e in map(json.loads, lines)]


# ------------------------------------------------------------------ item 8: a bare repository
@pytest.fixture
def bare_repo(tmp_path) -> Path:
    bare = tmp_path / "wordfreq.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    clone = committed(tmp_path / "clone")
    git(clone, "push", "-q", str(bare), "main")
    return bare


def test_a_bare_repository_is_built_from_a_worktree_not_copied_as_the_project(
    home, bare_repo, capsys
):
    head = git(bare_repo, "rev-parse", "HEAD")
    assert enhance(home, bare_repo) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "passed", summary["reason"]
    workspace = only_run(home) / "workspace"
    assert (workspace / "wordfreq.py").is_file()
    assert not any((workspace / name).exists() for name in ("HEAD", "config", "objects", "hooks"))
    task = json.loads((only_run(home) / "task.json").read_text())
    assert task["source"]["kind"] == "git" and task["source"]["bare"] is True
    # the change is on the new branch of the bare repository; main is where it was
    branch = summary["branch"]
    assert git(bare_repo, "rev-parse", "main") == head
    changed = git(bare_repo, "diff", "--name-only", f"{head}..{branch}").splitlines()
    assert "wordfreq.py" in changed and "HEAD" not in changed


def test_apply_to_a_bare_repository_is_refused_before_the_build(home, bare_repo, capsys):
    assert enhance(home, bare_repo, "--apply") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a bare repository" in err, err
    assert not (home / "runs").exists() or not list((home / "runs").glob("2*"))


def test_a_repositorys_git_folder_is_refused_not_copied_as_the_project(home, tmp_path, capsys):
    repo = committed(tmp_path / "wordfreq")
    assert enhance(home, repo / ".git") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a repository's git directory" in err, err
    assert not (home / "runs").exists() or not list((home / "runs").glob("2*"))


# ------------------------------------------------------------------ item 19: bad starts
def test_an_empty_repository_is_refused_in_one_line(home, tmp_path, capsys):
    repo = project(tmp_path / "empty")
    git(repo, "init", "-q", "-b", "main")
    assert enhance(home, repo) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no commit yet" in err and "fatal" not in err, err
    assert not (home / "runs").exists() or not list((home / "runs").glob("2*"))


def test_an_empty_iterate_instruction_says_so_and_suggests_iterate(home, capsys):
    code = main(["iterate", "20200101-000000-aaaaaa", "  ", "--model", MODEL.format("honest")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err  # a usage mistake, as an empty task is
    assert "instruction is empty" in err and "cadillac iterate 20200101-000000-aaaaaa" in err
    assert "enhance" not in err


# ------------------------------------------------------------------ item 9: the project's tags
def test_the_build_is_tagged_with_the_projects_stacks_before_the_first_phase(
    home, tmp_path, capsys
):
    repo = committed(tmp_path / "wordfreq")  # requirements.txt: a Python project
    assert enhance(home, repo) == 0
    run = only_run(home)
    start = next(e for e in run_events(run) if e["kind"] == "build_start")
    assert "python" in start["tags"], start["tags"]
    assert all("no task tags" not in b["reason"] for b in start["budgets"].values())
    assert "python" in json.loads((run / "task.json").read_text())["source"]["tags"]


def test_the_first_phase_gets_the_budget_and_lessons_learned_for_the_projects_stack(home, tmp_path):
    rows = [BudgetRow(phase="plan", rounds=10, tags=["python"], outcome="passed")] * 3
    (home / "phase_budgets.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    store = MemoryStore(Home(home).memory_path)
    python, react = (
        store.save(Lesson(type="tool_pattern", trigger=trigger, fix=fix, tags=tags, confidence=0.5))
        for trigger, fix, tags in (
            (
                "adding an option to a command-line tool that counts words",
                "test the option's default and one value with a unit test",
                ["python"],
            ),
            (
                "a word counter component in the browser shows words shorter than a minimum",
                "filter in a useMemo hook and cover it with a jest unit test",
                ["react", "typescript"],
            ),
        )
    )
    repo = committed(tmp_path / "wordfreq")  # the instruction names no stack
    assert enhance(home, repo) == 0
    run = only_run(home)
    plan = next(e for e in run_events(run) if e["kind"] == "phase_start")
    assert plan["phase"] == "plan" and plan["budget"] == 12  # p90 10 x 1.2 of python rows
    recalled = json.loads((run / "summary.json").read_text())["lessons_recalled"]
    assert python.id in recalled and react.id not in recalled, recalled


@pytest.mark.parametrize(
    ("files", "tags"),
    [
        ({"pyproject.toml": '[project]\ndependencies = ["flask"]\n'}, {"python", "flask"}),
        ({"requirements.txt": "pytest\n"}, {"python", "pytest"}),
        (
            {
                "package.json": '{"dependencies": {"react": "18"}, "devDependencies": '
                '{"typescript": "5"}}'
            },  # fmt: skip
            {"node", "javascript", "react", "typescript"},
        ),
        ({"go.mod": "module example.com/x\n"}, {"go"}),
        ({"Cargo.toml": '[package]\nname = "x"\n'}, {"rust", "cargo"}),
        ({"src/main.py": "print(1)\n"}, {"python"}),  # no manifest: the files' languages
        ({"README.md": "a flask app, some day\n"}, set()),
    ],
)
def test_project_tags_come_from_manifests_then_file_extensions(tmp_path, files, tags):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert project_tags(tmp_path) == tags


def test_project_tags_follow_no_link(tmp_path):
    (tmp_path / "outside.toml").write_text('dependencies = ["django"]\n')
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").symlink_to(tmp_path / "outside.toml")
    assert project_tags(tmp_path / "proj") == set()


# ------------------------------------------------------------------ item 20: what is left out
def test_uncommitted_untracked_and_submodules_are_named_at_the_start(home, tmp_path, capsys):
    sub = committed(tmp_path / "lib")
    repo = committed(tmp_path / "wordfreq")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendor/lib")
    git(repo, "commit", "-q", "-m", "a submodule")
    (repo / "README.md").write_text("edited, not committed\n")
    for i in range(14):
        (repo / f"scratch{i:02}.txt").write_text("untracked\n")
    assert enhance(home, repo) == 0
    err = capsys.readouterr().err
    left = next(line for line in err.splitlines() if "left out" in line)
    assert "1 uncommitted change(s) and 14 untracked file(s)" in left
    assert "README.md" in left and "scratch00.txt" in left and "and 5 more" in left
    assert "scratch13.txt" not in left  # bounded
    sub_line = next(line for line in err.splitlines() if "submodule" in line)
    assert "vendor/lib" in sub_line and "empty folder" in sub_line


def test_a_clean_repository_gets_no_note(home, tmp_path, capsys):
    repo = committed(tmp_path / "wordfreq")
    assert enhance(home, repo) == 0
    err = capsys.readouterr().err
    assert "left out" not in err and "submodule" not in err and "already fail" not in err


def test_tests_that_already_fail_at_head_are_said_to_user_and_model(home, tmp_path, capsys):
    repo = project(tmp_path / "wordfreq")
    (repo / "tests" / "test_broken.py").write_text(
        "import unittest\n\n\nclass Broken(unittest.TestCase):\n"
        "    def test_broken_already(self):\n        self.assertEqual(1, 2)\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wordfreq, with a failing test")
    enhance(home, repo)
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "already fail" in line)
    assert "1 of 6 test(s) failed: test_broken.Broken.test_broken_already" in line
    assert "AssertionError: 1 != 2" in line  # what it said
    assert "6 ran: 5 passed, 1 failed (unittest report" in err  # read test by test
    run = only_run(home)
    failing = json.loads((run / "task.json").read_text())["baseline"]["failing"]
    assert "test_broken_already" in failing
    events = run_events(run)
    first_phase = next(i for i, e in enumerate(events) if e["kind"] == "phase_start")
    before = [e["command"] for e in events[:first_phase] if e["kind"] == "command"]
    assert any("python -m unittest discover -s tests" in c for c in before)
    plan_prompt = next(
        json.loads(line)
        for line in (run / "llm.jsonl").read_text().splitlines()
        if "# Phase: plan" in line
    )
    assert "already failed before any change" in json.dumps(plan_prompt)


def test_ctrl_c_while_the_first_tests_run_removes_the_run_and_its_branch(
    home, tmp_path, capsys, monkeypatch
):
    from orchestrator.loop.agent import Builder

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(Builder, "baseline_tests", interrupted)  # Ctrl-C, as it would come
    repo = committed(tmp_path / "wordfreq")
    assert enhance(home, repo) != 0
    assert "interrupted" in capsys.readouterr().err
    assert not list((home / "runs").glob("2*"))
    assert git(repo, "branch", "--list", "cadillac/*") == ""
    assert "runs" not in git(repo, "worktree", "list")


# ------------------------------------------------------------------ issue 24 item 10
@pytest.fixture
def foreign_repo(tmp_path, monkeypatch) -> Path:
    """A repository owned by another user, and a user configuration of the test's own
    (git's global file) that cadillac reads ``safe.directory`` from."""
    import os

    from orchestrator.sandbox import git as safe_git

    if os.geteuid() != 0:
        pytest.skip("making a repository another user owns needs root (CI runs as root)")
    repo = committed(tmp_path / "foreign")
    for folder, dirs, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(name, 65534, 65534)
    config = tmp_path / "user.gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setattr(safe_git, "_SAFE_DIRECTORIES", None)  # read again, from this file
    return repo


def test_a_repository_the_user_trusts_in_safe_directory_is_built_from_its_head(
    home, foreign_repo, tmp_path, capsys
):
    (tmp_path / "user.gitconfig").write_text(f"[safe]\n\tdirectory = {foreign_repo}\n")
    assert enhance(home, foreign_repo) == 0
    summary = json.loads(capsys.readouterr().out)
    task = json.loads((only_run(home) / "task.json").read_text())
    assert task["source"]["kind"] == "git" and summary["branch"].startswith("cadillac/")


def test_a_repository_git_will_not_read_is_copied_and_the_user_told_why(home, foreign_repo, capsys):
    assert enhance(home, foreign_repo) == 0
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if "will not read" in line)
    assert "another user owns it" in line and "safe.directory" in line
    task = json.loads((only_run(home) / "task.json").read_text())
    assert task["source"]["kind"] == "folder"
