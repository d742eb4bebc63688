"""An option given to ``memory`` or ``skills`` before its command: the error says where the
option goes, and the command it suggests runs (issue 22 items 19 and 21)."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.support import one_error_line, run


def _suggested(line: str) -> list[str]:
    found = re.search(r"e\.g\. '([^']*)'", line)
    assert found, line
    argv = shlex.split(found.group(1))
    assert argv[0] == "cadillac", line
    return argv[1:]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("memory", "--limit", "2", "list"), "--limit 2 goes after the command 'list'"),
        (("memory", "--limit", "2"), "memory needs a command before its options"),
        (("memory", "--json", "stats"), "--json goes after the command 'stats'"),
        (("skills", "--json", "list"), "--json goes after the command 'list'"),
        (("skills", "--all"), "skills needs a command before its options"),
    ],
)
def test_the_hint_says_where_the_option_goes_and_its_command_runs(capsys, home, argv, says):
    code, out, err = run(capsys, *argv)
    line = one_error_line(err)
    assert code == 2 and out == "" and says in line, line
    assert "unrecognized arguments" not in line
    suggested = _suggested(line)
    assert suggested[0] == argv[0] and set(argv) <= set(suggested), suggested
    code, out, err = run(capsys, *suggested)
    assert code == 0, err


def test_an_option_the_command_does_not_take_gets_no_example(capsys, home):
    code, _, err = run(capsys, "memory", "--bogus", "list")
    line = one_error_line(err)
    assert code == 2 and "options go after the command 'list'" in line and "e.g." not in line


@pytest.mark.parametrize("tag", ["", "  "])
def test_an_empty_tag_is_refused_in_one_line(capsys, home, tag):
    code, out, err = run(capsys, "memory", "list", "--tag", tag)
    assert code == 2 and out == "" and "argument --tag: is empty" in one_error_line(err)
