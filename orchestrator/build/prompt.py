"""What a phase's conversation opens with: the system prompt and the state of the build.

Each phase is a fresh conversation, so everything the model needs is in its opening:
the builder's system prompt (``phases/system.md``), the phase's own prompt
(``phases/<phase>.md``) and the lessons recalled for the task (with their ids, so the
model can cite them); then, as the first user message, the task, the plan once it
exists, what earlier phases did and the files in the workspace.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.build.runs import PhaseSummary
from orchestrator.sandbox.workspace import Workspace
from phases.base import Phase, PlanError, load_plan, read_prompt


def opening(
    phase: Phase,
    task: str,
    workspace: Workspace,
    earlier: Sequence[PhaseSummary],
    lessons_text: str,
    existing: str = "",
) -> list[dict]:
    """The system and first user message of ``phase``; ``existing`` is what a change to an
    existing project adds (``phases/enhance.md`` and the project's test command)."""
    system = read_prompt("system") + "\n\n" + phase.prompt()
    if existing:
        system += "\n\n" + existing
    if lessons_text:
        system += "\n\n" + lessons_text
    parts = [f"Task: {task}"]
    try:
        plan = load_plan(workspace.root)
        parts.append(f"Plan (plan.json):\n{plan.model_dump_json(indent=2)}")
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
