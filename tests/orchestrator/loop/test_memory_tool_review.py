"""The memory tool and proposed notes, driven directly: a model reads and appends to
its own proposed notes only; another build's proposed note is not shown to it, and a
note a person accepted is read-only to every build."""

from __future__ import annotations

import pytest

from memory import MemoryStore
from memory.notes import Notebook
from memory.skills import SkillBook
from orchestrator.home import Home
from orchestrator.loop.learning import HomeLearning
from orchestrator.loop.memory_tool import MemoryTool
from orchestrator.tools.schema import CallError, Memory


def _tool(home: Home, run_id: str) -> MemoryTool:
    learning = HomeLearning(home)
    return MemoryTool(
        store=MemoryStore(home.memory_path),
        notebook=Notebook(home.notes_dir, home.global_notes_dir),
        skills=SkillBook(home.skills_dir, home.global_skills_dir),
        learning=learning,
        run_id=run_id,
        task="a word counter",
        tags=["python"],
        recalled=[],
        emit=lambda kind, **fields: None,
        phase="build",
    )


def _save(tool: MemoryTool, name: str, content: str) -> str:
    return tool.answer(Memory(action="save", kind="note", name=name, content=content))


def test_another_builds_proposed_note_is_hidden_and_an_accepted_one_read_only(home):
    h = Home(home)
    first, second = _tool(h, "run-1"), _tool(h, "run-2")
    assert "saved as proposed" in _save(first, "counts", "Counts are case-insensitive.")
    assert "Counts are case-insensitive." in first.answer(Memory(action="get", name="counts"))
    assert "proposed by this build" in first.answer(Memory(action="list"))
    assert "appended" in first.answer(
        Memory(action="append", name="counts", content="Ties break alphabetically.")
    )

    with pytest.raises(CallError, match="proposed by another build"):
        second.answer(Memory(action="get", name="counts"))
    assert "counts" not in second.answer(Memory(action="list"))
    with pytest.raises(CallError, match="read-only"):
        _save(second, "counts", "mine now")

    second.notebook.home.review("counts", accept=True)
    with pytest.raises(CallError, match="read-only"):  # even for the build that made it
        first.answer(Memory(action="append", name="counts", content="more, unreviewed"))
    with pytest.raises(CallError, match="read-only"):
        _save(first, "counts", "replaced, unreviewed")
    assert "more, unreviewed" not in second.answer(Memory(action="get", name="counts"))


def test_a_rejected_note_cannot_come_back_through_an_append(home):
    h = Home(home)
    tool = _tool(h, "run-1")
    _save(tool, "counts", "Counts are case-insensitive.")
    tool.notebook.home.review("counts", accept=False)
    with pytest.raises(CallError, match="gone"):
        tool.answer(Memory(action="append", name="counts", content="back again"))
    assert tool.notebook.get("counts") is None
