"""A scripted builder for the demo task: the model's turns for each phase, written by hand.

``policy(messages, tools)`` answers as a model would: it reads which phase the
system prompt is for and how many turns it has taken in this conversation,
and returns the next tool calls; for a reflection (no tools) it returns lesson
lines. It cites the first recalled lesson id it sees as applied. The demo's
recorded session (``session.llm.jsonl``) was made by running this policy
through a real build (``python examples/wordfreq/record.py``); the end-to-end
tests run it directly.
"""

from __future__ import annotations

import json
import re

TASK = (
    "Build a Python command-line tool `wordfreq` that prints the N most frequent words of a "
    "text file, with unit tests"
)

PLAN = {
    "summary": "wordfreq: count word frequencies in a text file and print the top N",
    "stack": ["python", "unittest"],
    "files": [
        "wordfreq.py",
        "tests/__init__.py",
        "tests/test_wordfreq.py",
        "sample.txt",
        "requirements.txt",
        "README.md",
    ],
    "dependencies": [],
    "install_command": "python -m pip install -r requirements.txt",
    "test_command": "python -m unittest discover -s tests -v",
    "run_command": "python wordfreq.py sample.txt --top 3",
}

STORIES = {
    "stories": [
        {
            "kind": "cli",
            "name": "top-three",
            "argv": ["python", "wordfreq.py", "sample.txt", "--top", "3"],
            "stdout": {"equals": "     4  the\n     2  dog\n     2  fox\n"},
        },
        {
            "kind": "cli",
            "name": "missing-file",
            "argv": ["python", "wordfreq.py", "no-such-file.txt"],
            "exit": 1,
            "stderr": {"contains": ["cannot read no-such-file.txt"]},
        },
        {
            "kind": "library",
            "name": "count-words",
            "language": "python",
            "module": "wordfreq",
            "function": "count_words",
            "args": ["The cat, the CAT! a dog."],
            "returns": {"the": 2, "cat": 2, "a": 1, "dog": 1},
        },
        {
            "kind": "library",
            "name": "top-words-ties",
            "language": "python",
            "module": "wordfreq",
            "function": "top_words",
            "args": [{"b": 2, "a": 2, "c": 1}, 2],
            "returns": [["a", 2], ["b", 2]],
        },
        {
            "kind": "files",
            "name": "sample-text",
            "path": "sample.txt",
            "expect": {"contains": ["quick brown fox"]},
        },
    ]
}
"""stories.json: what the finished wordfreq does, as a user (and a caller) sees it."""

STUB = '''"""wordfreq: the most frequent words of a text file."""

import argparse


def count_words(text):
    """Map each lower-cased word to its count."""
    raise NotImplementedError


def top_words(counts, n):
    """The n most frequent (word, count) pairs, ties broken alphabetically."""
    raise NotImplementedError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="wordfreq")
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=10)
    parser.parse_args(argv)
    return 0
'''

