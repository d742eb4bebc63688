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


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-3-5-haiku", "ANTHROPIC_API_KEY")],
)
def test_a_missing_api_key_is_one_line_naming_it_before_a_run_folder_is_made(
    home, capsys, monkeypatch, model, variable
):
    monkeypatch.delenv(variable, raising=False)
    assert main(["build", "a word counter", "--model", model]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cadillac: error: ")
    assert f"model {model} needs {variable}, which is not set" in err[0]
    assert not (home / "runs").exists()


def test_a_fallback_without_its_key_is_refused_too(home, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    primary = register_script("never-fallback", _never_called)
    argv = ["build", "a word counter", "--model", primary]
    assert main([*argv, "--fallback-model", "anthropic/claude-3-5-haiku"]) == 1
    assert "needs ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not (home / "runs").exists()


def test_models_that_need_no_key_are_not_refused(home, monkeypatch):
    from orchestrator.llm.client import LLMConfig
    from orchestrator.loop.agent import check_keys

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CADILLAC_API_KEY", raising=False)
    check_keys(LLMConfig(model="scripted:anything"))
    check_keys(LLMConfig(model="openai/local", api_base="http://127.0.0.1:8000/v1"))
    check_keys(LLMConfig(model="openai/gpt-4o-mini", api_key="given"))
    check_keys(LLMConfig(model="ollama/llama3"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set")
    check_keys(LLMConfig(model="openai/gpt-4o-mini"))
