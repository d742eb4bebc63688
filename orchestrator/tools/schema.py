"""Each tool's arguments as one pydantic model: the schema the model sees and the check of a call.

What this module decides, and why:

* One model per tool is the single description of its arguments. The function
  schemas in :data:`TOOLS` are generated from the models (their docstrings and field
  descriptions are written for the model), and the same models validate every call,
  strictly (a number is not a string, ``true`` is not a number, no extra keys), so what
  the model is told and what is enforced cannot drift apart.
* A malformed call is a :class:`CallError` whose message is one paragraph for the
  model: what was wrong, then the tool's signature, so it can correct the call. A
  ``null`` for an optional argument means the argument is absent.
* Arguments are JSON as the standard has it, with finite numbers: ``NaN``,
  ``Infinity`` and ``-Infinity`` (which Python's parser accepts) and numbers beyond a
  float's range (``1e999``, which it reads as infinity, or an integer of hundreds of
  digits) are malformed calls, so no tool sees a number it cannot use (a ``timeout_s``
  of ``NaN`` or ``Infinity`` would be no limit at all). Arguments nested too deeply
  for the parser are a malformed call too, not a crash of the build.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PATH = "A path relative to the workspace root, e.g. 'app.py'."


class ToolArgs(BaseModel):
    """Base of every tool's arguments: strict types, no extra keys."""

    model_config = ConfigDict(extra="forbid", strict=True)


class WriteFile(ToolArgs):
    """Create a file, or replace its whole content. Folders are created as needed."""

    path: str = Field(description=PATH)
    content: str = Field(description="The full file text.")


class EditFile(ToolArgs):
    """Replace one exact piece of a file. 'old' must occur exactly once, matching whitespace and
    indentation; include surrounding lines to make it unique."""

    path: str = Field(description=PATH)
    old: str = Field(description="The exact text to replace.")
    new: str = Field(description="The text to put in its place.")


class ReadFile(ToolArgs):
    """Read a text file (cut at 100 KB)."""

    path: str = Field(description=PATH)


class ListFiles(ToolArgs):
    """List the files under a folder, recursively (tool and cache folders skipped)."""

    path: str = Field(
        default=".", description="A folder relative to the workspace root; default '.'."
    )


class Run(ToolArgs):
    """Run a bash command in the workspace root, e.g. tests or a linter. No input is available to
    it; stdout and stderr come back merged, long output cut in the middle."""

    command: str = Field(description="The bash command line.")
    timeout_s: float | None = Field(default=None, description="Time limit in seconds (optional).")


KnowledgeAction = Literal["digest", "search", "symbol", "related", "tests", "episodes", "rejected"]


class Knowledge(ToolArgs):
    """Ask what cadillac knows, without changing anything: 'digest' (an overview of the
    workspace's code), 'search' (symbols and files matching the query), 'symbol' (where a
    name is defined, with its lines), 'related' (a file's imports, importers, tests and
    files that change with it), 'tests' (the tests of a file or symbol), 'episodes'
    (earlier runs on similar tasks and how they ended), 'rejected' (approaches known to
    fail for similar tasks)."""

    action: KnowledgeAction = Field(description="What to ask.")
    query: str = Field(
        default="",
        description="Words, a name, or a path; optional for digest, episodes and rejected.",
    )


MemoryAction = Literal["save", "append", "list", "get", "forget", "consolidate", "stats"]


class Memory(ToolArgs):
    """Your memory across builds. 'save' keeps a lesson (give type, trigger, fix, and
    polarity 'dont' for an anti-pattern; tags optional), a note (give name and content;
    type optional: convention, decision, gotcha, architecture, note, preference) or a
    skill (kind 'skill', content a SKILL.md with frontmatter name, description, triggers);
    a note you save is proposed: no later build sees it until a person accepts it;
    'append' adds content to a note you saved; 'list' shows the notes and the lessons of
    this build; 'get' reads a lesson (id) or a note (name) in full; 'forget' removes what
    this build saved (what people and earlier builds saved is read-only); 'consolidate'
    merges near-duplicates among the lessons recalled for this build; 'stats' counts."""

    action: MemoryAction = Field(description="What to do.")
    kind: Literal["lesson", "note", "skill"] | None = Field(
        default=None, description="What to save (default: a lesson when trigger is given)."
    )
    name: str | None = Field(default=None, description="A note's or a skill's name.")
    content: str | None = Field(default=None, description="A note's text, or a SKILL.md.")
    type: str | None = Field(default=None, description="The lesson's or the note's type.")
    trigger: str | None = Field(default=None, description="A lesson's situation, one line.")
    fix: str | None = Field(default=None, description="What to do (or, dont: never do, why).")
    polarity: Literal["do", "dont"] | None = Field(default=None, description="Default do.")
    tags: list[str] | None = Field(default=None, description="Stack tags, e.g. python, flask.")
    id: str | None = Field(default=None, description="A lesson's id (get, forget).")
    description: str | None = Field(default=None, description="A note's one-line summary.")


class FinishPhase(ToolArgs):
    """Say the phase's work is done; its check runs next and you hear back if it fails."""

    summary: str = Field(description="What you did in this phase.")
    applied_lessons: list[str] = Field(
        default_factory=list, description="Ids of recalled lessons you followed; may be empty."
    )


