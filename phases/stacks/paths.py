"""Where a profile's files are: a path of its folder, relative to the workspace.

A leaf the profiles share (the package's ``__init__`` imports them, so they cannot import
it back)."""

from __future__ import annotations


def in_root(root: str, path: str) -> str:
    """``path`` of a profile's folder ``root``, relative to the workspace."""
    return path if root in ("", ".") else f"{root.rstrip('/')}/{path}"
