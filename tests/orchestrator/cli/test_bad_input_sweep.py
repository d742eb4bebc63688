"""What a second sweep of every command with bad input found (after issue 11's list).

Each test failed before its fix: an empty ``--home`` meant the current folder, an empty
lesson id was looked up, an unknown option of a command pointed to the root's help, and an
``--api-base`` given to a model that calls no server was dropped without a word.
"""

from __future__ import annotations

import pytest

from orchestrator.cli import main
from orchestrator.llm.backends import register_script
from tests.support import one_error_line, run


@pytest.mark.parametrize(
    "argv",
    [("--home", "", "memory", "list"), ("memory", "stats", "--home", "  "), ("runs", "--home=")],
)
def test_an_empty_home_is_refused_not_taken_for_here(home, tmp_path, capsys, argv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and one_error_line(err) and "--home: is empty" in err, err


@pytest.mark.parametrize("command", ["show", "forget"])
@pytest.mark.parametrize("given", ["", "   "])
def test_an_empty_lesson_id_says_so(home, capsys, command, given):
    code, out, err = run(capsys, "memory", command, given)
    assert code == 2 and one_error_line(err) and "is empty: give a lesson id" in err, err


@pytest.mark.parametrize(
    ("argv", "helps"),
    [
        (("budgets", "--phase", "plan"), "cadillac budgets --help"),
        (("runs", "show", "x", "--bad"), "cadillac runs show --help"),
        (("memory", "stats", "--wide"), "cadillac memory stats --help"),
        (("report", "--since", "1d"), "cadillac report --help"),
    ],
)
def test_an_unknown_option_points_to_its_own_commands_help(home, capsys, argv, helps):
    code, out, err = run(capsys, *argv)
    assert code == 2 and one_error_line(err) and "unrecognized arguments" in err
    assert f"(see '{helps}')" in err, err


def test_an_api_base_for_a_model_that_calls_no_server_is_said_to_be_ignored(home, capsys):
    register_script("sweep-silent", lambda messages, tools: "NONE")
    argv = ["build", "a tool", "--model", "scripted:sweep-silent", "--api-base", "http://a/v1"]
    main([*argv, "--json"])
    err = capsys.readouterr().err
    assert "warning: --api-base is ignored: scripted:sweep-silent is built into" in err, err
    main(["build", "a tool", "--model", "scripted:sweep-silent", "--json"])
    assert "--api-base" not in capsys.readouterr().err
