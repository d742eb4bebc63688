"""Markdown files with YAML frontmatter, as notes, skills and exported lessons are kept.

What this module decides, and why:

* The files are people's to edit and may come from a model or a stranger's export, so
  frontmatter is read by python-frontmatter over PyYAML's *safe* loader, with YAML
  aliases refused as well (an alias bomb expands a few lines into billions of items):
  a ``!!python/...`` tag or an alias is :class:`BadFrontmatter`, never run or expanded.
* Whether a file has frontmatter at all is :func:`fenced` (it begins with ``---``): a
  reader that takes plain markdown too (a note without frontmatter) asks it first.
* Frontmatter is written by PyYAML's safe dumper, keys in the order given, unicode kept
  as it is, so a file reads the way it was written and a round trip changes no byte.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Literal

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler
from pydantic import BaseModel, Field, field_validator


class BadFrontmatter(ValueError):
    """Frontmatter that is missing or is not safe YAML; the message is one line."""


class SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, without aliases."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases (*name) are not allowed")
        return super().compose_node(parent, index)


class _SafeYAML(YAMLHandler):
    """The safe loader and dumper, said here rather than left to python-frontmatter."""

    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=SafeLoader)  # noqa: S506 - a safe loader

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        text = yaml.dump(
            metadata,
            Dumper=yaml.SafeDumper,
            default_flow_style=False,
            allow_unicode=True,
            sort_keys=False,
            width=100,
        )
        return text.strip()


YAML = _SafeYAML()


class MarkdownRecord(BaseModel):
    """What notes and skills have alike besides their own fields: the scope whose folder
    holds the file, who made it, when, and the frontmatter keys the schema does not know
    (kept, and written back on every rewrite)."""

    scope: Literal["home", "global"] = "home"
    origin: str = ""
    """Who made it: "person", "build <run-id>", "model <run-id>", "import"..."""
    created: float = Field(default_factory=time.time, allow_inf_nan=False)
    updated: float = Field(default_factory=time.time, allow_inf_nan=False)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("created", "updated", mode="before")
    @classmethod
    def _when(cls, value: object) -> object:
        """A YAML date or time written by hand is taken as the time it names."""
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            value = datetime.datetime.combine(value, datetime.time())
        return value.timestamp() if isinstance(value, datetime.datetime) else value


def dumps(meta: dict[str, Any], body: str) -> str:
    """A file's text: ``meta`` as YAML frontmatter (keys in order), then ``body``."""
    return frontmatter.dumps(frontmatter.Post(body, **meta), handler=YAML) + "\n"


def fenced(text: str) -> bool:
    """Whether the text begins as a file with frontmatter does (a ``---`` line)."""
    return text.lstrip().startswith("---")


def parse(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a file's text; BadFrontmatter when it has none or it is bad."""
    try:
        meta, body = frontmatter.parse(text, handler=YAML)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        said = str(exc).strip()
        first = said.splitlines()[0] if said else type(exc).__name__
        raise BadFrontmatter(f"invalid YAML frontmatter: {first[:160]}") from None
    if not meta and fenced(text) and body != text:
        raise BadFrontmatter("the frontmatter is not a mapping of keys (name, description, ...)")
    if not meta:
        raise BadFrontmatter("no YAML frontmatter (the file starts with '---', fields, '---')")
    return dict(meta), body
