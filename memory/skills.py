"""Skills: workflows that recur, kept as ``<dir>/<name>/SKILL.md`` in two scopes.

A skill is markdown with YAML frontmatter (``name``, ``description``, ``triggers``,
``tags``, and the counters a build updates) and a body that says when to use it, its
steps and an example. :class:`SkillBook` reads two folders: the home scope
(``<home>/skills``) and the global scope (``~/.config/cadillac/skills``); a home skill
shadows a global one of the same name.

What this module decides, and why:

* The folders are people's to edit. Every read goes back to the files, so a hand edit is
  picked up by the next read; unknown frontmatter keys are kept (``extra``) and written
  back; a file that cannot be a skill is skipped, with the reason in ``problems``.
* The files are not trusted. Frontmatter is parsed by python-frontmatter over PyYAML's
  safe loader, without aliases (no ``!!python/...`` tag, no alias bomb); a skill folder or
  ``SKILL.md`` that is a symbolic link, a FIFO or a device, or a file past
  :data:`FILE_MAX`, is never followed or read: each open goes through descriptors with
  ``O_NOFOLLOW | O_NONBLOCK`` and is checked with ``fstat``.
* A write is atomic (a temporary file renamed over ``SKILL.md``) under a ``filelock`` on
  the scope's ``.skills.lock``.
* A draft (from the model, or the memory tool) is held to more than a file on disk:
  :func:`validate_draft` wants a name, a description, a trigger or a tag, a body with
  "When to use" and "Steps" sections within :data:`BODY_MAX`, and no text that tries to
  steer the model reading it (:data:`INJECTION`). Its counters start afresh.
* Outcomes move confidence as they move a lesson's (:mod:`memory.store`): +0.1 when the
  build that used it passed, -0.1 when it failed. A skill that failed
  :data:`SET_ASIDE_FAILURES` times and fell below :data:`SET_ASIDE_CONFIDENCE` is set
  aside: builds no longer see it; it is not deleted (``set_aside: false`` restores it).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import time
from collections.abc import Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import Field, ValidationError, field_validator

from memory import mdfile
from memory.guard import injection
from memory.tags import LANGUAGE_TAGS, normalize_tags, stack_tags
from memory.text import clean
from memory.tokens import term_set
from orchestrator.sandbox.files import replace_file

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
FILE = "SKILL.md"
LOCK = ".skills.lock"
FILE_MAX = 64 * 1024
"""A SKILL.md past this many bytes is skipped, not read."""
BODY_MAX = 6000
DESCRIPTION_MAX = 200
TRIGGERS_MAX = 10
TRIGGER_MAX = 100
TAGS_MAX = 10
SKILLS_MAX = 500
"""Skill folders read per scope; the rest are reported in ``problems``."""
BOOST = 0.1
PENALTY = 0.1
SET_ASIDE_FAILURES = 3
SET_ASIDE_CONFIDENCE = 0.2
TAG_SHARE = 0.5
"""The share of a skill's stack tags a task must have for the tags alone to match."""
SECTIONS = ("when to use", "steps")
_KEYS = (
    "name",
    "description",
    "triggers",
    "tags",
    "origin",
    "uses",
    "passed",
    "failed",
    "confidence",
    "set_aside",
    "created",
    "updated",
)
_IGNORED = frozenset({"scope"})
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC


