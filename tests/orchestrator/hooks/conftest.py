"""Plugins of the hooks tests: modules written under tmp_path and importable from there, and
entry points of distributions made there (a ``.dist-info`` folder is all importlib.metadata
reads)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest


class Plugins:
    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch):
        self.folder = folder
        self.names: list[str] = []
        folder.mkdir()
        monkeypatch.syspath_prepend(str(folder))

    def module(self, name: str, source: str) -> str:
        """A module ``name`` with ``source`` (dedented; ``hookimpl`` is imported for it)."""
        head = "from orchestrator.hooks import hookimpl\n\n"
        (self.folder / f"{name}.py").write_text(head + textwrap.dedent(source))
        self.names.append(name)
        return name

    def entry_point(self, dist: str, name: str, value: str) -> None:
        """A distribution ``dist`` with one entry point of ``cadillac.plugins``."""
        # the folder's name is the distribution's normalized name (what importlib.metadata
        # tells distributions apart by), then the version
        info = self.folder / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[cadillac.plugins]\n{name} = {value}\n")


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    made = Plugins(tmp_path / "plugins", monkeypatch)
    yield made
    for name in made.names:
        sys.modules.pop(name, None)
