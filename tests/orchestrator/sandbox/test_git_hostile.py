"""Git never runs a program a model chose: hostile workspaces against cadillac's real paths.

Each test prepares a workspace as a sandboxed command could leave it (the files are written
directly: a nested repository with a filter in its own ``.git/config``, a ``.git`` file
pointing elsewhere, a gitlink, ``.gitattributes`` naming drivers...), then drives
cadillac's own ``source.commit`` / ``restore`` / ``write_patch`` / ``apply`` or the improve
cycle's worktree, and asserts that the marker, a file outside the workspace that each
planted program would make, never appears, while the commit or patch still works.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.improve.git import Worktree
from orchestrator.loop import source as sources
from orchestrator.sandbox.git import WorkTree, run_git, status_paths

PLAIN_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def plain(where: Path, *args: str) -> str:
    """git as the model (or the user) would run it: the test's own, with nothing planted
    yet, so it runs nothing itself."""
    command = ["git", "-C", str(where), "-c", "user.name=m", "-c", "user.email=m@m", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=PLAIN_ENV, check=True)
    return done.stdout.strip()


def nested_repo(at: Path, config: str, attributes: str = "* filter=evil diff=evil\n") -> Path:
    """A repository the model made inside its workspace: one committed file, then its
    ``.git/config`` given ``config`` and the file touched so a status must re-read it."""
    at.mkdir(parents=True, exist_ok=True)
    plain(at, "init", "-q")
    (at / "data.txt").write_text("the model's data\n")
    (at / ".gitattributes").write_text(attributes)
    plain(at, "add", "-A")
    plain(at, "commit", "-q", "-m", "nested")
    with (at / ".git" / "config").open("a") as f:
        f.write(config)
    os.utime(at / "data.txt", (1, 1))  # same content, another time: git must hash it again
    return at


def project(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "app.py").write_text("print('hello')\n")
    (path / "notes.txt").write_text("notes\n")
    return path


@pytest.fixture
def folder(tmp_path):
    """A plain folder's enhance build: (source, workspace)."""
    run = tmp_path / "run"
    workspace = run / "workspace"
    workspace.mkdir(parents=True)
    source = sources.prepare(project(tmp_path / "plain"), workspace, run, "20260101-000000-aaaaaa")
    return source, workspace


@pytest.fixture
def repo_build(tmp_path):
    """A git repository's enhance build: (source, workspace, the user's repository)."""
    repo = project(tmp_path / "user")
    plain(repo, "init", "-q", "-b", "main")
    plain(repo, "add", "-A")
    plain(repo, "commit", "-q", "-m", "base")
    run = tmp_path / "run"
    workspace = run / "workspace"
    workspace.mkdir(parents=True)
    source = sources.prepare(repo, workspace, run, "20260101-000000-bbbbbb")
    return source, workspace, repo


def filters(marker: Path) -> dict[str, str]:
    """The configuration naming each program, as a ``.git/config`` section."""
    run = f"sh -c 'touch {marker} && cat'"
    return {
        "clean": f'[filter "evil"]\n\tclean = {run}\n',
        "smudge": f'[filter "evil"]\n\tsmudge = {run}\n\tclean = cat\n',
        "process": f'[filter "evil"]\n\tprocess = {run}\n\trequired = true\n',
        "fsmonitor": f"[core]\n\tfsmonitor = touch {marker}\n",
        "textconv": f'[diff "evil"]\n\ttextconv = {run}\n',
        "diff.external": f"[diff]\n\texternal = touch {marker}\n",
        "sshCommand": f"[core]\n\tsshCommand = touch {marker}\n[submodule]\n\trecurse = true\n",
    }


NESTED = ["clean", "process", "fsmonitor"]


@pytest.mark.parametrize("kind", NESTED)
def test_a_nested_repository_runs_nothing_when_cadillac_commits(folder, tmp_path, kind):
    """The nested repository is there for two phases' commits and the patch: none of
    them enters it (once a gitlink is recorded, a status or diff would)."""
    source, workspace = folder
    marker = tmp_path / "marker"
    lib = nested_repo(workspace / "vendor" / "lib", filters(marker)[kind])
    sources.commit(source, workspace, "a phase")
    os.utime(lib / "data.txt", (2, 2))
    (workspace / "app.py").write_text("print('next phase')\n")
    head = sources.commit(source, workspace, "the next phase")
    sources.write_patch(source, workspace, tmp_path / "changes.patch")
    assert not marker.exists()
    assert head != source.base
    tracked = run_git("ls-files", "-s", where=[f"--git-dir={source.git_dir}"])
    assert "vendor/lib/data.txt" in tracked and "160000" not in tracked  # files, no gitlink
    assert not (workspace / "vendor" / "lib" / ".git").exists()


