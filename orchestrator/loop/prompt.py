"""What a phase's conversation opens with: the system prompt and the state of the build.

Each phase is a fresh conversation, so everything the model needs is in its opening.
The system message begins with what is the same for the whole build, the *stable
prefix*: the builder's instructions (``phases/system.md``) and the memory part (notes,
then the lessons recalled for the task with their ids, so the model can cite them; see
:mod:`orchestrator.loop.memory_view`). The phase's own prompt (``phases/<phase>.md``)
and what differs between phases (skills, an existing project's overview) follow it, so
the prefix is byte-identical across the build's phases and rounds and a provider's
prompt cache hits. The first user message holds the task, the plan once it exists,
what the plan's stacks mean for the checks (:func:`phases.stacks.guide`), what earlier
phases did and the files in the workspace.

The files are listed whole while the list fits in :data:`OPENING_FILES_CHARS` (a build's
own trees do). A large tree (Django: 6,800 files, 317,000 characters of names, more than
a whole conversation's ``context_chars``) is given as what the model needs to begin, in
that budget: the index's digest (unless the system message already holds it, as an
existing project's does), the plan's files, and the files whose paths and symbols match
the task and the plan (the index's search), then how many files were left out and that
the ``knowledge`` tool and ``list_files`` have the rest. Every name a model could have
made is escaped (:func:`orchestrator.sandbox.shown.name`): one name is one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from orchestrator.index import CodeIndex
from orchestrator.loop.runs import PhaseSummary
from orchestrator.sandbox import shown
from orchestrator.sandbox.workspace import Workspace
from phases import stacks
from phases.base import Phase, Plan, PlanError, load_plan, read_prompt

OPENING_FILES_CHARS = 24_000
"""The characters an opening's file part may take (about 6,000 tokens): a tree whose list
fits is listed whole; a larger one is summarised within it (see the module docstring)."""
SEARCHED = 40
"""How many of the index's best hits for the task (and for the plan) are looked at."""


def stable_prefix(memory_text: str) -> str:
    """The start of every phase's system message in a build: cadillac's instructions and
    the memory part, ending with the blank line that separates it from the phase's part."""
    head = read_prompt("system")
    return head + "\n\n" + (memory_text + "\n\n" if memory_text else "")


def phase_part(phase: Phase, *extras: str) -> str:
    """What follows the stable prefix: the phase's prompt and its extras (skills, what a
    change to an existing project adds: ``phases/enhance.md``, the test command)."""
    return "\n\n".join([phase.prompt(), *(e for e in extras if e)])


def opening(
    phase: Phase,
    task: str,
    workspace: Workspace,
    earlier: Sequence[PhaseSummary],
    prefix: str,
    part: str,
    *,
    index: Callable[[], CodeIndex] | None = None,
    existing: bool = False,
    files_chars: int = OPENING_FILES_CHARS,
) -> list[dict]:
    """The system and first user message of ``phase``: ``prefix`` (:func:`stable_prefix`)
    then ``part`` (:func:`phase_part`). ``index``: the workspace's code index, asked for
    only when the tree is too large to list in ``files_chars``; ``existing``: the build
    changes a project that exists (its stacks are read from its manifests too)."""
    system = prefix + part
    parts = [f"Task: {task}"]
    plan = None
    try:
        plan = load_plan(workspace.root)
        parts.append(f"Plan (plan.json):\n{plan.model_dump_json(indent=2)}")
        parts.append(stacks.guide(workspace.root, plan, existing))
    except PlanError:
        pass
    done = [f"- {p.phase}: {p.outcome}; {p.finish_summary or p.check}" for p in earlier]
    if done:
        parts.append("Earlier phases:\n" + "\n".join(done))
    parts.append(files_part(workspace.files(), task, plan, index, system, files_chars))
    parts.append(f"You are in the {phase.name} phase. Begin.")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def files_part(
    files: list[str],
    task: str,
    plan: Plan | None,
    index: Callable[[], CodeIndex] | None,
    system: str,
    budget: int,
) -> str:
    """The opening's part about the workspace's files, in at most about ``budget``
    characters: all of them when they fit, else what the task touches (module docstring)."""
    names = [shown.name(f) for f in files]
    listing = "\n".join(names)
    if not files:
        return "Workspace files:\n(empty)"
    if len(listing) <= budget:
        return "Workspace files:\n" + listing
    head = (
        f"The workspace holds {len(files):,} files: too many to list here (the opening "
        f"gives them {budget:,} characters), so here is where to start."
    )
    found = index() if index is not None else None
    digest = found.digest if found is not None else ""
    sections = [head]
    if digest and digest not in system:
        sections.append("An overview of the project (knowledge digest):\n" + digest)
    present = set(files)
    named = _touched(present, task, plan, found)
    room = budget - sum(len(s) + 2 for s in sections) - 400  # the closing line's room
    shown_lines: list[str] = []
    listed = 0
    for path, line in named:
        if room - len(line) - 1 < 0:
            break
        shown_lines.append(line)
        listed += path in present
        room -= len(line) + 1
    if shown_lines:
        sections.append(
            "Files the task and the plan name, and those whose names and symbols match them "
            "(the index's search):\n" + "\n".join(shown_lines)
        )
    left = len(files) - listed
    sections.append(
        f"{left:,} of the {len(files):,} files are not listed: the knowledge tool has them "
        "all (search, symbol, related, tests, digest), and list_files lists a folder."
    )
    return "\n\n".join(sections)


def _touched(
    files: set[str], task: str, plan: Plan | None, index: CodeIndex | None
) -> list[tuple[str, str]]:
    """(path, its line) per file the task touches, best first: the plan's files (those
    that exist, then those it will add), then the index's hits for the task and for the
    plan's summary (a symbol hit names the symbols it matched)."""
    lines: dict[str, list[str]] = {}
    if plan is not None:
        for path in sorted(plan.files, key=lambda p: p not in files):
            lines.setdefault(path, []).append("in the plan" if path in files else "the plan adds")
    queries = [task] + ([plan.summary] if plan is not None else [])
    for query in queries if index is not None else []:
        for hit in index.search(query, limit=SEARCHED):
            why = lines.setdefault(hit.path, [])
            if hit.symbol is not None and len(why) < 4:
                why.append(f"{hit.symbol.kind} {hit.symbol.name}")
    out = []
    for path, why in lines.items():
        notes = sorted(set(why), key=why.index)
        shown_path = shown.name(path) + (f" ({shown.name(', '.join(notes))})" if notes else "")
        out.append((path, shown_path))
    return out
