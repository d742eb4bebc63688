"""The memory page over a real lesson corpus and budget history: lessons listed, paged and
filtered, recall as ``cadillac memory recall`` ranks, notes and skills of both scopes,
budgets as ``cadillac budgets`` works them out, model text escaped, the home unwritten."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from memory import MemoryStore, snapshot
from memory.notes import NoteFolder, NoteSource, new_note
from memory.skills import Skill, SkillBook
from orchestrator.cli import main
from orchestrator.home import Home
from orchestrator.serve.app import make_app
from orchestrator.serve.config import ServeConfig

T = "memory-page-token-0123456789"
PAGE = 50
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
TASK = "a Flask todo app with SQLite and a login page, tested with pytest"
SKILL_BODY = "## When to use\nA Flask app.\n\n## Steps\n1. Make the app factory.\n"


def client(home: Path) -> TestClient:
    app = make_app(Home(home), ServeConfig(token=T, page_size=PAGE))
    return TestClient(app, headers={"Authorization": f"Bearer {T}"})


def cli_json(capsys, *argv: str):
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def lesson_ids(text: str) -> list[str]:
    """The lesson ids a page links to, in page order (each row links its lesson once)."""
    return re.findall(r'href="/memory/lessons/([^"]+)"', text)


def every_page(c: TestClient, query: str) -> list[str]:
    """The lesson ids of every page of a listing, in order."""
    first = c.get(f"/memory?{query}").text
    pages = re.search(r"page 1 of (\d+)", first)
    ids = lesson_ids(first)
    for number in range(2, int(pages.group(1)) + 1 if pages else 2):
        ids += lesson_ids(c.get(f"/memory?{query}&page={number}").text)
    return ids


def tree(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under the roots with its size and mtime (folders too)."""
    found = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                st = os.lstat(Path(folder) / name)
                found[str(Path(folder) / name)] = (st.st_size, st.st_mtime_ns)
    return found


def global_dir() -> Path:
    return Path(os.environ["CADILLAC_GLOBAL_DIR"])


def test_lessons_are_listed_newest_first_one_page_at_a_time(corpus_home: Path, capsys):
    stored = [x["id"] for x in cli_json(capsys, "memory", "list", "--json")]
    assert len(stored) == 403
    c = client(corpus_home)
    first = c.get("/memory")
    assert first.status_code == 200
    assert "403 in" in first.text
    seen = []
    for number in range(1, 10):
        ids = lesson_ids(c.get(f"/memory?page={number}").text)
        assert len(ids) == (PAGE if number < 9 else 403 - 8 * PAGE)
        seen += ids
    assert seen == stored[::-1]
    assert lesson_ids(c.get("/memory?page=99").text) == stored[::-1][8 * PAGE :]  # the last
    oldest = lesson_ids(c.get("/memory?sort=oldest").text)
    assert oldest == stored[:PAGE]


def test_filters_by_type_polarity_and_text(corpus_home: Path, capsys):
    c = client(corpus_home)
    for query, argv in (
        ("type=dependency", ["--type", "dependency"]),
        ("polarity=dont", ["--polarity", "dont"]),
        ("type=architecture&polarity=do", ["--type", "architecture", "--polarity", "do"]),
    ):
        want = [x["id"] for x in cli_json(capsys, "memory", "list", "--json", *argv)][::-1]
        assert every_page(c, query) == want, query
        assert want and f"{len(want)} match" in c.get(f"/memory?{query}").text
    lessons = cli_json(capsys, "memory", "list", "--json")
    word = "aiosqlite"
    want = [x["id"] for x in lessons if word in f"{x['trigger']} {x['fix']} {x['tags']}".lower()]
    page = c.get(f"/memory?q={word.upper()}")
    assert 0 < len(want) < PAGE
    assert lesson_ids(page.text) == want[::-1]