ARGUMENTS: dict[str, type[ToolArgs]] = {
    "write_file": WriteFile,
    "edit_file": EditFile,
    "read_file": ReadFile,
    "list_files": ListFiles,
    "run": Run,
    "knowledge": Knowledge,
    "memory": Memory,
    "finish_phase": FinishPhase,
}
"""Tool name -> its arguments, in the order the model is shown them."""


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    """A property schema without pydantic's titles and defaults, ``X | None`` shown as ``X``."""
    options = [p for p in prop.get("anyOf", []) if p.get("type") != "null"]
    if len(options) == 1:
        prop = {**options[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
    return {k: v for k, v in prop.items() if k not in ("title", "default")}


def function_schema(name: str, args: type[ToolArgs]) -> dict[str, Any]:
    """The OpenAI-style function tool for ``args``."""
    schema = args.model_json_schema()
    description = " ".join((args.__doc__ or "").split())
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: _plain(v) for k, v in schema["properties"].items()},
                "required": schema.get("required", []),
                "additionalProperties": False,
            },
        },
    }


TOOLS: list[dict[str, Any]] = [function_schema(name, args) for name, args in ARGUMENTS.items()]
SCHEMAS: dict[str, dict] = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


class CallError(Exception):
    """A malformed call; the message is the paragraph the model reads."""


_JSON_NAMES = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _kind(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return _choices(prop)
    kind = prop["type"]
    return f"array of {prop['items']['type']}s" if kind == "array" else kind


def _choices(prop: dict[str, Any]) -> str:
    """The values an enum argument takes, as JSON: ``"do" | "dont"``."""
    return " | ".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"])


def _shown(value: Any) -> str:
    """A value the model sent, as JSON, cut short: ``"nope"``, ``5``."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def signature(name: str) -> str:
    """``write_file takes a JSON object {"path": string, "content": string}``."""
    params = SCHEMAS[name]
    parts = [
        f'"{key}": {_kind(prop)}' + ("" if key in params["required"] else " (optional)")
        for key, prop in params["properties"].items()
    ]
    return f"{name} takes a JSON object {{{', '.join(parts)}}}"


class _NotFinite(ValueError):
    """A number JSON does not have (NaN, Infinity) or one beyond a float's range."""


def _refuse_constant(text: str) -> float:
    raise _NotFinite(f"{text} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"{_short(text)} is too large for a number")
    return value


def _finite_int(text: str) -> int:
    if len(text.lstrip("-")) > 308:  # beyond a float (and Python's 4300-digit int limit)
        raise _NotFinite(f"{_short(text)} is too large for a number")
    return int(text)


def _short(number: str) -> str:
    digits = len(number.lstrip("-"))
    return number if len(number) <= 24 else f"{number[:12]}... ({digits} digits)"


def parse_arguments(name: str, raw: str) -> ToolArgs:
    """The call's arguments validated by the tool's model, or a CallError for the model."""
    sig = signature(name)
    try:
        data = (
            json.loads(
                raw,
                parse_constant=_refuse_constant,
                parse_float=_finite_float,
                parse_int=_finite_int,
            )
            if raw and raw.strip()
            else {}
        )
    except _NotFinite as exc:
        raise CallError(
            f"The arguments of {name} are not valid JSON ({exc}; numbers must be finite). {sig}."
        ) from None
    except json.JSONDecodeError as exc:
        raise CallError(f"The arguments of {name} are not valid JSON ({exc}). {sig}.") from None
    except RecursionError:
        raise CallError(f"The arguments of {name} are nested too deeply. {sig}.") from None
    if not isinstance(data, dict):
        kind = _json_type(data)
        raise CallError(f"The arguments of {name} must be a JSON object, not a JSON {kind}. {sig}.")
    params = SCHEMAS[name]
    data = {k: v for k, v in data.items() if not (v is None and k not in params["required"])}
    try:
        return ARGUMENTS[name].model_validate(data)
    except ValidationError as exc:
        problems = list(dict.fromkeys(_problem(e, data, params) for e in exc.errors()))
    raise CallError(f"The call to {name} was not run: {'; '.join(problems)}. {sig}.")


def _problem(error: dict[str, Any], data: dict[str, Any], params: dict[str, Any]) -> str:
    """One pydantic error as the model should read it, by its type: a missing or unexpected
    argument; a value that is not one of an enum's (the valid values named); an item of a
    list of the wrong type (which item); a value of the wrong JSON type; anything else with
    pydantic's own words after the argument's name."""
    loc, kind = error["loc"], error["type"]
    key = str(loc[0]) if loc else ""
    if kind == "missing":
        return f"missing required argument {key!r}"
    if kind == "extra_forbidden":
        return f"unexpected argument {key!r}"
    prop = params["properties"].get(key)
    if prop is None:
        return error["msg"]
    given = data.get(key)
    if "enum" in prop:
        return f"{key!r} must be one of {_choices(prop)}, not {_shown(given)}"
    if len(loc) > 1 and prop.get("type") == "array" and isinstance(given, list):
        item = loc[1]
        value = given[item] if isinstance(item, int) and 0 <= item < len(given) else None
        return (
            f"item {item} of {key!r} must be of type {prop['items']['type']}, "
            f"not {_json_type(value)}"
        )
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{key!r} must be of type {_kind(prop)}, not {_json_type(given)}"
    return f"{key!r}: {error['msg']}"
