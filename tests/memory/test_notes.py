"""Notes: two scopes with shadowing, the MEMORY.md catalog, and files a stranger wrote."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from memory.notes import (
    AUTO_PINNED,
    CATALOG,
    MAX_NOTE_BYTES,
    BadNote,
    Note,
    Notebook,
    NoteFolder,
    NoteNotFound,
    check_name,
    new_note,
    note_name,
)


@pytest.fixture
def book(tmp_path: Path) -> Notebook:
    return Notebook(tmp_path / "home" / "notes", tmp_path / "global" / "notes")


# ---------------------------------------------------------------- the model
def test_a_note_is_markdown_with_frontmatter_and_reads_back_the_same(book):
    note = book.save(new_note("Use uv for deps.\n\nNever pip install globally.", name="uv"))
    text = (book.home.path / "uv.md").read_text()
    assert text.startswith("---\nname: uv\ndescription: Use uv for deps.\ntype: note\n")
    assert text.endswith("---\n\nUse uv for deps.\n\nNever pip install globally.\n")
    assert book.get("uv") == note == Note.from_text(note.text(), "home")


@pytest.mark.parametrize("kind", ["convention", "decision", "gotcha", "identity"])
def test_the_seeds_types_are_pinned_unless_said_otherwise(kind):
    assert kind in AUTO_PINNED
    assert new_note("x y", type=kind).pinned
    assert not new_note("x y", type=kind, pinned=False).pinned


@pytest.mark.parametrize("kind", ["note", "preference", "user", "architecture"])
def test_other_types_are_not_pinned_unless_asked(kind):
    assert not new_note("x y", type=kind).pinned
    assert new_note("x y", type=kind, pinned=True).pinned


def test_a_name_is_derived_from_the_first_words_and_is_always_valid():
    assert note_name("Use UV for Python, always!") == "use-uv-for-python-always"
    for text in ["日本語だけ", "!!!", "a" * 500, "x " * 100]:
        assert check_name(note_name(text)) == note_name(text)
    assert note_name("日本語だけ") != note_name("другой текст")


def test_a_description_defaults_to_the_first_line_capped():
    note = new_note("# Title line\nbody")
    assert note.description == "Title line"
    assert len(new_note("word " * 100).description) <= 120


@pytest.mark.parametrize(
    "name", ["a/b", "..", "a..b", "x\x00y", "/etc/passwd", "A", "-x", "", "n" * 65, "a b"]
)
def test_hostile_names_are_bad_notes_in_one_line(book, name):
    with pytest.raises(BadNote) as caught:
        new_note("text", name=name)
    assert "\n" not in str(caught.value)
    for call in (book.get, book.forget, lambda n: book.append(n, "x")):
        with pytest.raises(BadNote):
            call(name)
    assert not book.home.path.exists()


def test_unknown_types_and_importance_are_refused():
    with pytest.raises(BadNote, match="type 'fact' is not one of"):
        new_note("x", type="fact")
    with pytest.raises(BadNote, match="importance 'urgent'"):
        new_note("x", importance="urgent")
    with pytest.raises(BadNote, match="empty"):
        new_note("  \n ")


def test_unknown_frontmatter_keys_survive_a_rewrite(book):
    book.home.path.mkdir(parents=True)
    path = book.home.path / "kept.md"
    path.write_text("---\nname: kept\ndescription: d\nreviewer: ann\nlinks: [a, b]\n---\nbody\n")
    note = book.get("kept")
    assert note.extra == {"reviewer": "ann", "links": ["a", "b"]}
    book.append("kept", "more")
    text = path.read_text()
    assert "reviewer: ann" in text and "- a" in text and text.endswith("body\n\nmore\n")


# ---------------------------------------------------------------- scopes
def test_a_home_note_shadows_a_global_note_of_the_same_name(book):
    book.save(new_note("My name is Ann", name="me", type="identity", scope="global"))
    book.save(new_note("Global only", name="stack", scope="global"))
    assert book.get("me").scope == "global"
    book.save(new_note("In this project I am the reviewer", name="me"))
    assert book.get("me").scope == "home"
    assert [(n.name, n.scope) for n in book.all()] == [("me", "home"), ("stack", "global")]
    assert [(n.name, n.scope) for n in book.shadowed()] == [("me", "global")]
    assert book.forget("me").scope == "home"  # the visible one goes first
    assert book.get("me").scope == "global"
    assert book.forget("stack", scope="global").name == "stack"
    with pytest.raises(NoteNotFound):
        book.forget("stack")
    with pytest.raises(NoteNotFound):
        book.forget("me", scope="home")


def test_all_puts_pinned_first_then_names(book):
    for name, kind in [("b", "note"), ("a", "note"), ("z", "gotcha"), ("c", "decision")]:
        book.save(new_note(f"text {name}", name=name, type=kind))
    assert [n.name for n in book.all()] == ["c", "z", "a", "b"]


def test_the_folder_decides_the_scope_not_the_frontmatter(book):
    note = new_note("copied", name="copied", scope="global")
    book.home.path.mkdir(parents=True)
    (book.home.path / "copied.md").write_text(note.text())
    assert book.get("copied").scope == "home"


def test_append_creates_a_missing_note_and_adds_to_one_that_exists(book):
    first = book.append("topic", "first fact", type="gotcha")
    assert first.pinned and first.body == "first fact"
    second = book.append("topic", "second fact")
    assert second.body == "first fact\n\nsecond fact" and second.type == "gotcha"
    assert second.created == first.created and second.updated >= first.updated


def test_a_global_notebook_may_be_absent(tmp_path):
    book = Notebook(tmp_path / "notes", None)
    book.save(new_note("x", name="x"))
    assert [n.name for n in book.all()] == ["x"] and book.shadowed() == []
    with pytest.raises(BadNote):
        book.save(new_note("y", name="y", scope="global"))


def test_relevant_ranks_by_bm25_and_leaves_out_what_does_not_match(book):
    book.save(new_note("Flask apps use blueprints for routes", name="flask"))
    book.save(new_note("Rust crates pin their toolchain", name="rust"))
    book.save(new_note("Testing flask: use the test client; flask flask", name="flask-tests"))
    names = [n.name for n in book.relevant("write a flask web app with tests")]
    assert names == ["flask-tests", "flask"]
    assert book.relevant("a haskell compiler") == []
    assert len(book.relevant("flask", limit=1)) == 1


# ---------------------------------------------------------------- the catalog
def test_the_catalog_lists_each_note_and_marks_the_pinned(book):
    book.save(new_note("Always squash", name="git", type="convention"))
    book.save(new_note("A loose note", name="loose"))
    catalog = (book.home.path / CATALOG).read_text()
    assert "- **git** (convention) [pinned]: Always squash" in catalog
    assert "- **loose** (note): A loose note" in catalog
    assert book.home.catalog() == catalog
    book.forget("loose")
    assert "loose" not in (book.home.path / CATALOG).read_text()


def test_the_catalog_picks_up_a_hand_edit_and_a_hand_added_file(book):
    book.save(new_note("Old description", name="edited"))
    catalog = book.home.path / CATALOG
    path = book.home.path / "edited.md"
    path.write_text(path.read_text().replace("description: Old description", "description: New"))
    (book.home.path / "added.md").write_text("---\nname: added\ndescription: by hand\n---\nx\n")
    assert "Old description" in catalog.read_text()  # not yet: nothing read the folder
    text = book.home.catalog()
    assert "- **edited** (note): New" in text and "- **added** (note): by hand" in text
    assert catalog.read_text() == text
    (book.home.path / "added.md").unlink()
    assert "added" not in book.home.catalog() and "added" not in catalog.read_text()


def _saver(folder: str, worker: int, count: int, barrier) -> None:
    notes = NoteFolder(Path(folder), "home")
    barrier.wait(timeout=60)
    for i in range(count):
        notes.save(new_note(f"fact {i} of worker {worker}", name=f"w{worker}-{i}"))


def test_two_processes_saving_notes_lose_none_and_the_catalog_has_all(tmp_path):
    folder = tmp_path / "notes"
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_saver, args=(str(folder), w, 40, barrier)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    names = {f"w{w}-{i}" for w in range(2) for i in range(40)}
    assert {n.name for n in NoteFolder(folder, "home").all()} == names
    catalog = (folder / CATALOG).read_text()  # the last writer saw every note
    assert {line.split("**")[1] for line in catalog.splitlines() if line.startswith("- ")} == names
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------- hostile files
def _good(book: Notebook) -> None:
    book.save(new_note("a good note", name="good"))


def test_bad_yaml_and_a_missing_name_are_problems_and_the_rest_load(book):
    _good(book)
    folder = book.home.path
    (folder / "broken.md").write_text("---\nname: broken\ndescription: [unclosed\n---\nx\n")
    (folder / "nameless.md").write_text("---\ndescription: no name\n---\nx\n")
    (folder / "other.md").write_text("---\nname: good\ndescription: wrong file\n---\n")
    (folder / "Upper.md").write_text("---\nname: Upper\ndescription: d\n---\n")
    assert [n.name for n in book.all()] == ["good"]
    problems = " | ".join(book.home.problems)
    assert (
        "broken.md: invalid YAML" in problems and "nameless.md: the frontmatter has no" in problems
    )
    assert "other.md: its name 'good'" in problems
    assert "Upper.md: name: note name 'Upper' is not valid" in problems
    assert len(book.home.problems) == 4
    assert "good" in book.home.catalog() and "broken" not in book.home.catalog()


def test_a_python_tag_in_the_frontmatter_is_refused_not_run(book, tmp_path):
    _good(book)
    marker = tmp_path / "ran"
    evil = f"!!python/object/apply:os.system ['touch {marker}']"
    (book.home.path / "evil.md").write_text(f"---\nname: evil\ndescription: {evil}\n---\nx\n")
    assert [n.name for n in book.all()] == ["good"]
    assert not marker.exists()
    assert "evil.md: invalid YAML frontmatter" in book.home.problems[0]
    assert book.get("evil") is None


def test_a_symlinked_note_is_skipped_not_followed(book, tmp_path):
    _good(book)
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: link\ndescription: the secret\n---\nsecret body\n")
    (book.home.path / "link.md").symlink_to(secret)
    assert [n.name for n in book.all()] == ["good"]
    assert "link.md: a symlink (not followed)" in book.home.problems[0]
    assert book.get("link") is None and "secret" not in book.home.catalog()


def test_a_fifo_is_skipped_without_blocking(book):
    _good(book)
    os.mkfifo(book.home.path / "pipe.md")
    started = time.monotonic()
    assert [n.name for n in book.all()] == ["good"]
    assert time.monotonic() - started < 5
    assert "pipe.md: not a regular file" in book.home.problems[0]


def test_a_huge_note_is_skipped(book):
    _good(book)
    body = "x" * (MAX_NOTE_BYTES + 10)
    (book.home.path / "huge.md").write_text(f"---\nname: huge\ndescription: d\n---\n{body}\n")
    assert [n.name for n in book.all()] == ["good"]
    assert "huge.md: larger than 256 KB" in book.home.problems[0]


def test_a_write_replaces_a_planted_symlink_and_never_writes_through_it(book, tmp_path):
    _good(book)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (book.home.path / "planted.md").symlink_to(victim)
    book.save(new_note("new content", name="planted"))
    assert victim.read_text() == "precious"
    assert not (book.home.path / "planted.md").is_symlink()
    assert book.get("planted").body == "new content"
    (book.home.path / "gone.md").symlink_to(victim)
    book.forget("gone")  # the link goes, not its target
    assert victim.read_text() == "precious" and not os.path.lexists(book.home.path / "gone.md")


def test_a_catalog_planted_as_a_symlink_is_replaced_not_written_through(book, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    book.home.path.mkdir(parents=True)
    (book.home.path / CATALOG).symlink_to(victim)
    _good(book)
    assert victim.read_text() == "precious" and "good" in (book.home.path / CATALOG).read_text()


def test_a_notes_folder_that_is_a_symlink_is_refused_in_one_line(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "notes").symlink_to(real)
    book = Notebook(tmp_path / "notes", None)
    for call in (book.all, lambda: book.save(new_note("x", name="x")), lambda: book.get("x")):
        with pytest.raises(BadNote, match="is a symlink: refused") as caught:
            call()
        assert "\n" not in str(caught.value)
    assert list(real.iterdir()) == []


def test_the_loader_is_pyyamls_safe_loader():
    import yaml

    from memory.mdfile import SafeLoader as SAFE_LOADER

    assert issubclass(SAFE_LOADER, yaml.constructor.SafeConstructor)
    assert not issubclass(SAFE_LOADER, yaml.constructor.FullConstructor)