@pytest.mark.parametrize(
    ("task", "scorer"), [(TASK, "default"), (TASK, "build"), ("a Go CLI that reads CSV", "seed")]
)
def test_recall_ranks_as_the_command_does_with_its_reasons(corpus_home: Path, capsys, task, scorer):
    want = cli_json(capsys, "memory", "recall", task, "--json", "--limit", "15", "--scorer", scorer)
    assert len(want) > 5
    page = client(corpus_home).get("/memory", params={"task": task, "limit": 15, "scorer": scorer})
    assert page.status_code == 200
    section = page.text.split('<section class="recalled">')[1].split("</section>")[0]
    assert lesson_ids(section) == [r["lesson"]["id"] for r in want]
    rows = section.split("<tbody>")[1].split("<tr")[1:]
    for row, r in zip(rows, want, strict=True):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        parts = r["parts"]
        assert cells[2] == f"{r['score']:.3f}"
        assert cells[3] == f"{parts['relevance']:.3f}"
        assert cells[5] == f"{parts['confidence']:.2f}"
        assert cells[7:10] == [f"{parts[k]:.2f}" for k in ("stack", "prior", "build")]
        assert cells[10] == f"{parts['penalty']:g}"
        assert cells[11] == ("; ".join(parts["penalties"]) or "-")
    if scorer == "seed":  # the layers' reasons, where the seed's scorer gives some
        assert sum("untagged text implies another stack (/2)" in row for row in rows) == sum(
            bool(r["parts"]["penalties"]) for r in want
        )
        assert any(r["parts"]["penalties"] for r in want)


def test_a_lesson_has_its_page_and_a_retired_one_is_marked(corpus_home: Path, capsys):
    lessons = cli_json(capsys, "memory", "list", "--json")
    live, gone = lessons[5], lessons[7]
    MemoryStore(corpus_home / "memory.jsonl").retire([gone["id"]], "kept backfiring (test)")
    c = client(corpus_home)
    page = c.get(f"/memory/lessons/{live['id']}")
    assert page.status_code == 200
    assert html.escape(live["trigger"], quote=False) in page.text
    assert html.escape(live["fix"], quote=False) in page.text
    assert f"{live['confidence']:.3f}" in page.text and "s-retired" not in page.text
    retired = c.get("/memory/retired")
    assert lesson_ids(retired.text) == [gone["id"]]
    assert 's-retired">retired' in retired.text and "kept backfiring (test)" in retired.text
    page = c.get(f"/memory/lessons/{gone['id']}")
    assert page.status_code == 200 and 's-retired">retired' in page.text
    assert gone["id"] not in lesson_ids(c.get("/memory?page=1&sort=oldest").text)
    assert c.get("/memory/lessons/nosuchid").status_code == 404


def test_notes_of_both_scopes_with_a_proposed_one_marked(home: Path, capsys):
    assert main(["memory", "remember", "Use uv to install.", "--name", "tooling"]) == 0
    assert main(["memory", "remember", "Answer in English.", "--name", "lang", "--global"]) == 0
    assert main(["memory", "remember", "Global twin.", "--name", "tooling", "--global"]) == 0
    source = NoteSource(run="20250101-000000-abcd", phase="build", task="a todo app")
    proposed = new_note("Pin pytest below 9.", name="pin-pytest", source=source)
    NoteFolder(home / "notes", "home").save(proposed)
    c = client(home)
    page = c.get("/memory/notes")
    home_part, global_part = page.text.split('class="notes scope-global"')
    assert "tooling" in home_part and "pin-pytest" in home_part and ">lang<" not in home_part
    assert ">lang<" in global_part and ">tooling<" in global_part
    assert "(hidden by the home note)" in global_part
    row = next(r for r in home_part.split("<tr")[1:] if "pin-pytest" in r)
    assert 's-proposed">proposed' in row and "20250101-000000-abcd" in row
    assert "proposed" not in next(r for r in home_part.split("<tr")[1:] if ">tooling<" in r)
    note = c.get("/memory/notes/pin-pytest")
    assert "Pin pytest below 9." in note.text and 's-proposed">proposed' in note.text
    assert "Global twin." in c.get("/memory/notes/tooling?scope=global").text
    assert "Use uv to install." in c.get("/memory/notes/tooling").text
    assert "Answer in English." in c.get("/memory/notes/lang").text
    assert c.get("/memory/notes/nothing").status_code == 404
    assert c.get("/memory/notes/..%2Fx").status_code == 404


