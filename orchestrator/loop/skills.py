"""Recurring work across runs, and the one extra call that drafts a skill for it.

:func:`find_recurrence` compares the build that just passed with the earlier passed
builds of this home. Two builds have the same *shape* when

* their tasks share stack tags: at least :data:`TAG_SHARE` of the union (the stack tags of
  the task and of the plan's ``stack``), and a framework when either has one (Flask and
  Django share only ``python``: not the same shape);
* their plans share a *layout*: the plan's files, each put in a category by
  :func:`file_category` (a known manifest by its name, a test by its pattern, a file in
  a role folder by folder and extension, an entry point as ``app:<ext>``, other code as
  ``module:<ext>`` or ``pkg:<ext>``), with a Jaccard overlap of at least
  :data:`LAYOUT_SHARE`;
* their plans share a *sequence of steps*: :func:`plan_steps` reads the plan as the
  steps its checks hold the build to, in order (``install <dependency>`` for each
  dependency, ``setup: <command shape>``, ``test: <command shape>``, ``run: <command
  shape>``, a command's shape being its program and the kind of its arguments), and the
  longest common subsequence of the two holds at least :data:`STEP_SHARE` of the longer.

``fixed`` is what the two builds both had to fix: a ``check`` event that failed in a
phase followed by a passing one in that phase, its summary reduced to a shape (quoted
commands, paths and numbers dropped). It is evidence for the draft, not a condition.

Other runs are untrusted files: folders and files are opened through descriptors with
``O_NOFOLLOW`` (a symbolic link is skipped, never followed), a file past its size cap or
that is not valid JSON is skipped, and only the newest :data:`RUNS_MAX` runs are read.
No recurrence is found when a skill that is not set aside already matches the task.

:func:`draft_skill` sends the recurrence, the task and the plan to the model once, without
tools, and holds the answer to :func:`memory.skills.validate_draft` after sanitising what
a model gets wrong harmlessly (prose around the frontmatter, a name that is not a slug,
too many triggers or tags, a body a little over the cap); it never raises on an answer.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import frontmatter
from pydantic import ValidationError

from memory.skills import (
    BODY_MAX,
    DESCRIPTION_MAX,
    TAGS_MAX,
    TRIGGER_MAX,
    TRIGGERS_MAX,
    BadSkill,
    Skill,
    SkillBook,
    parse_metadata,
    slug,
    validate_draft,
)
from memory.tags import LANGUAGE_TAGS, STACK_TAGS, infer_tags_from_text, stack_tags
from orchestrator.llm.client import LLMClient, ModelError
from orchestrator.loop.runs import Event, RunSummary, TaskRecord
from phases.base import Plan, read_prompt

RUNS_MAX = 200
TAG_SHARE = 0.5
LAYOUT_SHARE = 0.6
STEP_SHARE = 0.6
JSON_MAX = 256 * 1024
"""The largest task.json, summary.json or plan.json read from another run."""
EVENTS_MAX = 4 * 1024 * 1024
"""How much of a run's events.jsonl is read for its checks."""
ANSWER_MAX = 32_000
"""A drafting answer past this is refused, not cut."""
PLAN_CHARS = 4000
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC

MANIFESTS = frozenset(
    {
        "requirements.txt",
        "requirements-dev.txt",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "package.json",
        "tsconfig.json",
        "cargo.toml",
        "go.mod",
        "composer.json",
        "makefile",
        "dockerfile",
        "manifest.json",
        ".gitignore",
        "conftest.py",
    }
)
ROLE_FOLDERS = frozenset(
    {
        "templates",
        "static",
        "public",
        "assets",
        "src",
        "lib",
        "docs",
        "scripts",
        "migrations",
        "config",
        "data",
        "cmd",
        "pkg",
        "internal",
        "components",
        "pages",
    }
)
ENTRY_POINTS = frozenset({"app", "main", "cli", "server", "index", "manage", "run", "__main__"})
TEST_NAME = re.compile(r"^(test_.*|.*_test|.*\.test|.*\.spec|tests?)$")

DRAFT_PROMPT = read_prompt("skill_draft")
"""The drafting call's system prompt (``phases/skill_draft.md``)."""


