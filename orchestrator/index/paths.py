"""Relative paths of the index (``a/b/c.py``, always ``/``) taken apart with string operations.

Every record names its file by such a path, and relations, tests and the digest take
tens of thousands of them apart per build; ``pathlib`` objects cost several times more
than these few string methods, which is the difference for an incremental build.
"""

from __future__ import annotations


def name(path: str) -> str:
    """``a/b/c.py`` -> ``c.py``."""
    return path.rsplit("/", 1)[-1]


def parent(path: str) -> str:
    """``a/b/c.py`` -> ``a/b``; ``c.py`` -> ``""`` (the root)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def stem(path: str) -> str:
    """``a/b/c.test.ts`` -> ``c.test``; a leading dot is part of the name."""
    base = name(path)
    dot = base.rfind(".")
    return base[:dot] if dot > 0 else base


def suffix(path: str) -> str:
    base = name(path)
    dot = base.rfind(".")
    return base[dot:] if dot > 0 else ""


def folders(path: str) -> list[str]:
    """``a/b/c.py`` -> ``["a", "b"]``."""
    return path.split("/")[:-1]


def join(folder: str, rel: str) -> str:
    return f"{folder}/{rel}" if folder and rel else (folder or rel)
