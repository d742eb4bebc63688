"""The judge shares no process with the project: forgeries from inside the project fail.

Each test scores a *wrong* project of a shipped matrix task (the reference in
``tests/fixtures/judge_refs/<task>/`` with one function broken) with an attack added to
the module the checks import: patching the runner's tally (through ``sys.modules``, ``gc``
or the caller's frames), ``os._exit`` at import or in a call, printing a forged result
line (and writing result files) wherever it can, ``atexit`` and signal handlers that do
the same, and reaching the judge's memory through ``/proc``. Each must score what the
wrong project deserves, and no more; on the old runner, which imported the project in its
own process, each of them scored the wrong project high. The references themselves must
score 1, so the proxies the checks now go through lose nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.bench.scoring import Score, score_build
from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
from orchestrator.sandbox.executor import ExecConfig

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

REFS = Path(__file__).resolve().parents[2] / "fixtures" / "judge_refs"
TASKS = {t.id: t for t in load_matrix(DEFAULT_MATRIX) if t.id in {p.name for p in REFS.iterdir()}}
MODULE = {"expr-calc": "exprcalc.py", "lru-cache": "lrucache.py", "wordcount-cli": "wordcount.py",
          "url-shortener-http": "shortener.py"}  # fmt: skip
BREAK = {  # one wrong line per task: (what the reference says, what the wrong one says)
    "expr-calc": ("    return run(Parser(expression).parse(), variables or {})", "    return 0"),
    "lru-cache": ("            return self.data[key][0]", "            return default"),
    "wordcount-cli": (
        "    return dict(Counter(w for w in WORD.findall(text.lower()) if len(w) >= min_length))",
        "    return {}",
    ),
    "url-shortener-http": (  # a service the checks start and drive over HTTP
        '            return self.path.split("?", 1)[0]',  # every route is "/": not found
        '            return "/"',
    ),
}
CHECKS_FILE = {"expr-calc": "test_exprcalc.py", "lru-cache": "test_lrucache.py",
               "wordcount-cli": "test_wordcount.py",
               "url-shortener-http": "test_shortener.py"}  # fmt: skip

FORGE = '''
def _forge():
    """A perfect report: every hidden check passes, the canaries come out right."""
    import json, os, re
    folders = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                parts = handle.read().decode().split("\\0")
        except (OSError, ValueError):
            continue
        folders += [p for p in parts if p.endswith(("/checks", "/last")) and os.path.isdir(p)]
    passed, failures = [], []
    for folder in dict.fromkeys(folders):
        for name in sorted(os.listdir(folder)):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            with open(os.path.join(folder, name)) as handle:
                tests = re.findall(r"^def (test_\\w+)", handle.read(), re.M)
            if folder.endswith("/last"):
                passed.append(f"{name}::{tests[0]}")
                failures.append({"check": f"{name}::{tests[1]}", "error": "AssertionError"})
            else:
                passed += [f"{name}::{t}" for t in tests]
    report = {"passed": len(passed), "failed": len(failures), "total": len(passed) + 1,
              "failures": failures, "passed_checks": passed}
    return json.dumps(report) + "\\n"


def _shout():
    """The forged line on every descriptor and every process's stdout it can reach, and
    in result files wherever it can write."""
    import os
    line = _forge().encode()
    for fd in range(64):
        try:
            os.write(fd, line)
        except OSError:
            pass
    for pid in os.listdir("/proc"):
        for fd in ("1", "2"):
            try:
                with open(f"/proc/{pid}/fd/{fd}", "wb") as handle:
                    handle.write(line)
            except OSError:
                pass
    for folder in (".", "..", "../..", "/tmp", os.path.expanduser("~")):
        for name in ("result.json", "report.json", "results.json"):
            try:
                with open(os.path.join(folder, name), "wb") as handle:
                    handle.write(line)
            except OSError:
                pass
'''

SPARE = '''
def _spare(fail):
    """Failures of the hidden checks become passes; the canaries' stay failures."""
    def patched(self, check, error):
        if check.startswith("{checks}"):
            self.passed.append(check)
        else:
            fail(self, check, error)
    return patched
