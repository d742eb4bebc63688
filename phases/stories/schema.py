"""User stories: what the built artifact must do, in a form cadillac runs itself.

What this module decides, and why:

* **Stories are data, never code.** The plan phase writes them in ``stories.json`` beside
  ``plan.json``. A story says what to send the artifact and what must come back. Every
  field is a value (argv as a list, a body, a pattern). None is a shell line, so no host
  shell ever sees a metacharacter a model put in one.
* **Five surfaces.**
  - ``cli``: argv, stdin and env in; the exit status, stdout and stderr out.
  - ``http``: a start command, a ready probe, then requests; the status, JSON fields and
    headers out.
  - ``library``: a call of a module's function with JSON arguments, in Python or
    JavaScript; the value it returns, or the exception it raises.
  - ``browser``: a path of the served build, then steps (click, type, wait for); the text
    expected, with no console error and no failed request.
  - ``files``: a file, and what it holds.
* **Fixed when the plan passes.** :func:`weakened` compares the stories the plan phase
  fixed with those a later phase leaves. Adding a story is fine. Dropping one, or changing
  one in any way, is a weakening: the run records the attempt, and validate runs the
  plan's own stories.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticUndefined

NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )


class TextExpect(Strict):
    """What a stream (stdout, stderr, a response body, a file) must hold: any of these."""

    equals: str | None = None
    """The whole text (a trailing newline on either side is not counted)."""
    contains: list[str] = Field(default_factory=list)
    """Pieces the text must contain."""
    matches: str | None = None
    """A regular expression (Python's ``re``, searched)."""
    json_paths: dict[str, Any] = Field(default_factory=dict, alias="json")
    """JSON path (``items.0.title``) -> the value it must have."""


class CliStory(Strict):
    kind: Literal["cli"] = "cli"
    name: str = Field(pattern=NAME)
    argv: list[str] = Field(min_length=1)
    stdin: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    exit: int | None = 0
    """The exit status (null: any)."""
    stdout: TextExpect | None = None
    stderr: TextExpect | None = None
    timeout_s: float = Field(default=30, gt=0, le=300)


class HttpRequest(Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
    path: str = Field(pattern=r"^/")
    json_body: Any = None
    body: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    status: int = Field(default=200, ge=100, le=599)
    expect: TextExpect | None = None
    """What the response's body must hold."""
    expect_headers: dict[str, str] = Field(default_factory=dict)
    """Header name -> a text its value must contain."""


class HttpStory(Strict):
    kind: Literal["http"] = "http"
    name: str = Field(pattern=NAME)
    start: list[str] = Field(min_length=1)
    """The server's argv; it listens on the port in ``$PORT``."""
    ready: str = Field(default="/", pattern=r"^/")
    """A path that answers once the server is up."""
    requests: list[HttpRequest] = Field(min_length=1)
    timeout_s: float = Field(default=30, gt=0, le=300)
    """The time the server has to answer ``ready``, and again for all the requests."""


class LibraryStory(Strict):
    kind: Literal["library"] = "library"
    name: str = Field(pattern=NAME)
    language: Literal["python", "javascript"]
    module: str = Field(min_length=1)
    """Python: an import name (``wordfreq``, ``pkg.mod``); JavaScript: a path (``./src/lib.js``)
    or a package name."""
    function: str = Field(pattern=r"^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$")
    args: list[Any] = Field(default_factory=list)
    """The call's arguments, as JSON values."""
    returns: Any = None
    """The JSON value the call returns (an awaited promise's, in JavaScript)."""
    raises: str | None = None
    """The exception's name (``ValueError``, ``TypeError``); then ``returns`` is not read."""


def inside(path: str) -> None:
    """ValueError unless ``path`` is a relative path that stays inside the workspace."""
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"{path!r} must be a path inside the workspace")


class BrowserStep(Strict):
    action: Literal["click", "type", "wait_for", "press"]
    selector: str = Field(min_length=1)
    text: str = ""


class BrowserStory(Strict):
    kind: Literal["browser"] = "browser"
    name: str = Field(pattern=NAME)
    start: list[str] = Field(default_factory=list)
    """The server's argv (it listens on the port in ``$PORT``); empty: cadillac serves the
    built front end's files from ``serve`` itself."""
    serve: str = "dist"
    """The folder of the built front end (``dist``, ``frontend/dist``), when no ``start``."""
    path: str = Field(default="/", pattern=r"^/")
    steps: list[BrowserStep] = Field(default_factory=list)
    expect_text: list[str] = Field(min_length=1)
    timeout_s: float = Field(default=30, gt=0, le=300)

    @model_validator(mode="after")
    def _inside(self) -> BrowserStory:
        inside(self.serve)
        return self


class FilesStory(Strict):
    kind: Literal["files"] = "files"
    name: str = Field(pattern=NAME)
    path: str = Field(min_length=1)
    expect: TextExpect

    @model_validator(mode="after")
    def _inside(self) -> FilesStory:
        inside(self.path)
        return self


Story = Annotated[
    CliStory | HttpStory | LibraryStory | BrowserStory | FilesStory, Field(discriminator="kind")
]


class Stories(Strict):
    """stories.json: the stories the artifact must satisfy."""

    stories: list[Story] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Stories:
        names = [s.name for s in self.stories]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"story names must be unique: {', '.join(twice)}")
        return self


def weakened(fixed: Stories, now: Stories) -> list[str]:
    """What ``now`` drops or changes of the stories ``fixed`` at plan time, one line each;
    [] when it keeps every one as it was (it may add more)."""
    after = {s.name: s for s in now.stories}
    problems = []
    for story in fixed.stories:
        kept = after.get(story.name)
        if kept is None:
            problems.append(f"story {story.name!r} was dropped")
        elif kept != story:
            problems.append(f"story {story.name!r} was changed")
    return problems


FORMAT_MODELS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("cli story", CliStory),
    ("http story", HttpStory),
    ("HttpRequest (one of an http story's requests)", HttpRequest),
    ("library story", LibraryStory),
    ("browser story", BrowserStory),
    ("BrowserStep (one of a browser story's steps)", BrowserStep),
    ("files story", FilesStory),
    ("TextExpect (what stdout, stderr, a body or a file must hold)", TextExpect),
)


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is Literal:
        return " | ".join(json.dumps(a) for a in get_args(annotation))
    return (
        getattr(annotation, "__name__", None)
        if isinstance(annotation, type)
        else str(annotation).replace("typing.", "").replace("phases.stories.schema.", "")
    ) or str(annotation)


def story_format() -> str:
    """The story format, one line per field, made from the models above (the plan's prompt
    says it; one source for what the check reads)."""
    lines = [
        'stories.json is {"stories": [ ... ]}, each story an object with a "kind" and a '
        "unique name (lower case, digits, - and _):"
    ]
    for title, model in FORMAT_MODELS:
        lines.append(f"- {title}:")
        for name, field in model.model_fields.items():
            key = field.alias or name
            if key == "kind":
                continue
            text = f"  - `{key}` ({_type_name(field.annotation)}"
            if field.is_required():
                text += ", required"
            elif field.default not in (PydanticUndefined, None):
                text += f", default {json.dumps(field.default)}"
            text += ")"
            if field.description:
                text += ": " + " ".join(field.description.split()).replace("``", "`")
            lines.append(text)
    return "\n".join(lines)
