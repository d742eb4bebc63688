"""Tag inference: the strict task tags and the broad text tags."""

from memory import KNOWN_TAGS, infer_tags_from_text, infer_task_tags
from memory.tags import PHASE_TAGS, lesson_stacks, stack_tags


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


# ---------------------------------------------------------------- what a lesson is about
MIXED = stack_tags({"flask", "pytest", "react", "vitest", "sqlite"})
"""A Flask + React project's tags, with the languages they imply."""


def about(tags: set[str], text: str) -> set[str]:
    return set(lesson_stacks(frozenset(tags), frozenset(stack_tags(infer_tags_from_text(text)))))


def test_a_lessons_text_rules_out_the_tags_of_another_language():
    front = about(MIXED, "missing src/main.tsx makes the Vite build fail")
    assert front == {"react", "vitest", "javascript", "sqlite"}  # sqlite has no language
    back = about(MIXED, "Flask blueprint registered twice under pytest")
    assert back == {"flask", "pytest", "python", "sqlite"}


def test_a_lessons_text_rules_out_the_other_stacks_of_a_kind_it_names():
    ts = stack_tags({"typescript", "jest", "vitest", "node"})
    assert about(ts, "vitest needs vitest.config.ts, not a jest config") == ts  # names both
    assert about(ts, "vitest needs describe and it imported") == ts - {"jest"}
    web = about(MIXED | {"fastapi"}, "fastapi route returns 500")  # flask is the other one
    assert web == {"fastapi", "pytest", "python", "sqlite"}


def test_a_lessons_text_never_adds_a_stack_and_never_leaves_it_with_none():
    assert about({"python"}, "index.tsx uses React hooks under vitest") == {"python"}
    assert about(MIXED, "the build log is empty") == MIXED  # the text says nothing
    assert about({"flask", "python"}, "cargo build fails in src/main.rs") == {"flask", "python"}
    assert about(set(), "main.tsx") == set()


def test_what_a_lesson_is_about_is_always_within_its_tags():
    """Whatever text a model writes, it can only narrow its lesson's stacks, never widen
    them: the prior and the agreement recall gives a lesson never exceed its tags'."""
    from memory.tags import STACK_TAGS

    texts = ["", "main.tsx", "app.py and index.ts", "cargo, go.mod, npm, pip", "jest vitest"]
    texts += [" ".join(sorted(STACK_TAGS)), "flask django react vue pytest jest"]
    tag_sets = [set(), {"python"}, MIXED, set(STACK_TAGS), {"sqlite"}, {"jest", "node"}]
    for tags in tag_sets:
        for text in texts:
            got = about(stack_tags(tags), text)
            assert got <= stack_tags(tags)
            assert got or not stack_tags(tags)
