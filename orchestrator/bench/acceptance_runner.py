"""Run a build's hidden acceptance checks and print one JSON line: which passed, which failed.

A benchmark task is scored by the share of its acceptance checks that pass on the built
project. The scorer (:mod:`orchestrator.bench.scoring`) runs this script from the
project's folder, in the sandbox, on cadillac's own interpreter with ``-I -S``
(``python -I -S runner.py --python .venv/bin/python --key-file KEY CHECKS...``).

What this module decides, and why:

* **No project code runs in this process.** This is the judge: the checks, their
  assertions, the tally and the result line live here, and it imports the standard
  library only (``-I -S``: no ``site``, no ``.pth``, no ``PYTHONPATH``). A module a check
  imports that is not the standard library, or that the project's root defines, is a
  proxy (:class:`ProjectFinder`, :mod:`judge_rpc`): attributes, calls and operators on it
  are answered by a child process, started with the project's interpreter (``--python``,
  also ``sys.executable`` for the checks that run the project's command line), which
  imports the real code and sends back plain data. A check that must do there what a
  proxy cannot (an asyncio server on the project's loop, a doctest run, object identity)
  asks a helper: ``from cadillac_judge import in_project``. So a project cannot patch the
  runner, its tally or its assertions: they are in a process it never ran in.
* **The child cannot reach this process.** Before the child starts, this process makes
  itself not dumpable (``prctl(PR_SET_DUMPABLE, 0)``), so no process of the sandbox's
  user may ptrace it or open its ``/proc/<pid>/mem``, ``fd/`` or ``environ``; the child
  gets ``/dev/null`` for its standard streams and no descriptor of ours but its two pipes.
  A child that exits, crashes, garbles the protocol or outlives a check's time limit fails
  the check it was in (:class:`Judge`), even one that swallowed the error; the next
  check gets a fresh child, and what was imported by name is found again there.
* **Only this process can sign the result.** ``--key-file`` names a file holding the
  scorer's secret; it is read and removed before any project code runs, and the result
  line carries the report's HMAC under it. Any process of the sandbox can write to the
  scorer's pipe (through ``/proc/1/fd/1``, bubblewrap's own descriptor), so a line without
  the right HMAC is somebody else's and the scorer ignores it. Without a key (a direct
  run) the line is the bare report.
* Checks are pytest-style plain ``test_*`` functions (passing means returning without
  raising, so bare ``assert`` works) or ``unittest.TestCase`` methods; each function and
  each method is one check. Skipped tests are left out of the total; a failing subtest
  fails its method. Python 3.9 and later, standard library only.
* A test file that fails to import is one failed check, ``<file>::import``: one broken
  file costs its share and no more, and the error says why.
* Every check has a time limit (``signal`` timer, main thread on Unix; elsewhere none), so a
  hung server or an endless loop fails one check instead of the whole run.
* What the checks print, and what the child prints while it answers, goes to a buffer
  (and file descriptor 1 to ``/dev/null``, for the subprocesses they start), so the
  result line is the last line this process writes. The checks see ``sys.argv`` without
  our arguments, and each check starts in the workspace root.
* Exit status: 0 when every check passed, 1 when one failed or none were found (an empty
  folder means a broken task, not a perfect build), 2 when the folder does not exist, 3
  when the judge cannot take its key or protect itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import importlib.machinery
import importlib.util
import inspect
import io
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
import types
import unittest
from pathlib import Path

ERROR_CHARS = 300
DEFAULT_TIMEOUT_S = 60.0
RPC_FILE = Path(__file__).resolve().with_name("judge_rpc.py")
PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3


def load_rpc() -> types.ModuleType:
    """The wire to the project (:mod:`judge_rpc`), from beside this file, not from sys.path."""
    if "judge_rpc" in sys.modules:
        return sys.modules["judge_rpc"]
    spec = importlib.util.spec_from_file_location("judge_rpc", str(RPC_FILE))
    module = importlib.util.module_from_spec(spec)
    sys.modules["judge_rpc"] = module
    spec.loader.exec_module(module)
    return module


rpc = load_rpc()


class CheckTimeout(BaseException):
    """A check ran past its time limit (a BaseException, so ``except Exception`` cannot eat it)."""


class Tally:
    """The checks run so far: how many passed and what failed."""

    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failures: list[dict[str, str]] = []

    def ok(self, check: str) -> None:
        self.passed.append(check)

    def fail(self, check: str, error: str) -> None:
        self.failures.append({"check": check, "error": error[:ERROR_CHARS]})

    def report(self) -> dict:
        failed = len(self.failures)
        return {
            "passed": len(self.passed),
            "failed": failed,
            "total": len(self.passed) + failed,
            "failures": self.failures,
            "passed_checks": self.passed,
        }


class TimeLimit:
    """Arms a real-time timer that raises CheckTimeout; does nothing where signals cannot."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.enabled = (
            seconds > 0
            and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread()
        )
        self.previous = None

    def _expired(self, signum, frame) -> None:
        raise CheckTimeout(f"the check ran past its time limit of {self.seconds:g} s")

    def __enter__(self) -> TimeLimit:
        if self.enabled:
            self.previous = signal.signal(signal.SIGALRM, self._expired)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.disarm()
            signal.signal(signal.SIGALRM, self.previous)

    def arm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def disarm(self) -> None:
        if self.enabled:
            signal.setitimer(signal.ITIMER_REAL, 0)


