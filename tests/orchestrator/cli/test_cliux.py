"""Issue 22, the command line's items (6, 12, 16, 18, 21): each mistake is one
``cadillac: error:`` line with exit status 2, and what is printed says what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import one_error_line, run

BAD_URLS = ["http://[::1", "http://[oops]:80/v1", ""]
URL_OPTIONS = [
    ["build", "--model", "openai/x", "--api-base", "{url}", "a task"],
    [
        "build",
        "--model",
        "openai/x",
        "--fallback-model",
        "openai/y",
        "--fallback-api-base",
        "{url}",
        "a task",
    ],
    ["schedule", "print", "--", "--model", "openai/x", "--api-base", "{url}"],
    ["schedule", "print", "--", "--model", "openai/x", "--improver-api-base", "{url}"],
]


def nothing_made(home: Path) -> None:
    runs = home / "runs"
    assert not runs.exists() or not list(runs.iterdir()), sorted(runs.iterdir())


# --- 6: a malformed URL is one line, exit 2, wherever a URL is taken ----------------------------


@pytest.mark.parametrize("argv", URL_OPTIONS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("url", BAD_URLS)
def test_6_a_malformed_url_is_one_line_and_exit_2(home, capsys, argv, url):
    code, out, err = run(capsys, *[url if a == "{url}" else a for a in argv])
    line = one_error_line(err)
    assert code == 2 and repr(url) in line and "api-base" in line
    nothing_made(home)


def test_6_a_malformed_ipv6_url_in_the_environment_is_one_line(home, capsys, monkeypatch):
    monkeypatch.setenv("CADILLAC_API_BASE", "http://[::1")
    code, out, err = run(capsys, "build", "--model", "openai/x", "a task")
    assert code != 0 and "'http://[::1' is not a URL" in one_error_line(err)
    nothing_made(home)