# ---------------------------------------------------------------- reading other runs
def _read(dir_fd: int, name: str, limit: int) -> bytes | None:
    """A regular file's bytes (None: missing, a link, special, or past ``limit``)."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return None if len(data) > limit else data
    finally:
        os.close(fd)


def _open_dir(name: str | Path, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def _record(dir_fd: int, name: str, model):
    data = _read(dir_fd, name, JSON_MAX)
    if data is None:
        return None
    try:
        return model.model_validate_json(data)
    except (ValidationError, ValueError):
        return None


def _plan_in(workspace_fd: int) -> Plan | None:
    return _record(workspace_fd, "plan.json", Plan)


def _fixed_in(run_fd: int) -> set[str]:
    """The shapes of the checks that failed and then passed in the same phase."""
    try:
        fd = os.open("events.jsonl", READ_FLAGS, dir_fd=run_fd)
    except OSError:
        return set()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return set()
        data = os.read(fd, EVENTS_MAX)
    finally:
        os.close(fd)
    failing: dict[str, list[str]] = {}
    fixed: set[str] = set()
    for line in data.decode("utf-8", "replace").splitlines():
        if '"check"' not in line:
            continue
        try:
            event = Event.model_validate_json(line)
        except ValueError:
            continue
        if event.kind != "check" or not event.phase:
            continue
        summary = str(event.data.get("summary", ""))
        if event.data.get("passed"):
            fixed.update(failing.pop(event.phase, []))
        else:
            failing.setdefault(event.phase, []).append(f"{event.phase}: {check_shape(summary)}")
    return fixed


@dataclass
class _Shape:
    run_id: str
    task: str
    tags: set[str]
    layout: set[str]
    steps: list[str]


def _shape(task: str, plan: Plan, run_id: str) -> _Shape:
    tags = stack_tags(infer_tags_from_text(task)) | stack_tags({t.lower() for t in plan.stack})
    return _Shape(run_id, task, tags, {file_category(f) for f in plan.files}, plan_steps(plan))


# ---------------------------------------------------------------- shapes
def file_category(path: str) -> str:
    """A plan file's category (see the module docstring): deterministic, from its path."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    name = parts[-1].lower() if parts else ""
    stem, _, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
    ext = ext or "none"
    top = parts[0].lower() if len(parts) > 1 else ""
    if name in MANIFESTS:
        return name
    if TEST_NAME.match(stem) or top in ("test", "tests", "__tests__", "spec"):
        if stem.startswith("test_"):
            return f"tests:test_*.{ext}"
        return "tests:__init__.py" if name == "__init__.py" else f"tests:*.{ext}"
    if not top:
        if ext in ("md", "rst", "txt"):
            return f"docs:{ext}"
        return f"app:{ext}" if stem in ENTRY_POINTS else f"module:{ext}"
    return f"{top}:{ext}" if top in ROLE_FOLDERS else f"pkg:{ext}"


def command_shape(command: str | None) -> str:
    """A command's program and the kinds of its arguments: ``python -m pytest``,
    ``python <py>``, ``flask run``."""
    if not command or not command.strip():
        return ""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
    if not words:
        return ""
    program = PurePosixPath(words[0]).name
    program = re.sub(r"^(python)[0-9.]*$", r"\1", program)
    out = [program]
    rest = iter(words[1:])
    for word in rest:
        if word in ("&&", "||", ";", "|"):
            break
        if word == "-m":
            out += ["-m", next(rest, "")]
        elif word.startswith("-"):
            continue
        elif "." in PurePosixPath(word).name:
            out.append(f"<{PurePosixPath(word).suffix.lstrip('.') or 'file'}>")
        elif len(out) == 1 and word.isalpha():
            out.append(word)  # a subcommand: ``flask run``, ``npm test``
        if len(out) >= 4:
            break
    return " ".join(out)


def _requirement(text: str) -> str:
    name = re.split(r"[\s\[<>=!~;@]", text.strip(), maxsplit=1)[0]
    return name.lower().replace("_", "-")


def plan_steps(plan: Plan) -> list[str]:
    """The steps the plan's checks hold a build to, in order (see the module docstring)."""
    steps = [f"install {name}" for name in sorted({_requirement(d) for d in plan.dependencies})]
    if plan.install_command:
        steps.append(f"setup: {command_shape(plan.install_command)}")
    steps.append(f"test: {command_shape(plan.test_command)}")
    steps.append(f"run: {command_shape(plan.run_command)}")
    return [s for s in steps if s and not s.endswith(" ")]


def check_shape(summary: str) -> str:
    """A check's one-line result without what differs between builds."""
    text = re.sub(r"`[^`]*`", "`…`", summary)
    text = re.sub(r"(?<![\w.])[\w./-]+\.[a-z]{1,5}\b", "<file>", text)
    text = re.sub(r"\d+", "N", text)
    return " ".join(text.split())[:160]


