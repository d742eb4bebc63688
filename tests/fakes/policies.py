"""Policies loaded by import path (``scripted:tests.fakes.policies:NAME``) in tests."""


def last_user_words(messages, tools):
    """Answers with the number of words in the last user message."""
    last = [m for m in messages if m["role"] == "user"][-1]["content"]
    return f"{len(last.split())} words"