class SkillNotFound(KeyError):
    """No skill of that name (in that scope)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such skill"


class BadSkill(ValueError):
    """A skill text that cannot be a skill; the message is one line."""


class Skill(mdfile.MarkdownRecord):
    """One skill: what its frontmatter holds, its body, and where it lives."""

    name: str
    """A safe slug (``[a-z0-9][a-z0-9._-]{0,63}``); it names the skill's folder."""
    description: str = Field(min_length=1, max_length=DESCRIPTION_MAX)
    triggers: list[str] = Field(default_factory=list, max_length=TRIGGERS_MAX)
    """Phrases; one whose words all occur in a task matches it."""
    tags: list[str] = Field(default_factory=list, max_length=TAGS_MAX)
    """Stack tags (memory.tags' vocabulary)."""
    body: str = Field(min_length=1, max_length=BODY_MAX)
    uses: int = Field(default=0, ge=0, le=10**9)
    passed: int = Field(default=0, ge=0, le=10**9)
    failed: int = Field(default=0, ge=0, le=10**9)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    set_aside: bool = False
    """It kept failing: builds no longer see it; it is not deleted."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError(f"{value[:70]!r} is not a skill name ([a-z0-9][a-z0-9._-], 64 max)")
        return value

    @field_validator("description", "origin")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip() or "\r" in value:
            raise ValueError("must be one line")
        return value.strip()

    @field_validator("triggers", mode="before")
    @classmethod
    def _triggers(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            for item in value:
                if not isinstance(item, str) or not item.strip() or len(item) > TRIGGER_MAX:
                    raise ValueError(f"a trigger is a phrase of 1 to {TRIGGER_MAX} characters")
            return [" ".join(item.split()) for item in value]
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list) and all(isinstance(t, str) for t in value):
            return normalize_tags(value)
        return value

    def metadata(self) -> dict[str, Any]:
        data = self.model_dump(include=set(_KEYS))
        return {**{k: data[k] for k in _KEYS}, **self.extra}

    def text(self) -> str:
        """SKILL.md's text: the frontmatter, then the body."""
        return mdfile.dumps(self.metadata(), self.body.strip() + "\n")


# ---------------------------------------------------------------- parsing
def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(x) for x in error["loc"])
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"