def _common(a: list[str], b: list[str]) -> list[str]:
    """The longest common subsequence of two short lists."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
            )
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            out.append(a[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def same_stack(a: set[str], b: set[str]) -> bool:
    if not a or not b:
        return False
    frameworks = (a | b) - LANGUAGE_TAGS
    if frameworks and not (a & b) - LANGUAGE_TAGS:
        return False
    return len(a & b) / len(a | b) >= TAG_SHARE


def _alike(now: _Shape, then: _Shape) -> tuple[list[str], list[str]] | None:
    """(shared layout, shared steps) when the two builds have one shape, else None."""
    if not same_stack(now.tags, then.tags):
        return None
    layout = now.layout & then.layout
    if len(layout) / len(now.layout | then.layout) < LAYOUT_SHARE:
        return None
    steps = _common(now.steps, then.steps)
    if len(steps) / max(len(now.steps), len(then.steps)) < STEP_SHARE:
        return None
    return sorted(layout), steps


# ---------------------------------------------------------------- the detector
@dataclass
class Recurrence:
    """Earlier passed builds of the same shape as this one, and what they share with it."""

    runs: list[str]
    """Ids of the earlier passed runs of the same shape, newest first."""
    tags: list[str]
    layout: list[str]
    steps: list[str]
    """The plan steps all of them share, in order (see the module docstring)."""
    fixed: list[str]
    """Checks that failed and were then fixed in this build and an earlier one."""
    run_id: str = ""
    """This build's run."""
    tasks: list[str] = field(default_factory=list)
    """The earlier runs' tasks, in the order of ``runs``."""

    def describe(self) -> str:
        lines = [f"This build: run {self.run_id}" if self.run_id else "This build"]
        for run, task in zip(self.runs, self.tasks, strict=False):
            lines.append(f"Earlier passed build {run}: {task[:200]}")
        lines.append(f"Stack: {', '.join(self.tags) or 'none'}")
        lines.append(f"Layout (file categories): {', '.join(self.layout)}")
        lines.append("Steps: " + "; ".join(self.steps))
        if self.fixed:
            lines.append("Checks that failed and were fixed in both: " + "; ".join(self.fixed))
        return "\n".join(lines)


def find_recurrence(
    runs_dir: Path,
    run_id: str,
    tags: Sequence[str],
    workspace: Path,
    skills: SkillBook | None = None,
) -> Recurrence | None:
    """The recurrence this build completes, or None (see the module docstring)."""
    ws_fd = _open_dir(workspace)
    if ws_fd is None:
        return None
    try:
        plan = _plan_in(ws_fd)
    finally:
        os.close(ws_fd)
    runs_fd = _open_dir(runs_dir)
    if plan is None or runs_fd is None:
        if runs_fd is not None:
            os.close(runs_fd)
        return None
    try:
        return _find(runs_fd, run_id, set(tags), plan, skills)
    finally:
        os.close(runs_fd)


def _find(runs_fd: int, run_id: str, tags: set[str], plan: Plan, skills) -> Recurrence | None:
    own_fd = _open_dir(run_id, runs_fd) if run_id not in ("", ".", "..") else None
    try:
        record = _record(own_fd, "task.json", TaskRecord) if own_fd is not None else None
        fixed_now = _fixed_in(own_fd) if own_fd is not None else set()
    finally:
        if own_fd is not None:
            os.close(own_fd)
    task = record.task if record else ""
    now = _shape(task, plan, run_id)
    now.tags |= stack_tags(tags & STACK_TAGS)
    if skills is not None and skills.match(task, sorted(now.tags), limit=1):
        return None  # a skill covers this work already
    names = sorted(
        (e.name for e in os.scandir(runs_fd) if not e.name.startswith(".") and e.name != run_id),
        reverse=True,
    )[:RUNS_MAX]
    found: list[tuple[_Shape, list[str], list[str], set[str]]] = []
    for name in names:
        then = _earlier(runs_fd, name, now)
        if then is not None:
            found.append(then)
    if not found:
        return None
    layout = set(now.layout)
    steps = list(now.steps)
    fixed = set()
    for _, shared_layout, shared_steps, then_fixed in found:
        layout &= set(shared_layout)
        steps = _common(steps, shared_steps)
        fixed |= fixed_now & then_fixed
    return Recurrence(
        runs=[f[0].run_id for f in found],
        tags=sorted(set.intersection(now.tags, *(f[0].tags for f in found))),
        layout=sorted(layout),
        steps=steps,
        fixed=sorted(fixed),
        run_id=run_id,
        tasks=[f[0].task for f in found],
    )


