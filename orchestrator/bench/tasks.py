"""A benchmark matrix on disk: a folder of tasks, each with its hidden checks.

A task is a folder holding ``task.toml`` (id, kind, prompt, tags, split, weight,
timeout_s) and ``acceptance/`` (test files the model never sees). A ``build`` task (the
default kind) starts from an empty folder; an ``enhance`` task changes an existing
project, the one in its ``repo/`` folder, which only enhance tasks have. :func:`load_matrix`
reads and validates every task of a folder and names the file or folder that is wrong
when one is.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from orchestrator import SOURCE_ROOT
from orchestrator.errors import CadillacError

DEFAULT_MATRIX = SOURCE_ROOT / "matrices" / "default"
Split = Literal["train", "holdout"]
Kind = Literal["build", "enhance"]


class MatrixTask(BaseModel):
    """One task.toml."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    kind: Kind = "build"
    """``build``: from an empty folder; ``enhance``: a change to the project in ``repo/``."""
    prompt: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    split: Split = "train"
    weight: float = Field(default=1.0, gt=0)
    timeout_s: float = Field(default=1800.0, gt=0)
    _dir: Path = PrivateAttr()

    @property
    def dir(self) -> Path:
        return self._dir

    @property
    def repo(self) -> Path:
        """The starting project of an enhance task (absent for a build task)."""
        return self.dir / "repo"


def load_matrix(folder: Path, require_checks: bool = True) -> list[MatrixTask]:
    """The tasks of a matrix folder, by id; CadillacError naming the file that is wrong.

    ``require_checks=False`` reads a matrix without its hidden checks (an improve trial's)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CadillacError(f"matrix {folder} is not a folder")
    tasks = []
    for toml in sorted(folder.glob("*/task.toml")):
        try:
            text = toml.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CadillacError(
                f"{toml}: is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); save it as UTF-8"
            ) from None
        except OSError as exc:
            raise CadillacError(f"{toml}: cannot be read: {exc.strerror or exc}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CadillacError(f"{toml}: not TOML: {exc}") from None
        try:
            task = MatrixTask.model_validate(data)
        except ValidationError as exc:
            raise CadillacError(problems(toml, exc)) from None
        if task.id != toml.parent.name:
            raise CadillacError(f"{toml}: id {task.id!r} differs from its folder name")
        if require_checks and not (toml.parent / "acceptance").is_dir():
            raise CadillacError(f"{toml.parent}: no acceptance/ folder")
        task._dir = toml.parent
        _check_repo(task)
        tasks.append(task)
    if not tasks:
        raise CadillacError(f"matrix {folder} holds no */task.toml")
    return tasks


def problems(toml: Path, exc: ValidationError) -> str:
    """Every error of a task.toml, one line each, each naming the file and the key: a
    user fixes them all at once instead of one per run."""
    lines = []
    for error in exc.errors():
        key = ".".join(str(x) for x in error["loc"]) or "(the file)"
        got = error.get("input")
        shown = "" if error["type"] == "missing" or isinstance(got, dict) else f" (got {got!r:.60})"
        lines.append(f"{toml}: {key}: {error['msg']}{shown}")
    return lines[0] if len(lines) == 1 else "\n".join([f"{toml}: {len(lines)} problems", *lines])


def _check_repo(task: MatrixTask) -> None:
    """An enhance task has a starting project in repo/; a build task has no repo/."""
    has_repo = task.repo.is_dir() and any(p.is_file() for p in task.repo.rglob("*"))
    if task.kind == "enhance" and not has_repo:
        raise CadillacError(f"{task.dir}: an enhance task needs repo/ with the starting project")
    if task.kind == "build" and (task.repo.exists() or task.repo.is_symlink()):
        raise CadillacError(
            f"{task.dir}: a build task starts from an empty folder and has no repo/; "
            'set kind = "enhance" in task.toml, or remove repo/'
        )
