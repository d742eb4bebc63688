"""The dashboard's fixtures: a home with real builds in it, a real ``cadillac serve`` over
it, and a real Chromium (Playwright) that reads what it serves."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.llm.backends import register_script
from tests.conftest import isolate
from tests.fakes.improve_policies import wordfreq

TOKEN = "t" * 32
ROOT = Path(__file__).resolve().parents[3]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time (links not followed)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="session")
def built_home(tmp_path_factory, shared_cache) -> Iterator[Path]:
    """A home with two real builds: the demo's wordfreq build and its next version
    (``iterate``: an enhance run with a patch), made once for the run (once per xdist
    worker). Tests may add runs to it; :func:`build_ids` names these two first."""
    root = tmp_path_factory.mktemp("served")
    with pytest.MonkeyPatch.context() as mp:
        home = isolate(mp, root, shared_cache)
        register_script("serve-wordfreq", wordfreq.policy)
        register_script("serve-wordfreq-iterate", wordfreq.iterate_policy)
        assert main(["build", wordfreq.TASK, "--model", "scripted:serve-wordfreq"]) == 0
        (build_id,) = [p.name for p in (home / "runs").iterdir()]
        iterate = ["iterate", build_id, wordfreq.ITERATE]
        assert main([*iterate, "--model", "scripted:serve-wordfreq-iterate"]) == 0
        yield home


def build_ids(home: Path) -> list[str]:
    """The home's build runs, oldest first."""
    return sorted(p.name for p in (home / "runs").iterdir() if (p / "task.json").is_file())


def first_two(home: Path) -> tuple[str, str]:
    """The shared home's build and its iterate run (tests may have added others since)."""
    build, iterate = build_ids(home)[:2]
    return build, iterate


class Served:
    """A ``cadillac serve`` process over a home, and its URL (with and without the token)."""

    def __init__(self, home: Path):
        self.home = home
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "serve", "--port", "0", "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        line = self.process.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/)\?token=(\S+)", line)
        if match is None:
            self.process.kill()
            raise AssertionError(f"cadillac serve printed {line!r}; {self.process.stderr.read()}")
        self.base, self.port, self.token = match.group(1), int(match.group(2)), match.group(3)
        self.url = f"{self.base}?token={self.token}"

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


@pytest.fixture
def served(built_home) -> Iterator[Served]:
    server = Served(built_home)
    yield server
    server.stop()


class Browser:
    """A Chromium page that counts what went wrong on it: console errors, uncaught page
    errors, dialogs (an ``alert`` a model's script would open) and failed requests."""

    def __init__(self, browser, base: str, shots: Path):
        self.context = browser.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.shots = shots
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("requestfailed", self._failed)

    def _failed(self, request) -> None:
        # a stream the page closed when its build ended is aborted by the page itself
        if not ("/stream?" in request.url and request.failure == "net::ERR_ABORTED"):
            self.errors.append(f"request failed: {request.url} {request.failure}")

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path


@pytest.fixture
def chromium(served, tmp_path) -> Iterator[Browser]:
    """A browser on the served dashboard, already holding the token's cookie. Screenshots go
    to $CADILLAC_SERVE_SHOTS when set (to keep them), else under the test's folder."""
    from playwright.sync_api import sync_playwright

    from phases.stories.browser import ARGS, find_chromium, only_to

    executable = find_chromium()
    assert executable, "Chromium is needed for the dashboard's tests (CI installs it)"
    shots = Path(os.environ.get("CADILLAC_SERVE_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    # Chromium's socket paths must fit in 107 bytes: its temporary folder is a short one
    scratch = tempfile.mkdtemp(prefix="cs-", dir="/tmp")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=executable,
            args=[*ARGS, *only_to(served.base)],
            timeout=60_000,
            env=os.environ | {"TMPDIR": scratch},
        )
        try:
            b = Browser(browser, served.base, shots)
            response = b.page.goto(served.url)
            assert response is not None and response.ok, response and response.status
            assert "token=" not in b.page.url  # the token is now a cookie, not in the URL
            yield b
            b.context.close()
        finally:
            browser.close()
            shutil.rmtree(scratch, ignore_errors=True)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
