"""The index folder's files: written whole or not at all, read back without trusting them.

Every file is written under a fresh name in the same folder and renamed over the old one
(:func:`orchestrator.sandbox.files.replace_file`, never through a link), so a reader sees
the old index or the new one, never half of one; ``index.json`` goes last (no fsync: an
index is remade from its tree). Reading opens with ``O_NOFOLLOW`` (the folder may sit where
a model can plant links) and validates the records in one pydantic call per file; a file
with bad lines still gives its good ones, and says how many it dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import read_regular, replace_file, what_is

FILES = "files.jsonl"
SYMBOLS = "symbols.jsonl"
RELATIONS = "relations.jsonl"
DIGEST = "digest.md"
META = "index.json"
READ_LIMIT = 1 << 30
T = TypeVar("T", bound=BaseModel)


def prepare(out: Path) -> None:
    """Make the index folder; a link or a file where it should be is refused."""
    found = what_is(out)
    if found == "nothing":
        out.mkdir(parents=True, exist_ok=True)
    elif found != "a folder":
        raise CadillacError(f"{out} is {found or 'a file'}; the index needs a folder there")


def dump(record: BaseModel, compact: bool = False) -> str:
    """One JSONL line. ``compact`` leaves out the fields at their defaults (a field without
    a default, like ``FileRecord.parse_errors``, is always written), which halves what a
    file record's imports take to write and read back; the reader fills them in again."""
    return record.model_dump_json(exclude_defaults=compact)


def write_jsonl(path: Path, records: list[BaseModel], compact: bool = False) -> None:
    write_lines(path, [dump(r, compact) for r in records])


def write_lines(path: Path, lines: list[str]) -> None:
    replace_file(path, ("\n".join(lines) + "\n" if lines else "").encode("utf-8"), durable=False)


def read_bytes(path: Path) -> bytes:
    """The file's bytes (OSError when it is missing, a link or unreadable)."""
    return read_regular(path, READ_LIMIT)


def read_lines(path: Path) -> list[str]:
    """The non-blank lines of a JSONL file (OSError when it cannot be read). Split on
    ``\\n`` only: JSON escapes it inside strings, unlike other line breaks."""
    text = read_bytes(path).decode("utf-8", "replace")
    return [line for line in text.split("\n") if line.strip()]


def read_jsonl(path: Path, model: type[T]) -> tuple[list[T], int]:
    """The records of a JSONL file and how many lines did not validate.

    OSError when the file cannot be read."""
    return parse_lines(read_lines(path), model)


def parse_lines(lines: list[str], model: type[T]) -> tuple[list[T], int]:
    """The records of JSONL lines (one pydantic call when all are good) and how many
    lines did not validate."""
    if not lines:
        return [], 0
    try:
        return _adapter(model).validate_json("[" + ",".join(lines) + "]"), 0
    except ValidationError:
        pass
    good = []
    for line in lines:
        try:
            good.append(model.model_validate_json(line))
        except ValidationError:
            continue
    return good, len(lines) - len(good)


_ADAPTERS: dict[type, TypeAdapter] = {}


def _adapter(model: type) -> TypeAdapter:
    if model not in _ADAPTERS:
        _ADAPTERS[model] = TypeAdapter(list[model])
    return _ADAPTERS[model]
