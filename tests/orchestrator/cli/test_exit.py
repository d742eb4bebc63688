"""How the program ends: a reader that left is a normal end, and a late Ctrl-C spoils nothing.

Both run ``python -m orchestrator`` as a real process: what is tested is the exit status
and stderr a shell sees.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus"


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)}


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "stats"],
        ["memory", "list"],
        ["memory", "list", "--json"],
        ["memory", "recall", "Build a Flask todo API with SQLite"],
        ["budgets"],
        ["runs", "list"],
        ["--help"],
    ],
)
def test_a_closed_stdout_is_a_normal_end(home, command):
    (home / "memory.jsonl").write_bytes((CORPUS / "lessons.jsonl").read_bytes())
    (home / "phase_budgets.jsonl").write_bytes((CORPUS / "budget_history.jsonl").read_bytes())
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator", *command],
            env=env(home),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_ctrl_c_while_the_program_ends_is_ignored(home):
    """The command has returned and printed; the interpreter is joining a thread when the
    Ctrl-C comes. The result stands: status 0, and no "Exception ignored" noise."""
    script = (
        "import threading, time\n"
        "import orchestrator.cli as cli\n"
        "def linger():\n"
        "    while threading.main_thread().is_alive():\n"
        "        time.sleep(0.01)\n"
        "    print('waiting', flush=True)\n"  # main has returned: the interpreter waits
        "    time.sleep(3)\n"
        "def main(argv=None):\n"
        "    threading.Thread(target=linger).start()\n"
        "    print('done', flush=True)\n"
        "    return 0\n"
        "cli.main = main\n"
        "cli.entry()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "done\n"
    assert proc.stdout.readline() == "waiting\n"  # main has returned; the thread lingers
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Exception ignored" not in err and "Traceback" not in err