class Judge:
    """The child process that imports the project, started when a check first needs it.

    One child serves all the check files; when it ends (an ``os._exit``, a crash, a check's
    time limit), the check it ended in fails, and the next check gets a fresh child."""

    def __init__(self, python: str, root: str) -> None:
        self.python, self.root = python, root
        self.peer = None
        self.proc: subprocess.Popen | None = None
        self.may_start = True
        self.ended = ""

    def live(self):
        if self.peer is not None and not self.peer.dead:
            return self.peer
        if not self.may_start:
            raise rpc.ChildGone(self.ended or "the project's process ended")
        self.may_start = False
        read_child, to_child = os.pipe()
        from_child, write_parent = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [self.python, str(RPC_FILE), "--serve", str(read_child), str(write_parent)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(read_child, write_parent),
                cwd=self.root,
            )
        except OSError as exc:
            os.close(to_child)
            os.close(from_child)
            raise rpc.ChildGone(f"the project's process could not start: {exc}") from None
        finally:
            os.close(read_child)
            os.close(write_parent)
        peer = rpc.Peer(rpc.Wire(from_child, to_child), judge=True)
        peer.on_death = lambda: self._end(peer, (from_child, to_child))
        self.peer = peer
        return peer

    def _end(self, peer, fds) -> None:
        self.ended = f"the project's process ended: {peer.dead}"
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def begin(self) -> None:
        """A check starts: it may start a child when the last one ended before it."""
        self.ended = ""
        self.may_start = self.peer is None or bool(self.peer.dead)

    def end(self) -> str:
        """Why the child ended during the check ("" when it did not)."""
        return self.ended

    def close(self) -> None:
        if self.peer is not None:
            self.peer.die("the checks are over")

    def helper(self, name: str, *args):
        peer = self.live()
        return peer.request("helper", n=name, a=peer.encode(args))


class ProjectFinder:
    """Imports of the project and of the packages it installed, as proxies (never loaded here).

    Anything the judge's own Python (``-I -S``: the standard library only) can import is
    imported as usual, unless the project's root has a module or package of that name."""

    def __init__(self, judge: Judge, root: str) -> None:
        self.judge, self.root = judge, Path(root)

    def proxied(self, top: str) -> bool:
        if (self.root / f"{top}.py").is_file() or (self.root / top / "__init__.py").is_file():
            return True
        if top in sys.builtin_module_names:
            return False
        return importlib.machinery.PathFinder.find_spec(top, sys.path) is None

    def find_spec(self, name, path=None, target=None):
        if not self.proxied(name.partition(".")[0]):
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return rpc.ProxyModule(spec.name)

    def exec_module(self, module) -> None:
        root = self.judge.live().request("import", n=module.__name__)
        object.__setattr__(root, "_j_path", (module.__name__,))
        object.__setattr__(root, "_j_judge", self.judge)
        module.__dict__["_j_root"] = root


def in_project(name: str, *args):
    """Do ``name`` (a helper of :data:`judge_rpc.HELPERS`) in the project's process; for a
    check that must do there what proxies cannot (an asyncio server, a doctest run)."""
    if JUDGE is None:
        raise RuntimeError("no judge is running")
    return JUDGE.helper(name, *args)


JUDGE: Judge | None = None


