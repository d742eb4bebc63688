"""Where a profile's files are (a path of its folder, relative to the workspace), and what
its ``package.json`` says.

A leaf the profiles share (the package's ``__init__`` imports them, so they cannot import
it back)."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.sandbox.files import read_regular
from orchestrator.sandbox.installs import InstallError, subfolder


def in_root(root: str, path: str) -> str:
    """``path`` of a profile's folder ``root``, relative to the workspace."""
    return path if root in ("", ".") else f"{root.rstrip('/')}/{path}"


def manifest(workspace: Path, root: str) -> dict:
    """``root``'s ``package.json`` as a dict; {} when it is missing, not a regular file, not
    JSON, or below a folder that is a link (the host follows no link the model made)."""
    try:
        folder = subfolder(workspace, root)
        data = json.loads(read_regular(folder / "package.json"))
    except (InstallError, ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}
