"""Rust paths: a ``use`` tree spelled out into plain paths, and which file a path names.

``use crate::a::{b, c::{D, E as F}, self};`` becomes ``crate::a::b``, ``crate::a::c::D``,
``crate::a::c::E`` and ``crate::a``. A file's module path follows Cargo's layout: the
crate's ``src/`` folder is ``crate``, ``src/a/b.rs`` and ``src/a/b/mod.rs`` are
``crate::a::b``, ``lib.rs`` and ``main.rs`` are the crate itself.
"""

from __future__ import annotations

import re

from orchestrator.index import paths

MAX_PATHS = 64
_ALIAS = re.compile(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*")


def expand_use(tree: str) -> list[str]:
    """The plain paths a use tree names (globs and aliases dropped), at most ``MAX_PATHS``."""
    out: list[str] = []
    _expand("", "".join(_ALIAS.sub("", tree).split()), out, 0)
    return out[:MAX_PATHS]


def _expand(prefix: str, tree: str, out: list[str], depth: int) -> None:
    if len(out) >= MAX_PATHS or depth > 8:
        return
    brace = tree.find("{")
    if brace < 0:
        path = (prefix + tree).removesuffix("::*").removesuffix("::self")
        if path and path != "*":
            out.append(path)
        return
    head = prefix + tree[:brace]
    for part in _split_top(tree[brace + 1 : tree.rfind("}")]):
        if part == "self":
            out.append(head.removesuffix("::"))
        elif part:
            _expand(head, part, out, depth + 1)


def _split_top(inner: str) -> list[str]:
    parts, level, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            level += 1
        elif ch == "}":
            level -= 1
        elif ch == "," and level == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return parts


def crate_src(path: str) -> str:
    """The crate's source folder holding ``path`` (the deepest ``src`` above it), or its
    own folder."""
    parts = paths.folders(path)
    roots = [i for i, part in enumerate(parts) if part == "src"]
    return "/".join(parts[: roots[-1] + 1]) if roots else "/".join(parts)


def module_of(path: str) -> list[str]:
    """A file's module path inside its crate: ``src/a/b.rs`` -> ``["a", "b"]``."""
    src = crate_src(path)
    inner = path[len(src) + 1 :] if src else path
    parts = [*paths.folders(inner), paths.stem(inner)]
    if parts and parts[-1] == "mod":
        parts.pop()
    if len(parts) == 1 and parts[0] in ("lib", "main"):
        parts = []
    return parts


def children_folder(path: str) -> str:
    """Where ``mod x;`` in ``path`` looks for ``x.rs``: beside a ``lib.rs``/``main.rs``/
    ``mod.rs``, else in the folder named after the file."""
    if paths.name(path) in ("lib.rs", "main.rs", "mod.rs") or not module_of(path):
        return paths.parent(path)
    return path.removesuffix(paths.suffix(path))