def protect() -> str:
    """Keep the project's processes out of this one: not dumpable, so no process of the
    same user may ptrace it or open its ``/proc/<pid>/mem``, ``fd`` or ``environ``; "" or
    why it could not."""
    if not sys.platform.startswith("linux"):
        return ""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0):
            return f"prctl failed (errno {ctypes.get_errno()})"
    except (OSError, AttributeError, ImportError) as exc:
        return f"prctl is not there: {exc}"
    return ""


def take_key(path: str) -> bytes:
    """The scorer's secret for this run, read and removed before any project code runs."""
    with open(path, "rb") as handle:
        key = handle.read()
    os.unlink(path)
    if len(key) < 16:
        raise OSError("the key is too short")
    return key


def signed(report: dict, key: bytes | None) -> str:
    """The result line: the report, and (with a key) its HMAC, which only this process and
    the scorer can make."""
    text = json.dumps(report)
    if key is None:
        return text
    mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"judge": mac, "report": text})


def describe(exc_info, test_file: Path) -> str:
    """``Type: message``, then the innermost line of the test file that raised it."""
    exc_type, exc, tb = exc_info
    message = str(exc).strip()
    text = f"{exc_type.__name__}: {message}" if message else exc_type.__name__
    frames = [f for f in traceback.extract_tb(tb) if f.filename == str(test_file)]
    if frames:
        text += f" [{test_file.name}:{frames[-1].lineno}: {(frames[-1].line or '').strip()}]"
    return text


class CheckResult(unittest.TestResult):
    """Records unittest outcomes per test method and re-arms the time limit around each."""

    def __init__(self, limit: TimeLimit, test_file: Path) -> None:
        super().__init__()
        self.limit, self.test_file = limit, test_file
        self.started: list[str] = []
        self.errors_by_id: dict[str, str] = {}
        self.skipped_ids: set[str] = set()

    def _record(self, test, text: str) -> None:
        test = getattr(test, "test_case", test)  # a subtest fails the method it belongs to
        self.errors_by_id.setdefault(test.id(), text)

    def startTest(self, test) -> None:
        self.limit.arm()
        begin_check()
        self.started.append(test.id())
        super().startTest(test)

    def stopTest(self, test) -> None:
        super().stopTest(test)
        gone = end_check()
        if gone:
            self._record(test, f"ChildGone: {gone}")
        self.limit.arm()  # the stretch until the next test: class teardown and setup

    def addError(self, test, err) -> None:
        super().addError(test, err)
        self._record(test, describe(err, self.test_file))

    def addFailure(self, test, err) -> None:
        super().addFailure(test, err)
        self._record(test, describe(err, self.test_file))

    def addSubTest(self, test, subtest, err) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._record(subtest, describe(err, self.test_file))

    def addSkip(self, test, reason) -> None:
        super().addSkip(test, reason)
        self.skipped_ids.add(test.id())

    def addUnexpectedSuccess(self, test) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected success of a test marked expectedFailure")


def import_file(path: Path, index: int):
    """Import a test file by path under a name no other test file shares."""
    name = f"_cadillac_acceptance_{index}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def takes_no_arguments(function) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.default is not p.empty or p.kind in variadic for p in parameters)


def begin_check() -> None:
    if JUDGE is not None:
        JUDGE.begin()


def end_check() -> str:
    return JUDGE.end() if JUDGE is not None else ""


def run_function(function, name: str, test_file: Path, limit: TimeLimit, tally: Tally) -> None:
    begin_check()
    try:
        limit.arm()
        try:
            outcome = function()
            if inspect.iscoroutine(outcome):
                asyncio.run(outcome)
        finally:
            limit.disarm()
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: B036 - a check that calls sys.exit fails; it does not end the run
        tally.fail(name, describe(sys.exc_info(), test_file))
    else:
        gone = end_check()  # a check that swallowed the child's end still fails
        if gone:
            tally.fail(name, f"ChildGone: {gone}")
        else:
            tally.ok(name)


