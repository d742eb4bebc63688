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
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.loop.runs import PhaseSummary
from orchestrator.sandbox.workspace import Workspace
from phases import stacks
from phases.base import Phase, PlanError, load_plan, read_prompt


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
) -> list[dict]:
    """The system and first user message of ``phase``: ``prefix`` (:func:`stable_prefix`)
    then ``part`` (:func:`phase_part`)."""
    system = prefix + part
    parts = [f"Task: {task}"]
    try:
        plan = load_plan(workspace.root)
        parts.append(f"Plan (plan.json):\n{plan.model_dump_json(indent=2)}")
        parts.append(stacks.guide(workspace.root, plan))
    except PlanError:
        pass
    done = [f"- {p.phase}: {p.outcome}; {p.finish_summary or p.check}" for p in earlier]
    if done:
        parts.append("Earlier phases:\n" + "\n".join(done))
    files = workspace.files()
    parts.append("Workspace files:\n" + ("\n".join(files) if files else "(empty)"))
    parts.append(f"You are in the {phase.name} phase. Begin.")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