def parse_metadata(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a SKILL.md text; BadSkill when it has no safe frontmatter."""
    if not text.lstrip().startswith("---"):
        raise BadSkill("no frontmatter: a SKILL.md starts with a '---' block of YAML")
    try:
        return mdfile.parse(text)
    except mdfile.BadFrontmatter as exc:
        raise BadSkill(str(exc)) from None


def parse(text: str, scope: str = "home") -> Skill:
    """The skill a SKILL.md text holds (BadSkill with the reason when it holds none)."""
    meta, body = parse_metadata(text)
    known = {k: v for k, v in meta.items() if k in _KEYS}
    extra = {str(k): v for k, v in meta.items() if k not in _KEYS and k not in _IGNORED}
    for key in ("name", "description"):
        if not isinstance(known.get(key), str) or not known[key].strip():
            raise BadSkill(f"the frontmatter needs a {key}")
    try:
        return Skill(**known, body=body, scope=scope, extra=extra)
    except ValidationError as exc:
        raise BadSkill(f"not a skill: {_first_error(exc)}") from None


def validate_draft(text: str, scope: str = "home", origin: str = "") -> Skill:
    """A new skill from a draft's text, held to the rules of the module docstring; its
    counters start afresh and unknown keys are dropped (BadSkill says what is wrong)."""
    if len(text) > FILE_MAX:
        raise BadSkill(f"the draft is {len(text):,} characters; at most {FILE_MAX:,}")
    skill = parse(text, scope)
    if not skill.triggers and not skill.tags:
        raise BadSkill("the draft needs at least one trigger or tag")
    headings = {m.lower() for m in re.findall(r"(?m)^#{1,4}\s*(.+?)\s*#*\s*$", skill.body)}
    for section in SECTIONS:
        if not any(h.startswith(section) for h in headings):
            raise BadSkill(f"the body needs a '## {section.capitalize()}' section")
    why = injection("\n".join([skill.description, *skill.triggers, skill.body]))
    if why:
        raise BadSkill(f"the draft {why}: refused")
    fresh = skill.model_dump(include={"name", "description", "triggers", "tags", "body"})
    return Skill(**fresh, scope=scope, origin=origin)


def slug(text: str) -> str:
    """A skill name made of ``text`` ("" when nothing of it is usable)."""
    out = re.sub(r"[^a-z0-9._-]+", "-", text.lower())
    out = re.sub(r"[-._]{2,}", "-", out).lstrip("-._")[:64]
    return out.rstrip("-._")


# ---------------------------------------------------------------- files
def _read_in(dir_fd: int, name: str) -> bytes:
    """A regular file's bytes in the folder ``dir_fd``, never following a link (OSError)."""
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > FILE_MAX:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes (at most {FILE_MAX:,})")
        data = os.read(fd, FILE_MAX + 1)
        if len(data) > FILE_MAX:
            raise OSError(errno.EFBIG, f"more than {FILE_MAX:,} bytes")
        return data
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link or not a folder: not followed"
    if exc.errno == errno.ENXIO:
        return "a FIFO or socket: not read"
    return exc.strerror or str(exc)


@contextmanager
def _folder(path: Path, create: bool = False):
    """A descriptor on the folder ``path`` (never through a link at its last step)."""
    if create:
        path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


class SkillBook:
    """The skills of two scopes: ``<dir>/<name>/SKILL.md``; a home skill shadows a global
    one. ``problems`` says what the last read skipped, and why."""

    def __init__(self, home_skills: Path, global_skills: Path | None):
        self.dirs: dict[str, Path] = {"home": Path(home_skills)}
        if global_skills is not None and Path(global_skills) != Path(home_skills):
            self.dirs["global"] = Path(global_skills)
        self.problems: list[str] = []

    # ------------------------------------------------------------ reading
    def _scope(self, scope: str) -> list[Skill]:
        root = self.dirs[scope]
        try:
            with _folder(root) as root_fd:
                names = sorted(e.name for e in os.scandir(root_fd) if not e.name.startswith("."))
                out = []
                for name in names[:SKILLS_MAX]:
                    skill = self._read(root, root_fd, name, scope)
                    if skill is not None:
                        out.append(skill)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.problems.append(f"{root}: {_why(exc)}")
            return []
        if len(names) > SKILLS_MAX:
            self.problems.append(f"{root}: only the first {SKILLS_MAX} skills are read")
        return out

    def _read(self, root: Path, root_fd: int, name: str, scope: str) -> Skill | None:
        where = root / name / FILE
        try:
            mode = os.stat(name, dir_fd=root_fd, follow_symlinks=False).st_mode
            if stat.S_ISREG(mode):
                return None  # a file beside the skills (a README): not a skill
            if not NAME.fullmatch(name):
                raise BadSkill(f"{name!r} is not a skill name ([a-z0-9][a-z0-9._-])")
            with _folder_at(root_fd, name) as fd:
                text = _read_in(fd, FILE).decode("utf-8")
            skill = parse(text, scope)
        except FileNotFoundError:
            self.problems.append(f"{where}: missing")
            return None
        except OSError as exc:
            self.problems.append(f"{where}: {_why(exc)}")
            return None
        except UnicodeDecodeError:
            self.problems.append(f"{where}: not UTF-8 text")
            return None
        except BadSkill as exc:
            self.problems.append(f"{where}: {exc}")
            return None
        if skill.name != name:
            self.problems.append(f"{where}: names {skill.name!r}, not its folder {name!r}")
            return None
        return skill

    def all(self, include_set_aside: bool = False, scope: str | None = None) -> list[Skill]:
        """The skills by name, a home one shadowing a global one (``scope``: that scope's
        alone); set-aside ones only with ``include_set_aside``."""
        self.problems = []
        found: dict[str, Skill] = {}
        for where in [scope] if scope else list(self.dirs):
            if where not in self.dirs:
                continue
            for skill in self._scope(where):
                found.setdefault(skill.name, skill)
        skills = sorted(found.values(), key=lambda s: s.name)
        return [s for s in skills if include_set_aside or not s.set_aside]

    def get(self, name: str, scope: str | None = None) -> Skill | None:
        """The skill of that name (set aside or not), the home one first."""
        return next((s for s in self.all(True, scope) if s.name == name), None)

    def path(self, skill: Skill) -> Path:
        return self.dirs[skill.scope] / skill.name / FILE

    # ------------------------------------------------------------ writing
    def _lock(self, scope: str) -> FileLock:
        root = self.dirs[scope]
        if root.is_symlink():
            raise BadSkill(f"{root} is a symbolic link: skills are not written through it")
        root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(root / LOCK))

    def _write(self, skill: Skill) -> None:
        """SKILL.md replaced atomically, through descriptors (never through a link)."""
        root = self.dirs[skill.scope]
        with _folder(root, create=True) as root_fd:
            with suppress(FileExistsError):
                os.mkdir(skill.name, dir_fd=root_fd)
            try:
                fd = os.open(skill.name, DIR_FLAGS, dir_fd=root_fd)
            except OSError as exc:
                raise BadSkill(f"{root / skill.name}: {_why(exc)}") from None
            os.close(fd)  # a real folder, not a link: cadillac's one atomic write goes there
            replace_file(root / skill.name / FILE, skill.text())

    def save(self, skill: Skill, replace: bool = True) -> Skill:
        """Write ``skill`` into its scope (``replace=False``: BadSkill when the name is
        taken in that scope); returns it as written."""
        if skill.scope not in self.dirs:
            raise BadSkill(f"there is no {skill.scope} scope for skills here")
        with self._lock(skill.scope):
            if not replace and self.get(skill.name, skill.scope) is not None:
                raise BadSkill(f"a skill named {skill.name!r} exists already")
            texts = {
                "body": clean(skill.body),
                "description": clean(skill.description),
                "triggers": [clean(t) for t in skill.triggers],
            }
            skill = skill.model_copy(update={**texts, "updated": time.time()})
            self._write(skill)
        return skill

    def forget(self, name: str, scope: str | None = None) -> Skill:
        """Delete a skill's folder (``scope`` None: the one builds see); SkillNotFound."""
        skill = self.get(name, scope)
        if skill is None:
            where = f" in the {scope} scope" if scope else ""
            raise SkillNotFound(f"no skill named {name!r}{where}")
        with self._lock(skill.scope):
            folder = self.dirs[skill.scope] / skill.name
            if folder.is_symlink() or not folder.is_dir():
                raise BadSkill(f"{folder} is not a skill folder: not removed")
            shutil.rmtree(folder)
        return skill

    def record_outcome(self, names: Sequence[str], passed: bool) -> list[str]:
        """Count a use of each named skill by a build that passed (or failed); returns the
        names changed (see the module docstring)."""
        changed = []
        for name in dict.fromkeys(names):
            first = self.get(name)
            if first is None:
                continue
            with self._lock(first.scope):
                skill = self.get(name, first.scope)  # as it is now, under the lock
                if skill is None:
                    continue
                skill.uses += 1
                if passed:
                    skill.passed += 1
                    skill.confidence = round(min(1.0, skill.confidence + BOOST), 6)
                else:
                    skill.failed += 1
                    skill.confidence = round(max(0.0, skill.confidence - PENALTY), 6)
                if skill.failed >= SET_ASIDE_FAILURES and skill.confidence < SET_ASIDE_CONFIDENCE:
                    skill.set_aside = True
                skill.updated = time.time()
                self._write(skill)
            changed.append(name)
        return changed

    # ------------------------------------------------------------ matching
    def match(self, task: str, tags: Sequence[str], limit: int = 3) -> list[Skill]:
        """Skills for a task, best first: a trigger whose words (stemmed) all occur in the
        task, or stack tags the task shares (at least :data:`TAG_SHARE` of the skill's, and
        one of its frameworks when it has any). Set-aside skills are never matched."""
        words = term_set(task)
        task_stack = stack_tags(set(normalize_tags(list(tags))))
        scored = []
        for skill in self.all():
            score = _tag_score(stack_tags(set(skill.tags)), task_stack)
            hits = [t for t in map(term_set, skill.triggers) if t and t <= words]
            if hits:
                score += 1.0 + 0.1 * max(len(t) for t in hits)
            if score > 0:
                scored.append((score, skill.confidence, skill))
        scored.sort(key=lambda x: (-x[0], -x[1], x[2].name))
        return [s for _, _, s in scored[:limit]]


def _tag_score(skill: set[str], task: set[str]) -> float:
    if not skill:
        return 0.0
    shared = skill & task
    frameworks = skill - LANGUAGE_TAGS
    if frameworks and not shared & frameworks:
        return 0.0
    share = len(shared) / len(skill)
    return share if share >= TAG_SHARE else 0.0


@contextmanager
def _folder_at(dir_fd: int, name: str):
    """A descriptor on the folder ``name`` in ``dir_fd``, never through a link."""
    fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)
