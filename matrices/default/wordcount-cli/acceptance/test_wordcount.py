"""Hidden checks for wordcount-cli: the two functions and the command line."""

import os
import subprocess
import sys
import tempfile

import wordcount

ROOT = os.getcwd()
TEXT = "The cat and the hat. THE END! Don't stop; the cat's hat, the 2 cats.\n"


def _run(args, stdin=""):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "wordcount.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
    )


def _write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_count_words_lowercases_and_keeps_apostrophes():
    counts = wordcount.count_words(TEXT)
    assert counts["the"] == 5
    assert counts["cat"] == 1
    assert counts["cat's"] == 1
    assert counts["don't"] == 1
    assert counts["2"] == 1
    assert sum(counts.values()) == 15


def test_count_words_min_length():
    counts = wordcount.count_words("a bb ccc bb a dddd", min_length=2)
    assert counts == {"bb": 2, "ccc": 1, "dddd": 1}


def test_top_words_orders_by_count_then_word():
    counts = {"pear": 2, "apple": 2, "fig": 5, "kiwi": 1}
    assert wordcount.top_words(counts, 3) == [("fig", 5), ("apple", 2), ("pear", 2)]
    assert wordcount.top_words(counts, 10)[-1] == ("kiwi", 1)


def test_cli_reads_stdin_and_prints_total():
    proc = _run(["--top", "2"], stdin=TEXT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["the\t5", "hat\t2", "TOTAL\t15"]


def test_cli_combines_files():
    with tempfile.TemporaryDirectory() as folder:
        first = _write(folder, "a.txt", "red green red\n")
        second = _write(folder, "b.txt", "green RED blue\n")
        proc = _run([first, second])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["red\t3", "green\t2", "blue\t1", "TOTAL\t6"]


def test_cli_default_top_is_ten_and_min_length_applies():
    words = " ".join(f"w{i:02d}" for i in range(15)) + " a a a"
    proc = _run(["--min-length", "2"], stdin=words)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:10] == [f"w{i:02d}\t1" for i in range(10)]
    assert lines[10:] == ["TOTAL\t15"]


def test_cli_missing_file_fails_cleanly():
    proc = _run([os.path.join(ROOT, "no-such-file.txt")])
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.lstrip().startswith("error:")
