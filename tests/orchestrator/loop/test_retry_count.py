"""A model's failed attempts count as retried only when another attempt followed
(issue 22 item 17: a refused key was shown as "(1 retried)")."""

from __future__ import annotations

import pytest

from orchestrator.llm.client import LLMClient, LLMConfig, ModelError
from tests.fakes.openai_server import FakeOpenAI

HELLO = [{"role": "user", "content": "hello"}]


def _client(server: FakeOpenAI, **settings) -> LLMClient:
    config = LLMConfig(
        model="openai/fake",
        api_base=server.api_base,
        api_key="k",
        wait_initial_s=0.01,
        wait_max_s=0.02,
        **settings,
    )
    return LLMClient(config)


def test_an_error_that_is_not_retried_is_not_counted_as_a_retry():
    with FakeOpenAI([{"status": 401}]) as server:
        client = _client(server)
        with pytest.raises(ModelError):
            client.complete(HELLO)
    assert len(server.requests) == 1
    assert client.totals.failed_attempts == 0


def test_each_retried_attempt_counts_once_and_the_last_failed_one_is_not_a_retry():
    with FakeOpenAI([{"status": 500}, {"status": 500}]) as server:
        client = _client(server, max_attempts=2)
        with pytest.raises(ModelError):
            client.complete(HELLO)
    assert len(server.requests) == 2
    assert client.totals.failed_attempts == 1


def test_a_retry_that_succeeds_is_counted():
    with FakeOpenAI([{"status": 429}, {"content": "hi"}]) as server:
        client = _client(server)
        assert client.complete(HELLO).content == "hi"
    assert client.totals.failed_attempts == 1 and client.totals.calls == 1