def run_test_case(cls, prefix: str, test_file: Path, limit: TimeLimit, tally: Tally) -> None:
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
    result = CheckResult(limit, test_file)
    try:
        limit.arm()  # covers setUpClass before the first test starts
        suite.run(result)
    except CheckTimeout:  # in setUpClass or tearDownClass, which unittest does not guard
        tally.fail(f"{prefix}::{cls.__name__}", describe(sys.exc_info(), test_file))
    finally:
        limit.disarm()
    started = set(result.started)
    for test_id in result.started:
        method = test_id.rsplit(".", 1)[-1]
        if test_id in result.errors_by_id:
            tally.fail(f"{prefix}::{cls.__name__}::{method}", result.errors_by_id[test_id])
        elif test_id not in result.skipped_ids:
            tally.ok(f"{prefix}::{cls.__name__}::{method}")
    for test_id, text in result.errors_by_id.items():
        if test_id not in started:  # setUpClass or a class skip gone wrong: the class fails once
            tally.fail(f"{prefix}::{cls.__name__}::{test_id.rsplit(' ', 1)[0]}", text)


def run_file(path: Path, prefix: str, index: int, limit: TimeLimit, tally: Tally) -> None:
    root = os.getcwd()
    begin_check()
    try:
        limit.arm()
        try:
            module = import_file(path, index)
        finally:
            limit.disarm()
        gone = end_check()
        if gone:
            raise rpc.ChildGone(gone)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: B036 - an import that exits or times out is a failed check
        tally.fail(f"{prefix}::import", describe(sys.exc_info(), path))
        os.chdir(root)
        return
    for name, obj in list(vars(module).items()):
        if type(obj) is rpc.Proxy or isinstance(obj, types.ModuleType):
            continue  # the project's, or a module
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # imported from elsewhere: not this file's check
        if inspect.isclass(obj) and issubclass(obj, unittest.TestCase):
            run_test_case(obj, prefix, path, limit, tally)
        elif inspect.isfunction(obj) and name.startswith("test_") and takes_no_arguments(obj):
            run_function(obj, f"{prefix}::{name}", path, limit, tally)
        os.chdir(root)


def run_folders(folders: list[Path], timeout_s: float) -> Tally:
    """Run every ``test_*.py`` under each folder, folder after folder, in sorted order."""
    tally = Tally()
    index = 0
    with TimeLimit(timeout_s) as limit:
        for folder in folders:
            for path in sorted(folder.rglob("test_*.py")):
                prefix = path.relative_to(folder).as_posix()
                run_file(path.resolve(), prefix, index, limit, tally)
                index += 1
    return tally


@contextlib.contextmanager
def quiet_fd1():
    """Point file descriptor 1 at /dev/null; yield a stream on the original stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    real = os.fdopen(saved, "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        yield real
    finally:
        real.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run acceptance checks; print one JSON line.")
    parser.add_argument(
        "folders", nargs="+", help="folders of test_*.py files, run in the order given"
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the project's interpreter: the child that imports the project, and "
        "sys.executable for the checks (default: this one)",
    )
    parser.add_argument(
        "--key-file",
        help="a file holding the scorer's secret, removed at once; the result line is "
        "signed with it",
    )
    parser.add_argument(
        "--check-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds each check may take (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    global JUDGE
    try:
        key = take_key(args.key_file) if args.key_file else None
    except OSError as exc:
        print(f"the judge cannot take its key: {exc}", file=sys.stderr, flush=True)
        return 3
    unsafe = protect()
    if unsafe:
        print(f"the judge cannot protect itself: {unsafe}", file=sys.stderr, flush=True)
        return 3
    folders = [Path(f) for f in args.folders]
    missing = [f for f in folders if not f.is_dir()]
    if missing:
        print(f"no such folder: {missing[0]}", file=sys.stderr, flush=True)
        print(signed(Tally().report(), key), flush=True)
        return 2
    root = os.getcwd()
    python = os.path.abspath(args.python) if os.sep in args.python else args.python
    JUDGE = Judge(python, root)
    sys.meta_path.insert(0, ProjectFinder(JUDGE, root))
    sys.modules["cadillac_judge"] = sys.modules[
        __name__
    ]  # checks: from cadillac_judge import in_project
    sys.executable = python  # the checks run the project's command line with its interpreter
    sys.argv = [sys.argv[0]]
    captured = io.StringIO()
    with quiet_fd1() as real_stdout:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            tally = run_folders(folders, args.check_timeout)
            JUDGE.close()
        os.chdir(root)
        report = tally.report()
        real_stdout.write(signed(report, key) + "\n")
    # Checks may leave threads that print; what they print from here on goes to the buffer.
    sys.stdout = sys.stderr = captured
    return 0 if report["total"] and not report["failed"] else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # threads or servers a check left running must not keep the process alive
