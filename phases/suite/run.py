"""cadillac's own run of a project's test command, in the build's sandbox, with reports.

The command is the project's (found in its configuration, or given by the user); what
cadillac adds only makes the runners write down what they did, into a fresh folder of
the run's that the command may write (and nothing else of the host):

* ``PYTEST_ADDOPTS`` gains ``--junitxml`` (pytest reads the variable however it is
  started: directly, from a Makefile recipe, from a script);
* ``PYTHONPATH`` starts with :mod:`phases.suite.hook`'s folder and ``CADILLAC_TEST_LOG``
  names its log, so every unittest result reports each test;
* a ``go test`` command gets ``-json``;
* the whole output goes to a file as well (``tee``), since the executor keeps only the
  start and end of a long output and a suite's per-test lines are in the middle;
* Python's bytecode goes to a cache of the command's own (``PYTHONPYCACHEPREFIX`` in the
  sandbox's fresh ``/tmp``): a ``.pyc`` in the tree is checked by the source's size and
  modification second, so a module edited twice within a second to the same size was
  run as it was before the edit (a change that broke a test passed the suite).

The folder is made empty before the run and read after it without following links
(:mod:`phases.suite.results`); the command's processes are gone by then (a PID
namespace per command). The project's code runs in the same processes as its runner, so
a determined change could still write a report of its own: the judgement also holds the
change to the tests its files hold (:mod:`phases.suite.inventory`), and a change to what
decides which tests run is recorded and shown (:mod:`phases.suite.gate`).
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

from orchestrator.sandbox.files import remove_tree
from phases.base import PhaseContext
from phases.suite.results import JUNIT, OUTPUT, UNITTEST, SuiteResults, read_results

HOOK = Path(__file__).parent / "hook" / "sitecustomize.py"
TAIL_LINES = 30
DEFAULT_TIMEOUT_S = 1800.0
"""The first run's time limit: a real project's suite can take many minutes."""


def instrumented(command: str, folder: Path) -> str:
    """``command`` as cadillac runs it: its reports written into ``folder``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    if words[:2] == ["go", "test"] and "-json" not in words:
        command = "go test -json " + command.split("test", 1)[1].lstrip()
    junit = shlex.quote(f"--junitxml={folder / JUNIT}")  # pytest splits the variable as sh
    hook, log = shlex.quote(str(folder / "hook")), shlex.quote(str(folder / UNITTEST))
    setup = (
        f'export PYTEST_ADDOPTS="${{PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }}"{shlex.quote(junit)}'
        "' -o junit_family=xunit1'; "
        f'export PYTHONPATH={hook}"${{PYTHONPATH:+:$PYTHONPATH}}"; '
        f"export CADILLAC_TEST_LOG={log}; "
        "export NO_COLOR=1 CARGO_TERM_COLOR=never FORCE_COLOR=0; "
        "export PYTHONPYCACHEPREFIX=/tmp/cadillac-pycache; "
    )
    output = shlex.quote(str(folder / OUTPUT))
    return f"set -o pipefail; {{ {setup}{command}\n}} 2>&1 | tee {output}"


def run_suite(
    ctx: PhaseContext, command: str, folder: Path, timeout_s: float = DEFAULT_TIMEOUT_S
) -> SuiteResults:
    """Run ``command`` in the build's sandbox with its reports going to ``folder`` (made
    afresh, removed after it is read); what its reports say."""
    remove_tree(folder)
    (folder / "hook").mkdir(parents=True)
    shutil.copyfile(HOOK, folder / "hook" / "sitecustomize.py")
    started = time.perf_counter()
    try:
        result = ctx.run(instrumented(command, folder), timeout_s=timeout_s, writable=[folder])
        found = read_results(folder, result.output)
    finally:
        remove_tree(folder)
    if result.stopped:  # Ctrl-C or a stop of the build: not a result of the suite's
        raise KeyboardInterrupt
    found.command = command
    found.exit_code = result.exit_code if result.exit_code is not None else -1
    found.timed_out = bool(result.timed_out)
    found.seconds = round(time.perf_counter() - started, 3)
    lines = [line for line in result.output.splitlines() if line.strip()]
    found.tail = "\n".join(lines[-TAIL_LINES:])[-4000:]
    return found
