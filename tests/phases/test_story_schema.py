"""The story format: every surface parses, bad stories are refused, and stories fixed at
plan time can be added to but never dropped or changed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from phases.stories.schema import Stories, weakened

STORIES = {
    "stories": [
        {
            "kind": "cli",
            "name": "counts-words",
            "argv": ["wordfreq", "--top", "2", "$(rm -rf ~)"],
            "stdin": "a a b",
            "stdout": {"contains": ["a 2"]},
        },
        {
            "kind": "http",
            "name": "adds-a-todo",
            "start": ["python", "-m", "app"],
            "requests": [
                {"method": "POST", "path": "/todos", "json_body": {"title": "x"}, "status": 201},
                {"path": "/todos", "expect": {"json": {"0.title": "x"}}},
            ],
        },
        {
            "kind": "library",
            "name": "parses",
            "language": "python",
            "module": "semver",
            "function": "parse",
            "args": ["1.2.3"],
            "returns": [1, 2, 3],
        },
        {
            "kind": "browser",
            "name": "shows-the-list",
            "steps": [{"action": "type", "selector": "#new", "text": "milk"}],
            "expect_text": ["milk"],
        },
        {"kind": "files", "name": "writes-a-report", "path": "out/report.txt",
         "expect": {"matches": "^total: \\d+"}},
    ]
}  # fmt: skip


def test_every_surface_parses_and_argv_stays_a_list_of_values():
    stories = Stories.model_validate(STORIES)
    assert [s.kind for s in stories.stories] == ["cli", "http", "library", "browser", "files"]
    assert stories.stories[0].argv[-1] == "$(rm -rf ~)"  # a value, never a shell line


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"kind": "cli", "name": "x", "argv": []}, "at least 1"),
        ({"kind": "shell", "name": "x"}, "does not match any of the expected tags"),
        ({"kind": "files", "name": "x", "path": "../etc/passwd", "expect": {}}, "inside"),
        ({"kind": "cli", "name": "Bad Name", "argv": ["x"]}, "should match pattern"),
        ({"kind": "cli", "name": "x", "argv": ["x"], "shell": "rm -rf /"}, "Extra inputs"),
    ],
)
def test_bad_stories_are_refused(change, says):
    with pytest.raises(ValidationError, match=says):
        Stories.model_validate({"stories": [change]})


def test_names_are_unique():
    twice = {"stories": [STORIES["stories"][0], STORIES["stories"][0]]}
    with pytest.raises(ValidationError, match="unique: counts-words"):
        Stories.model_validate(twice)


def test_a_later_phase_may_add_stories_never_drop_or_change_one():
    fixed = Stories.model_validate(STORIES)
    more = Stories.model_validate(
        {"stories": [*STORIES["stories"], {"kind": "cli", "name": "help", "argv": ["x", "-h"]}]}
    )
    assert weakened(fixed, more) == []
    dropped = Stories.model_validate({"stories": STORIES["stories"][1:]})
    assert weakened(fixed, dropped) == ["story 'counts-words' was dropped"]
    softer = dict(STORIES["stories"][0], stdout={"contains": []})
    changed = Stories.model_validate({"stories": [softer, *STORIES["stories"][1:]]})
    assert weakened(fixed, changed) == ["story 'counts-words' was changed"]