def _earlier(runs_fd: int, name: str, now: _Shape):
    """(its shape, shared layout, shared steps, its fixed checks) for an earlier passed build
    of the same shape, else None."""
    fd = _open_dir(name, runs_fd)
    if fd is None:
        return None  # a symbolic link, a file, or gone
    try:
        summary = _record(fd, "summary.json", RunSummary)
        if (
            summary is None
            or summary.status != "passed"
            or summary.kind not in ("build", "enhance")
        ):
            return None
        record = _record(fd, "task.json", TaskRecord)
        ws = _open_dir("workspace", fd)
        if ws is None:
            return None
        try:
            plan = _plan_in(ws)
        finally:
            os.close(ws)
        if plan is None:
            return None
        then = _shape(record.task if record else summary.task, plan, name)
        shared = _alike(now, then)
        if shared is None:
            return None
        return then, shared[0], shared[1], _fixed_in(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- drafting
def _unwrap(answer: str) -> str:
    """The SKILL.md in a model's answer: from its first ``---`` line, without prose before
    it or the code fence around it."""
    lines = answer.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "---"), None)
    if start is None:
        return answer
    fenced = any(line.lstrip().startswith("```") for line in lines[:start])
    lines = lines[start:]
    if fenced:
        end = max((i for i, line in enumerate(lines) if line.strip().startswith("```")), default=0)
        lines = lines[:end] if end else lines
    return "\n".join(lines) + "\n"


def _one_line(value: object, limit: int) -> str:
    return " ".join(str(value).split())[:limit] if isinstance(value, str | int | float) else ""


def _cut(body: str) -> str:
    """A body within BODY_MAX, cut at a paragraph when it is over."""
    body = body.strip()
    if len(body) <= BODY_MAX:
        return body
    mark = "\n\n(cut to fit)"
    head = body[: BODY_MAX - len(mark)]
    at = head.rfind("\n\n")
    return (head[:at] if at > BODY_MAX // 2 else head).rstrip() + mark


def _sanitised(text: str, task: str, recurrence: Recurrence) -> str:
    """The draft with what a model gets wrong harmlessly put right (BadSkill when its
    frontmatter cannot be read at all)."""
    meta, body = parse_metadata(text)
    triggers = meta.get("triggers")
    triggers = [triggers] if isinstance(triggers, str) else triggers
    tags = meta.get("tags")
    tags = tags.split(",") if isinstance(tags, str) else tags
    name = slug(_one_line(meta.get("name", ""), 200)) or slug(_one_line(task, 60))
    clean = {
        "name": name[:64].rstrip("-._") or "skill",
        "description": _one_line(meta.get("description", ""), DESCRIPTION_MAX),
        "triggers": [
            _one_line(t, TRIGGER_MAX) for t in (triggers or []) if _one_line(t, TRIGGER_MAX)
        ][:TRIGGERS_MAX],
        "tags": [
            t
            for t in dict.fromkeys(_one_line(x, 40).lower() for x in (tags or []))
            if t in STACK_TAGS
        ][:TAGS_MAX]
        or recurrence.tags[:TAGS_MAX],
    }
    post = frontmatter.Post(_cut(body) + "\n", **clean)
    return frontmatter.dumps(post, sort_keys=False) + "\n"


def draft_skill(
    llm: LLMClient, task: str, recurrence: Recurrence, plan_text: str
) -> tuple[Skill | None, str]:
    """(the drafted skill, "") or (None, why): one model call, never raising on its answer."""
    user = (
        f"Task of this build: {task[:1000]}\n\n{recurrence.describe()}\n\n"
        f"This build's plan.json:\n{plan_text[:PLAN_CHARS]}"
    )
    messages = [{"role": "system", "content": DRAFT_PROMPT}, {"role": "user", "content": user}]
    try:
        answer = llm.complete(messages, tools=None).content or ""
    except ModelError as exc:
        return None, f"model error: {exc}"
    if not answer.strip():
        return None, "the model's answer was empty"
    if len(answer) > ANSWER_MAX:
        return None, f"the draft is {len(answer):,} characters (at most {ANSWER_MAX:,}): refused"
    try:
        text = _sanitised(_unwrap(answer), task, recurrence)
        origin = f"build {recurrence.run_id}" if recurrence.run_id else "build"
        return validate_draft(text, origin=origin), ""
    except BadSkill as exc:
        return None, f"the draft was refused: {exc}"
    except (ValueError, TypeError, OSError) as exc:  # never raise on an answer
        return None, f"the draft was refused: {type(exc).__name__}: {exc}"[:300]
