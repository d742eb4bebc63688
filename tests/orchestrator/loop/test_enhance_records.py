"""What an enhance build's records say: its kind, each step's phase, the time of work done
without the model, and the reflection reading the phase's own transcript."""

from __future__ import annotations

import json

import pytest

from orchestrator.cli import main
from orchestrator.loop.reflect import transcript
from tests.orchestrator.loop.test_enhance import enhance, user_repo  # noqa: F401, F811

pytestmark = pytest.mark.e2e


def test_an_enhance_runs_records_say_what_it_is_and_where_each_command_ran(home, user_repo, capsys):  # noqa: F811
    code, summary = enhance(home, user_repo, "honest")
    assert code == 0, summary["reason"]
    run = home / "runs" / summary["run_id"]
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]

    # the deps phase cadillac did alone keeps the install made before the first phase,
    # whose time is recorded (it was 0.0 s when its installs took 3 to 27 s)
    deps = next(p for p in summary["phases"] if p["phase"] == "deps")
    assert deps["rounds"] == 0 and "installed before the first phase" in deps["check"]
    end = next(e for e in events if e["kind"] == "phase_end" and e["phase"] == "deps")
    assert end["data"]["seconds"] == deps["seconds"]
    installed = next(e for e in events if e["kind"] == "baseline_deps")
    assert installed["data"]["passed"] and installed["data"]["seconds"] > 0
    first = next(e for e in events if e["kind"] == "baseline_tests")
    # the run's time counts the install and the first run made before the first phase
    phases = sum(p["seconds"] for p in summary["phases"])
    assert summary["seconds"] >= phases + installed["data"]["seconds"] + first["data"]["seconds"]

    # every command of a phase's check names its phase; only the start's baseline has none
    baseline = next(i for i, e in enumerate(events) if e["kind"] == "baseline_tests")
    commands = [e for e in events[baseline + 1 :] if e["kind"] == "command"]
    assert commands and all(e["phase"] in {p["phase"] for p in summary["phases"]} for e in commands)
    assert {"build", "validate"} <= {e["phase"] for e in commands}

    capsys.readouterr()
    assert main(["runs", "list", "--json", "--home", str(home)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in rows if r["run_id"] == summary["run_id"]] == ["enhance"]


def test_the_reflection_reads_the_phases_own_transcript():
    call = {"id": "c1", "function": {"name": "write_file", "arguments": '{"path": "a.py"}'}}
    messages = [
        {"role": "system", "content": "the instructions"},
        {"role": "user", "content": "Task: the opening"},
        {"role": "assistant", "content": "I will write it", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "wrote a.py (3 bytes)"},
        {"role": "user", "content": "CHECK FAILED: a.py does not compile"},
    ]
    lines = transcript(messages)
    assert lines == [
        "- said: I will write it",
        "- write_file(path='a.py') -> wrote a.py (3 bytes)",
        "- CHECK FAILED: a.py does not compile",
    ]
    assert not any("instructions" in line or "opening" in line for line in lines)
