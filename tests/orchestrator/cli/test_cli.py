"""The command line, run in-process as a user would type it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import orchestrator.cli.memory as cli
from memory import LESSON_TYPES, SCORERS
from tests.support import run


def add(capsys, trigger: str, *extra: str) -> dict:
    code, out, err = run(
        capsys,
        "memory",
        "add",
        "--type",
        "error_pattern",
        "--trigger",
        trigger,
        "--fix",
        "the fix",
        "--json",
        *extra,
    )
    assert code == 0, err
    return json.loads(out)


def test_choices_match_the_library():
    assert cli.LESSON_TYPES == LESSON_TYPES
    assert set(cli.SCORER_NAMES) == set(SCORERS)


def test_add_list_show_forget_round_trip(capsys, home):
    made = add(capsys, "flask blueprint registered twice", "--tags", "flask,python")
    assert made["merged"] is False
    lesson = made["lesson"]
    assert lesson["tags"] == ["flask", "python"] and lesson["confidence"] == 0.5

    code, out, _ = run(capsys, "memory", "list", "--json")
    assert code == 0 and [x["id"] for x in json.loads(out)] == [lesson["id"]]
    code, out, _ = run(capsys, "memory", "list", "--tag", "rust", "--json")
    assert json.loads(out) == []
    code, out, _ = run(capsys, "memory", "list")
    assert lesson["id"] in out and "1 lesson(s)" in out

    code, out, _ = run(capsys, "memory", "show", lesson["id"], "--json")
    assert json.loads(out) == lesson

    code, out, _ = run(capsys, "memory", "forget", lesson["id"])
    assert code == 0 and f"forgot {lesson['id']}" in out
    assert (home / "memory.jsonl").read_text() == ""


def test_add_infers_tags_and_reports_a_merge(capsys):
    first = add(capsys, "aiosqlite connection not closed on shutdown")["lesson"]
    assert {"aiosqlite", "python", "sqlite", "asyncio"} <= set(first["tags"])
    again = add(capsys, "aiosqlite connection not closed on shutdown", "--dont")
    assert again["merged"] is False  # a dont lesson never merges into a do lesson
    code, out, _ = run(
        capsys,
        "memory",
        "add",
        "--type",
        "error_pattern",
        "--trigger",
        "aiosqlite connection not closed at shutdown",
        "--fix",
        "x",
    )
    assert code == 0 and out.startswith(f"merged into {first['id']}")


def test_missing_id_is_one_line_and_changes_nothing(capsys, corpus_home):
    before = (corpus_home / "memory.jsonl").read_bytes()
    for action in ("show", "forget"):
        code, out, err = run(capsys, "memory", action, "nosuchid")
        assert code == 1 and out == ""
        assert err == "cadillac: error: no lesson with id 'nosuchid' (see 'cadillac memory list')\n"
    assert (corpus_home / "memory.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "add", "--type", "guess", "--trigger", "t", "--fix", "f"),
        ("memory", "add", "--trigger", "t", "--fix", "f"),
        ("memory", "recall", "x", "--limit", "0"),
        ("memory", "recall", "x", "--scorer", "magic"),
        (
            "memory",
            "add",
            "--type",
            "dependency",
            "--trigger",
            "t",
            "--fix",
            "f",
            "--confidence",
            "2",
        ),
        ("frobnicate",),
    ],
)
def test_malformed_arguments_are_one_line_with_status_2(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("cadillac: error: ")


def test_a_home_that_is_a_file_or_missing_is_refused(capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    code, _, err = run(capsys, "--home", str(tmp_path / "afile"), "memory", "list")
    assert code == 1 and "is not a folder" in err and err.count("\n") == 1
    code, _, err = run(capsys, "memory", "stats", "--home", str(tmp_path / "missing"))
    assert code == 1 and "does not exist" in err
    code, _, _ = run(
        capsys,
        "memory",
        "add",
        "--home",
        str(tmp_path / "new"),
        "--type",
        "performance",
        "--trigger",
        "t",
        "--fix",
        "f",
    )
    assert code == 0 and (tmp_path / "new" / "memory.jsonl").exists()


def test_a_memory_path_that_is_a_folder_is_refused(capsys, home):
    (home / "memory.jsonl").mkdir()
    code, _, err = run(capsys, "memory", "list")
    assert code == 1 and err == f"cadillac: error: {home / 'memory.jsonl'} is not a file\n"


def test_home_comes_from_the_flag_then_the_environment_then_the_cwd(capsys, home, tmp_path):
    code, out, _ = run(capsys, "memory", "path")
    assert out.strip() == str(home / "memory.jsonl")
    code, out, _ = run(capsys, "--home", str(tmp_path / "x"), "memory", "path")
    assert out.strip() == str(tmp_path / "x" / "memory.jsonl")
    code, out, _ = run(capsys, "budgets", "--path")
    assert out.strip() == str(home / "phase_budgets.jsonl")


def test_recall_explain_and_json_on_the_real_corpus(capsys, corpus_home):
    task = "Build a Flask todo API with SQLite"
    code, out, _ = run(capsys, "memory", "recall", task, "--limit", "3", "--json")
    got = json.loads(out)
    assert code == 0 and len(got) == 3
    assert set(got[0]["parts"]) == {
        "relevance",
        "recency",
        "confidence",
        "usage",
        "stack",
        "build",
        "prior",
        "penalty",
        "penalties",
    }
    assert got[0]["scorer"] == "default" and got[0]["parts"]["relevance"] == 1.0
    code, out, _ = run(capsys, "memory", "recall", task, "--explain", "--limit", "3")
    assert code == 0 and "relev" in out and "prior" in out and "layers" in out
    assert got[0]["lesson"]["id"] in out
    code, out, _ = run(capsys, "memory", "recall", task, "--scorer", "seed", "--json")
    assert json.loads(out)[0]["scorer"] == "seed"


def test_stats_prints_the_seed_style_summary_line(capsys, corpus_home):
    code, out, _ = run(capsys, "memory", "stats")
    assert out.splitlines()[0] == (
        "403 lessons, 222 do / 181 dont, 98.8% reuse rate, avg confidence 0.945"
    )
    code, out, _ = run(capsys, "memory", "stats", "--json")
    assert json.loads(out)["count"] == 403


def test_budgets_table_and_json(capsys, corpus_home):
    code, out, _ = run(capsys, "budgets", "--tags", "python,flask")
    assert code == 0
    for word in ("plan", "deps", "scaffold", "build", "integrate", "validate", "history: p90"):
        assert word in out
    assert "rows used" in out and "tagged" in out
    code, out, _ = run(capsys, "budgets", "--tags", "python,flask", "--json")
    data = json.loads(out)
    assert data["build"]["rounds"] > data["build"]["default"]
    used = data["build"]["used"]  # the rows the budget came from, each findable by its ts
    assert len(used) == data["build"]["used_total"] >= data["build"]["samples"] >= 3
    assert all("python" in row["tags"] or "flask" in row["tags"] for row in used)
    code, out, _ = run(capsys, "budgets", "--json")
    assert all(b["reason"].startswith("default: no task tags") for b in json.loads(out).values())


def test_a_corrupt_line_is_a_warning_and_nothing_is_lost(capsys, home):
    path = home / "memory.jsonl"
    add(capsys, "first lesson about pytest")
    with path.open("a") as fh:
        fh.write("{broken\n")
    code, out, err = run(capsys, "memory", "list", "--json")
    assert code == 0 and len(json.loads(out)) == 1
    assert f"cadillac: warning: {path}:2: invalid line skipped" in err
    made = add(capsys, "second lesson about vitest")["lesson"]
    code, out, err = run(capsys, "memory", "forget", made["id"])  # a rewrite
    assert "moved 1 invalid line(s)" in err
    rejected = (home / "memory.jsonl.rejected.jsonl").read_text()
    assert json.loads(rejected)["raw"] == "{broken"


def test_forget_on_a_read_only_memory_is_one_line_and_changes_nothing(capsys, home):
    made = add(capsys, "a lesson about read-only memory files")["lesson"]
    path = home / "memory.jsonl"
    path.chmod(0o444)  # root, who may write anything, is refused too
    before = path.read_bytes()
    code, out, err = run(capsys, "memory", "forget", made["id"])
    assert code == 1 and out == ""
    assert err.startswith("cadillac: error: ") and err.count("\n") == 1
    assert "read-only" in err and "nothing was changed" in err and err.endswith(f"{path}\n")
    assert path.read_bytes() == before
    argv = ("memory", "add", "--type", "dependency", "--trigger", "t", "--fix", "f")
    code, out, err = run(capsys, *argv)
    assert code == 1 and err.count("\n") == 1 and "read-only" in err
    assert path.read_bytes() == before
    assert sorted(p.name for p in home.iterdir()) == ["memory.jsonl", "memory.jsonl.lock"]


def test_bare_group_lists_and_bare_command_shows_help(capsys, corpus_home):
    code, out, _ = run(capsys, "memory")
    assert code == 0 and "403 lesson(s)" in out
    code, out, _ = run(capsys)
    assert code == 2 and "usage: cadillac" in out  # no command: a usage mistake (issue 22)


def test_module_entry_point_and_fast_help():
    probe = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'pydantic', 'rich', 'litellm') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("cadillac ")


def test_an_api_base_belongs_to_the_model_it_was_given_for():
    from orchestrator.cli import build_parser
    from orchestrator.cli.improve import cycle_request

    def request(*argv):
        return cycle_request(build_parser().parse_args(["improve", *argv]))

    local = ["--model", "openai/local", "--api-base", "http://127.0.0.1:8080/v1"]
    hosted = request(*local, "--improver-model", "anthropic/claude-sonnet-4-5")
    assert hosted.builder.api_base == "http://127.0.0.1:8080/v1"
    assert (
        hosted.improver.model == "anthropic/claude-sonnet-4-5" and hosted.improver.api_base is None
    )
    both = request(*local, "--improver-model", "openai/big", "--improver-api-base", "http://h:1/v1")
    assert both.improver.api_base == "http://h:1/v1"
    same = request(*local)  # no improver given: the builder, with its server
    assert same.improver.model == "openai/local" and same.improver.api_base == local[3]
    fallbacks = request(
        *local, "--fallback-model", "openai/b", "--fallback-api-base", "http://b/v1"
    )
    assert [e.api_base for e in fallbacks.builder.endpoints()] == [local[3], "http://b/v1"]


def test_the_repeats_help_says_the_decision_rules_defaults():
    """The help is written out (building it must not import the rule's numpy); it says what
    the rule's defaults are."""
    from orchestrator.bench.decision import DecisionConfig
    from orchestrator.cli.args import cycle_options

    rule = DecisionConfig()
    (repeats,) = [a for a in cycle_options()._actions if "--repeats" in a.option_strings]
    assert f"default {rule.full_repeats} and {rule.confirm_repeats})" in repeats.help
    assert "after the full stage" in repeats.help and "confirmation" in repeats.help