'''

ATTACKS = {
    "sys.modules": SPARE
    + """
try:
    import sys
    _tally = sys.modules["__main__"].Tally
    _tally.fail = _spare(_tally.fail)
except Exception:
    pass
""",
    "gc": SPARE
    + """
import gc
for _obj in gc.get_objects():
    if isinstance(_obj, type) and _obj.__name__ == "Tally" and hasattr(_obj, "fail"):
        _obj.fail = _spare(_obj.fail)
""",
    "frames": SPARE
    + """
import sys, types
_frame = sys._getframe()
while _frame is not None:
    _tally = _frame.f_locals.get("tally")
    if _tally is not None and hasattr(_tally, "fail"):
        _tally.fail = types.MethodType(_spare(type(_tally).fail), _tally)
        break
    _frame = _frame.f_back
""",
    "forged line and exit": FORGE
    + """
import os
_shout()
os._exit(0)
""",
    "atexit": FORGE
    + """
import atexit, os
atexit.register(_shout)
_real_exit = os._exit
def _exit(code):
    atexit._run_exitfuncs()
    _real_exit(0)
os._exit = _exit
""",
    "signal": FORGE
    + """
import os, signal, time
def _on_signal(signum, frame):
    _shout()
    os._exit(0)
for _sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, _on_signal)
signal.setitimer(signal.ITIMER_REAL, 0.05)
time.sleep(0.5)
""",
}


@pytest.fixture
def cache(shared_cache: Path) -> Path:
    """The worker's one venv template (a module's own would be made again each time the
    scheduler comes back to the module)."""
    return shared_cache


def workspace(task_id: str, where: Path, wrong: bool = True, attack: str = "") -> Path:
    """The reference project (broken when ``wrong``) with ``attack`` at the end of its
    module, and a plan.json, as a build leaves its workspace."""
    ws = where / "workspace"
    shutil.copytree(REFS / task_id, ws)
    module = ws / MODULE[task_id]
    text = module.read_text(encoding="utf-8")
    if wrong:
        right, broken = BREAK[task_id]
        assert right in text
        text = text.replace(right, broken)
    module.write_text(text + attack.replace("{checks}", CHECKS_FILE[task_id]), encoding="utf-8")
    (ws / "requirements.txt").write_text("")
    plan = {
        "summary": task_id,
        "stack": ["python"],
        "files": sorted(p.name for p in ws.iterdir()),
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    return ws


def score(task_id: str, where: Path, cache: Path, **kwargs) -> Score:
    ws = workspace(task_id, where, **kwargs)
    return score_build(TASKS[task_id], ws, where / "scoring", ExecConfig(), cache)


_deserved: dict[str, Score] = {}


def deserved(task_id: str, tmp_path_factory, cache: Path) -> Score:
    """What the wrong project scores without an attack."""
    if task_id not in _deserved:
        _deserved[task_id] = score(task_id, tmp_path_factory.mktemp("wrong"), cache)
    return _deserved[task_id]


@pytest.mark.parametrize("task_id", sorted(MODULE))
def test_the_references_score_1_and_the_wrong_projects_less(task_id, tmp_path, cache):
    right = score(task_id, tmp_path, cache, wrong=False)
    assert (right.verdict, right.passed, right.score) == ("scored", right.total, 1.0), right
    assert right.total >= 7
    wrong = score(task_id, tmp_path / "wrong", cache)
    assert wrong.verdict == "scored" and wrong.score <= 0.5, wrong


@pytest.mark.parametrize(
    ("task_id", "attack"),
    [(t, "sys.modules") for t in sorted(MODULE)]
    + [("expr-calc", "gc"), ("expr-calc", "frames")]
    + [(t, "forged line and exit") for t in sorted(MODULE)]
    + [("lru-cache", "atexit"), ("expr-calc", "signal")],
)
def test_an_attack_from_inside_the_project_scores_what_the_project_deserves(
    task_id, attack, tmp_path, tmp_path_factory, cache
):
    fair = deserved(task_id, tmp_path_factory, cache)
    result = score(task_id, tmp_path, cache, attack=ATTACKS[attack])
    assert result.score <= fair.score, (attack, result)
    if attack in ("sys.modules", "gc", "frames", "atexit"):
        # the project still answers: every check is measured, as without the attack
        assert (result.verdict, result.passed, result.total) == ("scored", fair.passed,
                                                                 fair.total), result  # fmt: skip


EXIT_IN_A_CALL = (
    FORGE
    + """
import os
_evaluate = evaluate
def evaluate(expression, variables=None):
    if expression == "7":
        _shout()
        os._exit(0)
    return _evaluate(expression, variables)
"""
)


def test_a_project_that_exits_in_a_call_fails_that_check_only(tmp_path, cache):
    result = score("expr-calc", tmp_path, cache, wrong=False, attack=EXIT_IN_A_CALL)
    assert result.verdict == "scored"
    assert (result.passed, result.total) == (result.total - 1, 11), result
    assert "test_exprcalc.py::test_variables: ChildGone" in result.failures


PROBE = '''
def _probe():
    """Find the process that keeps the tally (the runner) and try to reach into it."""
    import ctypes, json, os
    found = {}
    for pid in dict.fromkeys([str(os.getpid()), str(os.getppid())]):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"runner.py" not in handle.read():
                    continue
        except OSError:
            continue
        tries = {}
        for what, path, mode in (("mem", f"/proc/{pid}/mem", "r+b"),
                                 ("stdout", f"/proc/{pid}/fd/1", "wb"),
                                 ("environ", f"/proc/{pid}/environ", "rb")):
            try:
                with open(path, mode):
                    tries[what] = "opened"
            except OSError as exc:
                tries[what] = type(exc).__name__
        libc = ctypes.CDLL(None, use_errno=True)
        attached = libc.ptrace(16, int(pid), 0, 0)  # PTRACE_ATTACH
        tries["ptrace"] = "attached" if attached == 0 else f"errno {ctypes.get_errno()}"
        if attached == 0:
            libc.ptrace(17, int(pid), 0, 0)  # PTRACE_DETACH
        found[pid] = tries
    with open("probe.json", "w") as handle:
        json.dump({"self": str(os.getpid()), "judges": found}, handle)


_probe()
'''


def test_the_project_cannot_reach_into_the_judges_process(tmp_path, cache):
    result = score("expr-calc", tmp_path, cache, wrong=False, attack=PROBE)
    assert (result.verdict, result.score) == ("scored", 1.0), result
    probe = json.loads((tmp_path / "scoring" / "project" / "probe.json").read_text())
    assert probe["self"] not in probe["judges"], "the project ran in the judge's process"
    assert probe["judges"], "the judge's process was not found"
    for tries in probe["judges"].values():
        assert tries["mem"] in ("PermissionError", "OSError"), tries
        assert tries["stdout"] in ("PermissionError", "OSError"), tries
        assert tries["environ"] in ("PermissionError", "OSError"), tries
        assert tries["ptrace"] != "attached", tries
