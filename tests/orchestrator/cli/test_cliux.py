"""Issue 22, the command line's items (6, 12, 16, 18, 21): each mistake is one
``cadillac: error:`` line with exit status 2, and what is printed says what happened."""

from __future__ import annotations

import shutil
import subprocess
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


# --- 12: the schedule's line works on a fresh home, and refuses what cron would lack ------------


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock is not installed")
def test_12_the_cron_line_runs_on_a_fresh_home_and_logs(tmp_path, capsys):
    home = tmp_path / "fresh 'home' $x"
    home.mkdir()  # as `cadillac schedule install` leaves it: no runs/ yet
    fake = _script(tmp_path / "bin" / "cadillac", 'echo "nightly ran: $*"')
    from orchestrator.nightly.schedule import ScheduleConfig, cron_line

    cfg = ScheduleConfig(home=home, cadillac=fake, args=["--model", "openai/gpt-4o"])
    command = cron_line(cfg).splitlines()[1].split(" ", 5)[5].replace("\\%", "%")
    done = subprocess.run(["/bin/sh", "-c", command], cwd="/", timeout=30, capture_output=True)
    assert done.returncode == 0, done.stderr
    log = (home / "runs" / "nightly-cron.log").read_text(encoding="utf-8")
    assert log.startswith("nightly ran: nightly --home ")


def test_12_schedule_print_refuses_a_home_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "no-such-home"
    code, out, err = run(
        capsys, "schedule", "print", "--home", str(missing), "--", "--model", "openai/gpt-4o"
    )
    line = one_error_line(err)
    assert code == 1 and str(missing) in line and "does not exist" in line and out == ""
    assert not missing.exists()


@pytest.mark.parametrize("kind", ["--cron", "--systemd"])
def test_12_schedule_refuses_a_nightly_without_a_model(home, capsys, monkeypatch, kind):
    monkeypatch.setenv("CADILLAC_MODEL", "openai/gpt-4o")  # here, but not in cron's env
    for action in ("print", "install"):
        code, out, err = run(capsys, "schedule", action, kind, "--", "--iterations", "2")
        line = one_error_line(err)
        assert code == 2 and "--model" in line and "CADILLAC_MODEL" in line and out == ""


@pytest.mark.parametrize(
    "model, key", [("openai/gpt-4o", "OPENAI_API_KEY"), ("anthropic/claude-x", "ANTHROPIC_API_KEY")]
)
def test_12_the_install_notes_name_the_key_of_the_models_provider(
    home, tmp_path, monkeypatch, capsys, model, key
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no systemctl
    from orchestrator.nightly.schedule import ScheduleConfig, install

    fake = _script(tmp_path / "bin" / "cadillac", "exit 0")
    lines = install(ScheduleConfig(home=home, cadillac=fake, args=["--model", model]), "systemd")
    notes = [x for x in lines if "provider key" in x]
    assert len(notes) == 1 and f"Environment={key}=" in notes[0], lines
    other = "ANTHROPIC_API_KEY" if key == "OPENAI_API_KEY" else "OPENAI_API_KEY"
    assert not any(other in x for x in lines)
