"""What a build checks before its first model call and before it makes a run folder: the
home's files can be written, the model's key is set (issue 22 items 7 and 17)."""

from __future__ import annotations

import pytest

from orchestrator.cli import main
from orchestrator.llm.backends import register_script


def _never_called(messages, tools):
    raise AssertionError("the model was called")


@pytest.mark.parametrize("name", ["phase_budgets.jsonl", "memory.jsonl"])
def test_a_read_only_store_is_refused_before_the_model_is_called_and_no_run_is_made(
    home, capsys, name
):
    store = home / name
    store.write_text("")
    store.chmod(0o444)
    model = register_script("never-read-only", _never_called)
    assert main(["build", "a word counter", "--model", model]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "cadillac: error: read-only, nothing was changed (make it writable, e.g. chmod u+w, "
        f"and retry): {store}"
    ]
    assert not (home / "runs").exists()