def test_skills_of_both_scopes_with_their_outcomes_and_text(home: Path):
    book = SkillBook(home / "skills", global_dir() / "skills")
    made = Skill(name="flask-app", description="Start a Flask app", tags=["flask"], body=SKILL_BODY)
    book.save(made)
    book.save(made.model_copy(update={"name": "go-cli", "scope": "global", "description": "Go"}))
    for passed in (True, True, False):
        book.record_outcome(["flask-app"], passed=passed)
    c = client(home)
    page = c.get("/memory/skills")
    home_part, global_part = page.text.split('class="skills scope-global"')
    row = next(r for r in home_part.split("<tr")[1:] if "flask-app" in r)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[1:6] == ["Start a Flask app", "0.60", "3", "2", "1"]
    assert "go-cli" in global_part and "go-cli" not in home_part
    skill = c.get("/memory/skills/flask-app")
    assert "1. Make the app factory." in skill.text and "3 uses: 2 passed, 1 failed" in skill.text
    assert c.get("/memory/skills/go-cli").status_code == 200
    assert c.get("/memory/skills/none-such").status_code == 404


@pytest.mark.parametrize(
    "tags", ["flask,sqlite", "python,flask", "pygame,pytest", "express,jest,typescript"]
)
def test_budgets_and_the_rows_behind_them_are_cadillacs(corpus_home: Path, capsys, tags):
    want = cli_json(capsys, "budgets", "--tags", tags, "--json")
    page = client(corpus_home).get("/memory/budgets", params={"tags": tags})
    assert page.status_code == 200
    assert any(b["p90"] is not None for b in want.values()) == ("express" not in tags)
    for phase, b in want.items():
        row = page.text.split(f'<tr class="phase-{phase}">')[1].split('<tr class="phase-')[0]
        cells = re.findall(r'<td class="num">(?:<b>)?([^<]*)', row)
        p90 = "—" if b["p90"] is None else f"{b['p90']:g}"
        assert cells[:4] == [str(b["default"]), str(b["samples"]), p90, str(b["rounds"])]
        assert html.escape(b["reason"], quote=False) in row
        shown = [float(ts) for ts in re.findall(r'data-ts="([^"]+)"', row)]
        assert shown == [u["ts"] for u in b["used"]], phase


def test_the_budgets_page_works_out_each_tag_set_of_the_history(corpus_home: Path, capsys):
    page = client(corpus_home).get("/memory/budgets")
    rows = [json.loads(x) for x in (corpus_home / "phase_budgets.jsonl").read_text().splitlines()]
    assert "261 history rows" in page.text
    heads = re.findall(r"<h2>([^<]*?) <small>([\d,]+) rows with exactly", page.text)
    assert heads, "no tag set"
    tags, n = heads[0][0], int(heads[0][1].replace(",", ""))
    assert n == max(
        sum(1 for r in rows if sorted(r["tags"]) == sorted(x["tags"])) for x in rows if x["tags"]
    )
    want = cli_json(capsys, "budgets", "--tags", tags.replace(", ", ","), "--json")
    section = page.text.split("<h2>")[1]
    for phase, b in want.items():
        assert f'<td class="num"><b>{b["rounds"]}</b></td>' in section.split(f"phase-{phase}")[1]


