"""Policies loaded by import path (``scripted:tests.fakes.policies:NAME``) in tests."""


def last_user_words(messages, tools):
    """Answers with the number of words in the last user message."""
    last = [m for m in messages if m["role"] == "user"][-1]["content"]
    return f"{len(last.split())} words"


def sleeper(messages, tools):
    """Starts a long command carrying the task's ``ref-…`` marker, then waits on it, so a
    test can find the command's processes by their command line and stop the build."""
    import re

    if not tools:
        return "NONE"
    task = " ".join(str(m.get("content")) for m in messages[:2])
    mark = re.search(r"ref-[0-9a-f]{12}", task).group(0)
    command = f"python3 -c 'import time; time.sleep(900)' {mark}"
    return {"tool_calls": [{"name": "run", "arguments": {"command": command, "timeout_s": 900}}]}
