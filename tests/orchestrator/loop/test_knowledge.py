"""The knowledge tool: each action against a real index of a workspace, an empty one, a
stale one and a broken one, from the toolbox and from inside a build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory import Lesson, MemoryStore
from orchestrator.cli import main
from orchestrator.llm.backends import register_script
from orchestrator.loop.knowledge import ANSWER_CHARS, Knowledge
from orchestrator.sandbox.executor import ExecConfig
from orchestrator.sandbox.workspace import Workspace
from orchestrator.tools.box import ToolBox
from tests.fakes.improve_policies import wordfreq
from tests.orchestrator.loop.test_enhance import project


@pytest.fixture
def knowing(tmp_path, home) -> Knowledge:
    workspace = project(tmp_path / "ws")
    store = MemoryStore(Path(home) / "memory.jsonl")
    return Knowledge(workspace, tmp_path / "index", Path(home) / "runs", store, "wordfreq", "me")


def test_each_code_action_answers_from_the_index(knowing):
    digest = knowing.answer("digest", "")
    assert "wordfreq.py" in digest and "python" in digest
    search = knowing.answer("search", "most frequent words")
    assert search.splitlines()[0].startswith("wordfreq.py:16 function top_words")
    symbol = knowing.answer("symbol", "count_words")
    assert "wordfreq.py:11-13 function count_words" in symbol
    assert '   13      return Counter(w.strip("' in symbol  # the lines, numbered
    method = knowing.answer("symbol", "CountTest.test_counts_are_case_insensitive")
    assert method.startswith("tests/test_wordfreq.py:9-10 method CountTest.")
    related = knowing.answer("related", "wordfreq.py")
    assert (
        "imported by: tests/test_wordfreq.py" in related
        and "tests: tests/test_wordfreq.py" in related
    )
    assert knowing.answer("tests", "top_words") == "tests/test_wordfreq.py"
    assert "no symbol named 'nope'" in knowing.answer("symbol", "nope")
    assert "needs" in knowing.answer("search", "  ")


def test_the_index_is_refreshed_before_an_answer(knowing):
    assert "nothing in the index matches" in knowing.answer("search", "histogram")
    path = knowing.workspace / "wordfreq.py"
    path.write_text(path.read_text() + '\n\ndef histogram(counts):\n    """Bars."""\n')
    assert knowing.answer("search", "histogram").startswith("wordfreq.py:")
    assert "def histogram(counts):" in knowing.answer("symbol", "histogram")


def test_an_empty_workspace_and_a_broken_index_answer_without_failing(tmp_path, home):
    store = MemoryStore(Path(home) / "memory.jsonl")
    (tmp_path / "empty").mkdir()
    empty = Knowledge(tmp_path / "empty", tmp_path / "i1", tmp_path / "runs", store, "t", "me")
    for action in ("digest", "search", "symbol", "related", "tests", "episodes", "rejected"):
        assert isinstance(empty.answer(action, "x"), str)
    (tmp_path / "broken").write_text("not a folder")  # the index folder cannot be made
    broken = Knowledge(project(tmp_path / "ws"), tmp_path / "broken", tmp_path / "runs",
                       store, "t", "me")  # fmt: skip
    answer = broken.answer("search", "count")
    assert "could not be refreshed" in answer


def test_a_link_out_of_the_workspace_is_never_read(tmp_path, home):
    secret = tmp_path / "secret.py"
    secret.write_text('def leaked():\n    """TOP-SECRET-2f9"""\n')
    workspace = project(tmp_path / "ws")
    (workspace / "leak.py").symlink_to(secret)
    store = MemoryStore(Path(home) / "memory.jsonl")
    k = Knowledge(workspace, tmp_path / "index", tmp_path / "runs", store, "t", "me")
    for action, query in (("digest", ""), ("search", "leaked"), ("symbol", "leaked")):
        assert "TOP-SECRET" not in k.answer(action, query)
    for record in (tmp_path / "index").iterdir():
        assert "TOP-SECRET" not in record.read_text(errors="replace")


def test_answers_are_capped(knowing):
    path = knowing.workspace / "big.py"
    path.write_text("".join(f"def word_{i}():\n    pass\n" for i in range(3000)))
    assert len(knowing.answer("digest", "")) <= ANSWER_CHARS + 100
    assert len(knowing.answer("symbol", "word_1")) <= ANSWER_CHARS + 100


def test_episodes_and_rejected_come_from_this_homes_runs_and_dont_lessons(home, capsys, tmp_path):
    register_script("knowledge-fails", lambda m, t: "NONE" if not t else {
        "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]})  # fmt: skip
    assert main(["build", "a word frequency tool", "--model", "scripted:knowledge-fails",
                 "--json"]) == 1  # fmt: skip
    failed = json.loads(capsys.readouterr().out)["run_id"]
    store = MemoryStore(Path(home) / "memory.jsonl")
    lesson = Lesson(
        type="tool_pattern",
        trigger="word frequency tools that read stdin",
        fix="they hang in the sandbox",
        polarity="dont",
        tags=["python"],
    )
    store.save(lesson)
    k = Knowledge(project(tmp_path / "ws"), tmp_path / "index", Path(home) / "runs", store,
                  "word frequency counter", "me")  # fmt: skip
    episodes = k.answer("episodes", "")
    assert f"run {failed} (failed): a word frequency tool; failed at plan:" in episodes
    rejected = k.answer("rejected", "")
    assert "don't: word frequency tools that read stdin — they hang in the sandbox" in rejected
    assert f"failed in run {failed} at plan:" in rejected
    mine = Knowledge(k.workspace, k.index_dir, k.runs_dir, store, "word frequency", failed)
    assert failed not in mine.answer("episodes", "")  # a run is not its own episode


def test_the_toolbox_checks_the_action_and_answers_read_only(knowing):
    box = ToolBox(Workspace(knowing.workspace), ExecConfig(), knowledge=knowing.answer)
    before = sorted(p.name for p in knowing.workspace.iterdir())
    out = box.dispatch("knowledge", json.dumps({"action": "search", "query": "top words"}))
    assert out.ok and "top_words" in out.content
    bad = box.dispatch("knowledge", json.dumps({"action": "delete", "query": "x"}))
    assert not bad.ok and "knowledge takes a JSON object" in bad.content
    assert sorted(p.name for p in knowing.workspace.iterdir()) == before
    none = ToolBox(Workspace(knowing.workspace), ExecConfig())
    assert "not available" in none.dispatch("knowledge", '{"action": "digest"}').content


def test_a_builds_model_can_ask_and_sees_what_it_wrote(home, capsys):
    seen: list[str] = []

    def policy(messages, tools):
        if tools and "# Phase: build" in messages[0]["content"]:
            taken = sum(1 for m in messages if m["role"] == "assistant")
            if taken == 0:
                call = {"name": "knowledge", "arguments": {"action": "symbol", "query": "main"}}
                return {"tool_calls": [call]}
            if taken == 1:
                seen.append(messages[-1]["content"])
        return wordfreq.policy(messages, tools)

    register_script("knowledge-asker", policy)
    assert main(["build", wordfreq.TASK, "--model", "scripted:knowledge-asker", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert seen and seen[0].startswith("wordfreq.py:") and "function main" in seen[0]
    index = Path(home) / "runs" / summary["run_id"] / "index"
    assert (index / "symbols.jsonl").is_file() and (index / "digest.md").is_file()