def test_model_text_is_escaped_everywhere(home: Path, capsys):
    hostile = f"{SCRIPT} {IMG}"
    assert (
        main(["memory", "add", "--type", "tool_pattern", "--trigger", hostile, "--fix", hostile])
        == 0
    )
    assert main(["memory", "remember", hostile, "--name", "evil"]) == 0
    assert main(["memory", "remember", hostile, "--name", "evil-g", "--global"]) == 0
    made = Skill(name="evil", description=hostile, triggers=[SCRIPT], body=SKILL_BODY + hostile)
    SkillBook(home / "skills", global_dir() / "skills").save(made)
    (lesson,) = cli_json(capsys, "memory", "list", "--json")
    odd = {"id": IMG, "type": "dependency", "trigger": hostile, "fix": "-"}
    with (home / "memory.jsonl").open("a") as f:
        f.write(json.dumps(odd) + "\n")
    c = client(home)
    assert c.get("/memory/lessons/" + quote(IMG, safe="")).status_code == 200
    pages = [
        "/memory",
        "/memory?" + "task=" + SCRIPT,
        "/memory?q=" + "alert",
        f"/memory/lessons/{lesson['id']}",
        "/memory/lessons/" + quote(IMG, safe=""),
        "/memory/notes",
        "/memory/notes/evil",
        "/memory/notes/evil-g",
        "/memory/skills",
        "/memory/skills/evil",
    ]
    for url in pages:
        text = c.get(url).text
        assert "<script>alert" not in text and "<img src=x" not in text, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text, url
    assert "&lt;img src=x onerror=alert(1)&gt;" in c.get("/memory/notes/evil").text


def test_no_memory_route_writes_the_home(corpus_home: Path, capsys, monkeypatch):
    """Every route, on a home with lessons, retired ones, notes, skills and budgets: the
    home and the global scope are the same tree, byte sizes and mtimes, after as before
    (with the store's index snapshot due at this size: cadillac's store would write one)."""
    monkeypatch.setattr(snapshot, "MIN_LESSONS", 10)
    lessons = cli_json(capsys, "memory", "list", "--json")
    MemoryStore(corpus_home / "memory.jsonl").retire([lessons[3]["id"]], "test")
    assert main(["memory", "remember", "A note.", "--name", "a-note"]) == 0
    assert main(["memory", "remember", "A global note.", "--name", "g-note", "--global"]) == 0
    book = SkillBook(corpus_home / "skills", global_dir() / "skills")
    book.save(Skill(name="a-skill", description="A skill", tags=["flask"], body=SKILL_BODY))
    for made in [*corpus_home.glob("*.lock"), *corpus_home.glob("*.npz")]:
        made.unlink()  # what the commands left (their locks, their snapshot), not the server
    (global_dir() / "notes" / "MEMORY.md").unlink()  # a read of the catalog would write it
    (corpus_home / "notes" / "MEMORY.md").unlink()
    before = tree(corpus_home, global_dir())
    c = client(corpus_home)
    urls = [
        "/memory",
        "/memory?page=3&type=error_pattern&polarity=do&q=python&sort=used",
        "/memory?" + "task=" + TASK.replace(" ", "+"),
        "/memory?task=react+dashboard&scorer=build&limit=50",
        f"/memory/lessons/{lessons[0]['id']}",
        f"/memory/lessons/{lessons[3]['id']}",
        "/memory/lessons/nope",
        "/memory/retired",
        "/memory/notes",
        "/memory/notes/a-note",
        "/memory/notes/g-note",
        "/memory/notes/missing",
        "/memory/skills",
        "/memory/skills/a-skill",
        "/memory/budgets",
        "/memory/budgets?tags=python,flask",
    ]
    for url in urls:
        assert c.get(url).status_code in (200, 404), url
    assert tree(corpus_home, global_dir()) == before
    assert not list(corpus_home.glob("*.lock")) and not list(corpus_home.glob("*.npz"))


def test_a_lesson_added_meanwhile_is_on_the_next_request(corpus_home: Path, capsys):
    c = client(corpus_home)
    assert "403 in" in c.get("/memory?q=python").text
    trigger = "zebra-striped widget rendering stalls the event loop"
    argv = ["memory", "add", "--type", "performance", "--trigger", trigger, "--fix", "defer it"]
    assert main(argv) == 0
    (added,) = [x for x in cli_json(capsys, "memory", "list", "--json") if x["trigger"] == trigger]
    assert "404 in" in c.get("/memory").text
    assert lesson_ids(c.get("/memory").text)[0] == added["id"]
    assert lesson_ids(c.get("/memory?q=zebra").text) == [added["id"]]
    recalled = c.get("/memory", params={"task": "zebra-striped widget"}).text
    assert lesson_ids(recalled.split("</section>")[0])[0] == added["id"]
