"""Reading tree-sitter nodes: a node's text, its header line, the comment above it.

One place decides what a signature and a doc line are for every grammar: a signature is
the declaration's text up to its body, on one line, capped at ``SIGNATURE_CAP``; a doc
line is the first line of text in a docstring or in the comment block just above.
"""

from __future__ import annotations

import re

from tree_sitter import Node

SIGNATURE_CAP = 200
DOC_CAP = 200
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?!?|//|#+|--)\s?")


def text(node: Node | None, data: bytes) -> str:
    if node is None:
        return ""
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def one_line(raw: str, cap: int) -> str:
    line = " ".join(raw.split())
    return line if len(line) <= cap else line[: cap - 1] + "…"


def header(outer: Node, body: Node | None, data: bytes, keep: str = "") -> str:
    """The declaration from ``outer``'s start to its body, one line: ``def f(x) -> int:``.

    Without a body, the first line of the declaration. A trailing ``{`` is dropped;
    ``keep`` is put back at the end (Python's ``:``)."""
    end = body.start_byte if body is not None else outer.end_byte
    raw = data[outer.start_byte : end].decode("utf-8", "replace")
    if body is None:
        raw = raw.split("\n", 1)[0]
    raw = raw.rstrip().removesuffix("{").rstrip().removesuffix(":").rstrip()
    return one_line(raw + keep, SIGNATURE_CAP)


def first_text_line(raw: str) -> str:
    """The first line that says something once comment marks are stripped."""
    for line in raw.splitlines():
        cleaned = _COMMENT_MARKS.sub("", line).strip().rstrip("*/").strip()
        if cleaned:
            return one_line(cleaned, DOC_CAP)
    return ""


def comment_above(node: Node, data: bytes, skip: tuple[str, ...] = ()) -> str:
    """The first line of the comment block that ends just above ``node`` (attributes and
    decorators of the types in ``skip`` may stand between)."""
    block: list[Node] = []
    cur, prev = node, node.prev_named_sibling
    while prev is not None and len(block) < 64:
        if prev.type in skip:
            cur, prev = prev, prev.prev_named_sibling
            continue
        if "comment" not in prev.type or prev.end_point.row < cur.start_point.row - 1:
            break
        block.append(prev)
        cur, prev = prev, prev.prev_named_sibling
    return first_text_line("\n".join(text(c, data) for c in reversed(block)))
