"""Shared fixtures: every test runs with its home (and current directory) in tmp_path."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from tests.npm_registry import npm_registry, npm_server  # noqa: F401  (fixtures for every test)
from tests.wheel_index import wheel_index, wheel_server  # noqa: F401

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_LESSONS = FIXTURES / "cadillac_corpus" / "lessons.jsonl"
CORPUS_BUDGETS = FIXTURES / "cadillac_corpus" / "budget_history.jsonl"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Keep an ``xdist_group``'s tests on one worker. pytest-xdist's ``--dist loadgroup``
    names a test's group in its node id (``...@group``) through an attribute pytest 9 no
    longer reads, so the groups were ignored and the two nights of the nightly tests ran
    once on each worker; the id is set here where pytest keeps it."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import coerce_node_id

    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(sorted(names))}")


# A suite started with SIGINT ignored (`nohup make test &`) would hand that to every
# process it starts, and the tests that stop cadillac with Ctrl-C would wait in vain:
# Python's own handler again, which the processes started here get back as the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One CADILLAC_CACHE_DIR for the whole run: its template virtual environment is made
    once, not once per test (a test that checks the cache itself gives its own). Under
    pytest-xdist the workers share it (the template is made under a file lock)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder every worker's own base folder is in
    cache = base / "cadillac-cache"
    cache.mkdir(exist_ok=True)
    return cache


def isolate(mp: pytest.MonkeyPatch, root: Path, cache: Path) -> Path:
    """Point cadillac's home, global scope, temporary files and current folder into
    ``root`` (made here), with the run's shared template cache; the home is returned.

    Temporary files (worktrees of improve trials, sandbox scratch folders) go under
    ``root`` too, in this process and in the subprocesses it starts.
    """
    home = root / "home"
    home.mkdir(parents=True)
    scratch = root / "tmp"
    scratch.mkdir()
    mp.setenv("CADILLAC_HOME", str(home))
    # the global scope of notes and skills (~/.config/cadillac) is under root too
    mp.setenv("CADILLAC_GLOBAL_DIR", str(root / "global"))
    mp.setenv("XDG_CONFIG_HOME", str(root / "xdg"))
    mp.setenv("TMPDIR", str(scratch))
    mp.setenv("CADILLAC_CACHE_DIR", str(cache))
    mp.setattr(tempfile, "tempdir", str(scratch))
    mp.chdir(root)
    return home


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache: Path) -> Path:
    """A fresh CADILLAC_HOME for each test; the tests write nowhere else."""
    return isolate(monkeypatch, tmp_path, shared_cache)


@pytest.fixture
def corpus_home(home: Path) -> Path:
    """The home holding copies of the earlier system's real memory and budget files."""
    (home / "memory.jsonl").write_bytes(CORPUS_LESSONS.read_bytes())
    (home / "phase_budgets.jsonl").write_bytes(CORPUS_BUDGETS.read_bytes())
    return home
