"""Tag inference: the strict task tags and the broad text tags."""

from memory import KNOWN_TAGS, infer_tags_from_text, infer_task_tags
from memory.tags import PHASE_TAGS, stack_tags


def test_known_tags_hold_the_stacks_and_the_phases():
    assert {"python", "typescript", "flask", "sqlite", "rust", "go", "pytest"} <= KNOWN_TAGS
    assert (
        {"plan", "deps", "scaffold", "build", "integrate", "validate"} <= PHASE_TAGS <= KNOWN_TAGS
    )


def test_task_tags_are_literal_known_words_only():
    assert infer_task_tags("Build a Flask todo API with SQLite") == {"build", "flask", "sqlite"}
    assert infer_task_tags("an aiosqlite service run by uvicorn") == {"aiosqlite"}
    assert infer_task_tags("app.py and main.ts") == set()
    assert infer_task_tags("flasky sqlite3") == set()


def test_text_tags_add_synonyms():
    assert {"python", "sqlite", "asyncio", "aiosqlite"} <= infer_tags_from_text("use aiosqlite")
    assert {"python", "fastapi"} <= infer_tags_from_text("run it with uvicorn")
    assert "typescript" in infer_tags_from_text("tsc fails on strict mode")
    assert "rust" in infer_tags_from_text("cargo test fails")
    assert "python" in infer_tags_from_text("async IRC server with websocket fanout")


def test_text_tags_read_file_extensions():
    assert "python" in infer_tags_from_text("edit app/models.py")
    assert "typescript" in infer_tags_from_text("src/App.tsx renders twice")
    assert "typescript" in infer_tags_from_text("index.ts")
    assert "rust" in infer_tags_from_text("src/main.rs")
    assert "go" in infer_tags_from_text("cmd/server/main.go")
    assert infer_tags_from_text("just words here") == set()


def test_stack_tags_drop_phases_and_add_languages():
    assert stack_tags({"flask", "build"}) == {"flask", "python"}
    assert stack_tags({"plan", "modular"}) == set()