def test_what_the_guard_removes_is_said(folder, tmp_path):
    source, workspace = folder
    nested_repo(workspace / "vendor" / "lib", "")
    (workspace / ".git").write_text("gitdir: /elsewhere\n")
    sources.commit(source, workspace, "a phase", said=(said := []).append)
    assert said == [
        "removed before running git (nested repositories, gitlinks): '.git', 'vendor/lib/.git'"
    ]


@pytest.mark.parametrize("kind", NESTED)
def test_a_nested_repository_runs_nothing_when_a_resume_restores(folder, tmp_path, kind):
    """A phase committed the nested repository; the next one stopped half way; the
    resume takes the workspace back to that commit without entering the repository."""
    source, workspace = folder
    marker = tmp_path / "marker"
    sub = nested_repo(workspace / "sub", filters(marker)[kind])
    sources.commit(source, workspace, "a phase")
    os.utime(sub / "data.txt", (2, 2))
    (workspace / "app.py").write_text("half written\n")
    lost = sources.restore(source, workspace)
    assert not marker.exists()
    assert "app.py" in lost and (workspace / "app.py").read_text() == "print('hello')\n"
    assert (workspace / "sub" / "data.txt").exists() and not (workspace / "sub" / ".git").exists()


def test_a_gitlink_in_the_index_with_a_git_file_pointing_elsewhere_runs_nothing(folder, tmp_path):
    """A gitlink whose folder holds a ``.git`` file naming a repository outside the
    workspace: a status that enters submodules would run that repository's filter."""
    source, workspace = folder
    marker = tmp_path / "marker"
    elsewhere = nested_repo(tmp_path / "elsewhere", filters(marker)["clean"])
    sha = plain(elsewhere, "rev-parse", "HEAD")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "data.txt").write_text("the model's data\n")
    (workspace / "sub" / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "sub" / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    where = [f"--git-dir={source.git_dir}", f"--work-tree={workspace}"]
    subprocess.run(
        ["git", *where, "update-index", "--add", "--cacheinfo", f"160000,{sha},sub"],
        env=PLAIN_ENV,
        check=True,
    )
    (workspace / "app.py").write_text("half written\n")
    lost = sources.restore(source, workspace)
    assert not marker.exists()
    assert "app.py" in lost
    assert "160000" not in run_git("ls-files", "-s", where=where)


def test_a_git_file_pointing_elsewhere_is_not_followed_by_a_commit(folder, tmp_path):
    source, workspace = folder
    marker = tmp_path / "marker"
    elsewhere = nested_repo(tmp_path / "elsewhere", filters(marker)["clean"])
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "data.txt").write_text("the model's data\n")
    (workspace / "pkg" / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "pkg" / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    sources.commit(source, workspace, "a phase")
    os.utime(workspace / "pkg" / "data.txt", (2, 2))  # the same, touched: to be hashed again
    sources.commit(source, workspace, "the next phase")
    sources.write_patch(source, workspace, tmp_path / "changes.patch")
    assert not marker.exists()
    assert "pkg/data.txt" in sources.changed_files(source, workspace)


@pytest.mark.parametrize("kind", ["clean", "smudge", "textconv"])
def test_drivers_of_the_users_own_config_never_run_on_the_models_files(repo_build, tmp_path, kind):
    """The user's repository configures a driver; the model's ``.gitattributes`` names it
    for its files. Committing, writing the patch and applying it (a fast-forward of the
    user's tree, which checks the files out) run none of them."""
    source, workspace, repo = repo_build
    marker = tmp_path / "marker"
    with (repo / ".git" / "config").open("a") as f:
        f.write(filters(marker)[kind])
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (workspace / "app.py").write_text("print('changed')\n")
    (workspace / "added.txt").write_text("new\n")
    sources.commit(source, workspace, "a phase")
    patch = tmp_path / "changes.patch"
    stat = sources.write_patch(source, workspace, patch)
    done = sources.apply(source, workspace, patch)
    assert not marker.exists()
    assert "3 files changed" in stat and done.startswith("fast-forwarded")
    assert (repo / "added.txt").read_text() == "new\n"


def test_a_plain_folder_gets_the_patch_without_running_its_drivers(folder, tmp_path):
    source, workspace = folder
    marker = tmp_path / "marker"
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (workspace / "app.py").write_text("print('changed')\n")
    nested_repo(workspace / "sub", filters(marker)["clean"])
    sources.commit(source, workspace, "a phase")
    patch = tmp_path / "changes.patch"
    sources.write_patch(source, workspace, patch)
    sources.apply(source, workspace, patch)
    assert not marker.exists()
    assert (Path(source.path) / "app.py").read_text() == "print('changed')\n"
    assert not (Path(source.path) / "sub" / ".git").exists()


# ----------------------------------------------------------------- the improve cycle's worktree
@pytest.fixture
def improve_repo(tmp_path) -> Path:
    repo = project(tmp_path / "cadillac")
    plain(repo, "init", "-q", "-b", "main")
    plain(repo, "add", "-A")
    plain(repo, "commit", "-q", "-m", "cadillac")
    return repo


def evil_git_dir(tmp_path: Path, config: str) -> Path:
    """A repository of the model's outside the worktree, whose config names ``config``."""
    elsewhere = tmp_path / "elsewhere"
    project(elsewhere)
    plain(elsewhere, "init", "-q")
    plain(elsewhere, "add", "-A")
    plain(elsewhere, "commit", "-q", "-m", "x")
    with (elsewhere / ".git" / "config").open("a") as f:
        f.write(config)
    return elsewhere / ".git"


IMPROVE = ["clean", "textconv", "diff.external", "fsmonitor", "include.path"]


@pytest.mark.parametrize("kind", IMPROVE)
def test_a_trial_that_repoints_its_worktrees_git_file_runs_nothing(improve_repo, tmp_path, kind):
    """A trial's command rewrites the worktree's ``.git`` file to a repository whose
    config names a program (or includes a file that does); the cycle's diff, status,
    commit and show use the worktree's own git directory and run none of it."""
    marker = tmp_path / "marker"
    if kind == "include.path":
        included = tmp_path / "included.cfg"
        included.write_text(filters(marker)["fsmonitor"])
        config = f"[include]\n\tpath = {included}\n"
    else:
        config = filters(marker)[kind]
    with Worktree(improve_repo, "trial", "HEAD") as tree:
        (tree.path / "app.py").write_text("print('patched')\n")
        (tree.path / ".gitattributes").write_text("* filter=evil diff=evil\n")
        (tree.path / ".git").write_text(f"gitdir: {evil_git_dir(tmp_path, config)}\n")
        diff = tree.diff(["app.py"])
        stray = tree.changed_besides(["app.py"])
        commit = tree.commit("a patch", ["app.py"])
        shown = tree.show(commit)
        assert not marker.exists()
        assert "+print('patched')" in diff and "+print('patched')" in shown
        assert ".git" in stray and ".gitattributes" in stray  # a trial that did this is caught


def test_git_reads_only_config_cadillac_or_the_user_wrote(folder, tmp_path):
    """Whatever the model planted, the configuration git reads for the workspace comes
    from the command line and the git directory outside it; every driver is off."""
    source, workspace = folder
    marker = tmp_path / "marker"
    for kind, text in filters(marker).items():
        nested_repo(workspace / kind.replace(".", "-"), text)
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(filters(marker)["fsmonitor"])
    (workspace / ".gitconfig").write_text(filters(marker)["clean"])
    with open(Path(source.git_dir) / "config", "a") as f:  # as if the user had one
        f.write(filters(marker)["clean"] + filters(marker)["textconv"])
    tree = WorkTree(source.git_dir, workspace)
    listed = tree.git("config", "--list", "--show-origin", "-z").split("\0")
    origins = {listed[i] for i in range(0, len(listed) - 1, 2)}
    assert origins <= {"command line:", f"file:{Path(source.git_dir).resolve() / 'config'}"}
    values = dict(item.split("\n", 1) for item in listed[1::2] if "\n" in item)
    assert values["filter.evil.clean"] == "" and values["diff.evil.textconv"] == ""
    assert values["core.fsmonitor"] == "" and values["core.sshcommand"] == "false"
    assert values["submodule.recurse"] == "false" and values["diff.external"] == ""
    assert not marker.exists()


def test_a_git_directory_inside_the_tree_is_refused(tmp_path):
    (tmp_path / "tree" / "gitdir").mkdir(parents=True)
    with pytest.raises(sources.GitError, match="inside"):
        WorkTree(tmp_path / "tree" / "gitdir", tmp_path / "tree")


def test_status_paths_reads_renames_and_copies_as_two_fields():
    status = "R  new name.txt\0old name.txt\0 M plain.py\0C  copy.py\0orig.py\0?? x y\0"
    assert status_paths(status) == [
        "new name.txt",
        "old name.txt",
        "plain.py",
        "copy.py",
        "orig.py",
        "x y",
    ]
