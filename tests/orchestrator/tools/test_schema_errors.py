"""Issue 22 item 15: each kind of pydantic error in a tool call reads as what it is."""

from __future__ import annotations

import pytest

from orchestrator.tools.schema import CallError, parse_arguments


def refusal(name: str, raw: str) -> str:
    with pytest.raises(CallError) as caught:
        parse_arguments(name, raw)
    return str(caught.value)


def test_15_a_bad_enum_value_names_the_valid_values():
    message = refusal("knowledge", '{"action": "nope"}')
    assert "must be of type string, not string" not in message
    assert "'action' must be one of" in message and '"digest"' in message
    assert '"rejected"' in message and 'not "nope"' in message


def test_15_an_optional_enum_names_its_values_too():
    message = refusal("memory", '{"action": "save", "polarity": "maybe"}')
    assert '\'polarity\' must be one of "do" | "dont", not "maybe"' in message


def test_15_a_list_item_of_the_wrong_type_names_the_item():
    message = refusal("memory", '{"action": "save", "tags": ["python", 3]}')
    assert "item 1 of 'tags' must be of type string, not number" in message


def test_15_a_wrong_type_still_says_both_types():
    message = refusal("run", '{"command": "ls", "timeout_s": "10"}')
    assert "'timeout_s' must be of type number, not string" in message


def test_15_the_signature_shows_an_enums_values():
    message = refusal("knowledge", "{}")
    assert "missing required argument 'action'" in message
    assert '{"action": "digest" | "search"' in message
