"""A copy of the fixture tree in tmp_path, with what git would not keep added at test time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.index import build_index

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "index_tree"

# Files the fixture's .gitignore rules (or the walk's own rules) leave out, so they cannot
# be committed with it: each test's copy gets them here.
LEFT_OUT = {
    "debug.log": "ignored by *.log",
    "scratch/notes.py": "def scratch(): ...\n",
    "web/generated.js": "function generated() {}\n",
    "node_modules/left/index.js": "function dependency() {}\n",
    ".venv/lib/site.py": "def venv(): ...\n",
    "src/shop/__pycache__/models.py": "def cached(): ...\n",
    "src/shop.egg-info/PKG-INFO.py": "def egg(): ...\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURE, root)
    for rel, text in LEFT_OUT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def built(tree: Path, out: Path):
    return build_index(tree, out)