PROGRAM = '''"""wordfreq: the most frequent words of a text file."""

import argparse
import re
import sys
from collections import Counter

WORD = re.compile(r"[a-z']+")


def count_words(text):
    """Map each lower-cased word to its count."""
    return Counter(w.strip("'") for w in WORD.findall(text.lower()) if w.strip("'"))


def top_words(counts, n):
    """The n most frequent (word, count) pairs, ties broken alphabetically."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="wordfreq", description="Print the most frequent words.")
    parser.add_argument("path", help="a text file")
    parser.add_argument("--top", type=int, default=10, help="how many words (default 10)")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error("--top must be at least 1")
    try:
        with open(args.path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        print(f"wordfreq: cannot read {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    for word, count in top_words(count_words(text), args.top):
        print(f"{count:6d}  {word}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

TESTS = """import io
import unittest
from contextlib import redirect_stdout

from wordfreq import count_words, main, top_words


class CountTest(unittest.TestCase):
    def test_counts_are_case_insensitive(self):
        self.assertEqual(count_words("The the THE cat")["the"], 3)

    def test_punctuation_is_not_a_word(self):
        self.assertEqual(dict(count_words("cat, cat! dog.")), {"cat": 2, "dog": 1})

    def test_top_breaks_ties_alphabetically(self):
        counts = count_words("b a c a b")
        self.assertEqual(top_words(counts, 2), [("a", 2), ("b", 2)])


class MainTest(unittest.TestCase):
    def test_prints_the_top_words(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(main(["sample.txt", "--top", "1"]), 0)
        self.assertIn("the", out.getvalue())

    def test_missing_file_is_an_error(self):
        self.assertEqual(main(["no-such-file.txt"]), 1)


if __name__ == "__main__":
    unittest.main()
"""

SAMPLE = "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.\n"
README = "# wordfreq\n\n`python wordfreq.py FILE --top N` prints the N most frequent words.\n"


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def finish(summary: str, applied: list[str] | None = None) -> dict:
    return call("finish_phase", summary=summary, applied_lessons=applied or [])


def _lesson_ids(system: str) -> list[str]:
    return re.findall(r"^- \[([0-9a-f]{8})\]", system, flags=re.M)


TURNS = {
    "plan": lambda ids: [
        [
            call(
                "write_file",
                path="PLAN.md",
                content="# wordfreq\n\nOne module, wordfreq.py, "
                "with count_words, top_words and a CLI; unittest tests in tests/.\n",
            ),
            call("write_file", path="plan.json", content=json.dumps(PLAN, indent=2)),
            call("write_file", path="stories.json", content=json.dumps(STORIES, indent=2)),
        ],
        [finish("plan.json, stories.json and PLAN.md written")],
    ],
    "deps": lambda ids: [
        [call("write_file", path="requirements.txt", content="# standard library only\n")],
        [finish("no third-party dependencies", ids[:1])],
    ],
    "scaffold": lambda ids: [
        [
            call("write_file", path="wordfreq.py", content=STUB),
            call("write_file", path="tests/__init__.py", content=""),
            call("write_file", path="tests/test_wordfreq.py", content=TESTS),
            call("write_file", path="sample.txt", content=SAMPLE),
            call("write_file", path="README.md", content=README),
        ],
        [finish("all planned files exist")],
    ],
    "build": lambda ids: [
        [call("run", command="python -m unittest discover -s tests", timeout_s=60)],
        [call("write_file", path="wordfreq.py", content=PROGRAM)],
        [call("run", command="python -m unittest discover -s tests", timeout_s=60)],
        [finish("count_words, top_words and main implemented; tests pass", ids[:1])],
    ],
    "integrate": lambda ids: [
        [call("run", command="python wordfreq.py sample.txt --top 3")],
        [finish("the CLI prints the top words of sample.txt")],
    ],
    "validate": lambda ids: [
        [call("read_file", path="README.md")],
        [finish("tests and smoke run pass; README documents usage")],
    ],
}

REFLECTIONS = {
    "build": (
        "error_pattern | unittest discover finds no tests when tests/ lacks __init__.py | "
        "create tests/__init__.py so `python -m unittest discover -s tests` imports them\n"
        "tool_pattern | stubs that raise NotImplementedError make the first test run fail "
        "loudly | run the tests once after scaffolding to see what is still missing"
    ),
    "integrate": (
        "ANTI | reading a file without handling OSError in a CLI | a missing file "
        "crashes with a traceback instead of one clear error line"
    ),
}


def policy(messages: list[dict], tools: list[dict] | None):
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    if not tools:  # a reflection
        phase = re.search(r"^Phase: (\w+)", messages[-1]["content"], flags=re.M)
        return REFLECTIONS.get(phase.group(1) if phase else "", "NONE")
    phase = re.search(r"^# Phase: (\w+)", system, flags=re.M).group(1)
    turns = TURNS[phase](_lesson_ids(system))
    taken = sum(1 for m in messages if m["role"] == "assistant")
    return {"tool_calls": turns[min(taken, len(turns) - 1)]}


# ---------------------------------------------------------------- the next version: iterate
ITERATE = (
    "Add a --min-length N option to wordfreq: words shorter than N letters are not counted "
    "(default 1), with a unit test"
)

ITERATE_PLAN = {
    "summary": "wordfreq gains --min-length: words shorter than N letters are not counted",
    "stack": ["python", "unittest"],
    "files": ["wordfreq.py", "tests/test_wordfreq.py", "README.md"],
    "dependencies": [],
    "test_command": "python -m unittest discover -s tests -v",
    "run_command": "python wordfreq.py sample.txt --top 3 --min-length 4",
}

OLD_COUNT = '''def count_words(text):
    """Map each lower-cased word to its count."""
    return Counter(w.strip("'") for w in WORD.findall(text.lower()) if w.strip("'"))'''
NEW_COUNT = '''def count_words(text, min_length=1):
    """Map each lower-cased word of at least min_length letters to its count."""
    words = (w.strip("'") for w in WORD.findall(text.lower()))
    return Counter(w for w in words if w and len(w) >= min_length)'''
OLD_ARG = (
    '    parser.add_argument("--top", type=int, default=10, help="how many words (default 10)")\n'
)
NEW_ARG = (
    OLD_ARG
    + """    parser.add_argument(
        "--min-length", type=int, default=1, help="ignore words shorter than this (default 1)"
    )
"""
)
ITERATE_STORIES = {
    "stories": [
        *STORIES["stories"],
        {
            "kind": "cli",
            "name": "min-length",
            "argv": ["python", "wordfreq.py", "sample.txt", "--top", "3", "--min-length", "4"],
            "stdout": {"equals": "     1  brown\n     1  jumps\n     1  lazy\n"},
        },
    ]
}
"""The next version's stories: the first version's, and one for the new option."""

NEW_TEST = """    def test_short_words_can_be_left_out(self):
        self.assertEqual(dict(count_words("a bb ccc bb", min_length=2)), {"bb": 2, "ccc": 1})


class MainTest(unittest.TestCase):"""

ITERATE_TURNS = {
    "plan": [
        [
            call("read_file", path="wordfreq.py"),
            call("read_file", path="tests/test_wordfreq.py"),
        ],
        [
            call(
                "write_file",
                path="PLAN.md",
                content="# --min-length\n\ncount_words gains min_length; main gains "
                "--min-length; one new unit test; README documents the option.\n",
            ),
            call("write_file", path="plan.json", content=json.dumps(ITERATE_PLAN, indent=2)),
            call("write_file", path="stories.json", content=json.dumps(ITERATE_STORIES, indent=2)),
        ],
        [finish("plan.json lists the three files the change touches")],
    ],
    "deps": [[finish("no dependency changes")]],
    "scaffold": [[finish("every file to change exists")]],
    "build": [
        [
            call("edit_file", path="wordfreq.py", old=OLD_COUNT, new=NEW_COUNT),
            call("edit_file", path="wordfreq.py", old=OLD_ARG, new=NEW_ARG),
            call(
                "edit_file",
                path="wordfreq.py",
                old="top_words(count_words(text), args.top)",
                new="top_words(count_words(text, args.min_length), args.top)",
            ),
            call(
                "edit_file",
                path="tests/test_wordfreq.py",
                old="\n\nclass MainTest(unittest.TestCase):",
                new="\n" + NEW_TEST,
            ),
            call(
                "edit_file",
                path="README.md",
                old="prints the N most frequent words.\n",
                new="prints the N most frequent words.\n`--min-length M` leaves out words "
                "shorter than M letters.\n",
            ),
        ],
        [call("run", command="python -m unittest discover -s tests", timeout_s=60)],
        [finish("--min-length implemented and tested; the old tests still pass")],
    ],
    "integrate": [
        [call("run", command="python wordfreq.py sample.txt --top 3 --min-length 4")],
        [finish("the CLI prints only words of four letters or more")],
    ],
    "validate": [[finish("tests and smoke run pass")]],
}


def iterate_policy(messages: list[dict], tools: list[dict] | None):
    """The model's turns for ITERATE, a change to the project ``policy`` built."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    if not tools:
        return "NONE"
    phase = re.search(r"^# Phase: (\w+)", system, flags=re.M).group(1)
    turns = ITERATE_TURNS[phase]
    taken = sum(1 for m in messages if m["role"] == "assistant")
    return {"tool_calls": turns[min(taken, len(turns) - 1)]}
