"""What an improve trial is given so that a ``scripted:package.module:function`` builder loads.

A trial runs ``matrix run`` in a sandbox, with the trial's code (a worktree of the
repository's commit) first on ``PYTHONPATH`` and cadillac's own environment visible, and
nothing else of the host: a policy module the host imports from anywhere else (the
current folder, a folder on the host's ``PYTHONPATH``) is not there, and every build of
the trial would fail with ``No module named ...``. So, before anything is made, each
scripted builder's module is placed (:func:`carry_policies`):

* the repository's commit holds it: the trial's worktree has it (the commit's version);
* it is in cadillac's environment (the venv, the standard library): the trial has it;
* else its top-level module (the file) or package (the folder) is *carried*: read now, at
  most :data:`MAX_FILES` files and :data:`MAX_BYTES`, and written for each trial into a
  folder beside the trial's (``iter-<i>/carried/<label>-trial``), visible to it read-only,
  after the trial's code on its ``PYTHONPATH``. Only that module or package goes, never
  the folder it sits in, which may hold anything (the matrix's hidden checks among it);
  what it imports from beside it is not carried.

What cannot reach a trial is refused in one line: a script registered in this process
only (``scripted:NAME``), a namespace package spread over folders, a top-level name the
commit holds too (the trial's code would shadow the carried one), or one over the limits.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import CadillacError
from orchestrator.improve.git import git
from orchestrator.sandbox.files import remove_tree
from orchestrator.sandbox.git import GitError

MAX_FILES = 2_000
MAX_BYTES = 20 * 1024**2


@dataclass
class Carried:
    """The policy modules carried into each trial: their files, by path under the folder
    that goes on the trial's ``PYTHONPATH``."""

    files: dict[str, bytes] = field(default_factory=dict)

    def write(self, folder: Path) -> Path | None:
        """Write the files into ``folder`` (made afresh); None when nothing is carried."""
        if not self.files:
            return None
        remove_tree(folder)
        for name, data in self.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return folder


def carry_policies(models: list[str], repo: Path, commit: str) -> Carried:
    """What the trials need to load the scripted builders among ``models`` (imported by
    the host already); CadillacError in one line for one that cannot reach a trial."""
    carried = Carried()
    for model in models:
        kind, _, arg = model.partition(":")
        if kind != "scripted":
            continue
        module, named, _ = arg.partition(":")
        if not named:
            raise CadillacError(
                f"builder {model!r} is a script registered in this process: an improve "
                "trial runs in another process and cannot load it; name it by its module, "
                "as scripted:package.module:function"
            )
        if not _in_commit(repo, commit, module):
            carried.files.update(_carry(model, module, repo, commit))
    return carried


def _exists(repo: Path, commit: str, path: str) -> bool:
    try:
        git(repo, "cat-file", "-e", f"{commit}:{path}")
    except GitError:
        return False
    return True


def _in_commit(repo: Path, commit: str, module: str) -> bool:
    path = module.replace(".", "/")
    return any(_exists(repo, commit, name) for name in (f"{path}.py", f"{path}/__init__.py"))


def _in_runtime(path: Path) -> bool:
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return any(path.resolve().is_relative_to(root) for root in roots)


def _carry(model: str, module: str, repo: Path, commit: str) -> dict[str, bytes]:
    top = module.split(".")[0]
    spec = importlib.util.find_spec(top)
    refused = f"builder {model!r} cannot be loaded in an improve trial"
    locations = list(spec.submodule_search_locations or []) if spec else []
    if spec is None or (not locations and not (spec.origin and os.path.isfile(spec.origin))):
        if spec is not None and spec.origin in ("built-in", "frozen"):
            return {}
        raise CadillacError(f"{refused}: {top} is not a file or a folder cadillac can carry")
    if len(locations) > 1:
        raise CadillacError(f"{refused}: {top} is a namespace package over several folders")
    unit = Path(locations[0] if locations else spec.origin)
    if _in_runtime(unit):
        return {}
    if _in_commit(repo, commit, top):
        raise CadillacError(
            f"{refused}: {module} is not in {repo}'s commit {commit[:10]}, whose own {top} "
            f"would hide {unit} from the trial; commit it there, or rename {top}"
        )
    files = sorted(p for p in unit.rglob("*") if p.is_file()) if locations else [unit]
    carried, size = {}, 0
    for path in files:
        if "__pycache__" in path.relative_to(unit.parent).parts:
            continue
        data = path.read_bytes()
        size += len(data)
        if size > MAX_BYTES or len(carried) >= MAX_FILES:
            raise CadillacError(
                f"{refused}: {unit} is too big to carry into a trial (more than "
                f"{MAX_FILES} files or {MAX_BYTES // 1024**2} MB)"
            )
        carried[path.relative_to(unit.parent).as_posix()] = data
    return carried
