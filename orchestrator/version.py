"""Which cadillac this is, to the byte: the digest of its own source.

The version number says little between releases, and a Ray cluster's nodes must run the
same code as the coordinator (a build scored by other code is another measurement), so
nodes are compared by this digest: every file of cadillac's packages (its Python, its
prompts, its templates), in order, with their paths.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGES = ("orchestrator", "phases", "memory")
SUFFIXES = (".py", ".md", ".j2", ".toml", ".json")


@functools.cache
def source_digest() -> str:
    """A short hex digest of cadillac's source files as this interpreter imports them."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
