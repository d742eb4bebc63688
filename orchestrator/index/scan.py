"""A line scanner for languages without a grammar here (Ruby, Lua, shell, Java ...).

It finds the lines that open a definition in most languages (``def``, ``class``,
``module``, ``function``, ``func``, ``fn``, ``fun``, ``name() {``, Java-style
methods) and the requires it can resolve (Ruby ``require_relative``, Lua ``require``).
A scanned symbol's range is its first line only: the scanner does not know where a
definition ends. A method is a ``def`` or ``function`` indented under a class or module,
or a Lua ``function M.name``. Lines are split at ``\\n`` only (the caller has made every
line ending one), as tree-sitter and :func:`encoding.count_lines` count them: a form feed
starts no line.
"""

from __future__ import annotations

import re

from orchestrator.index.nodes import DOC_CAP, SIGNATURE_CAP, one_line
from orchestrator.index.records import Import, Symbol

MAX_LINES = 50_000
_NAME = r"([A-Za-z_$][\w$]*[!?=]?)"
_MODIFIERS = (
    r"(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|export"
    r"|async|override|inline|partial|virtual|synchronized)\s+)*"
)
_TYPES = r"(class|interface|enum|struct|trait|object|record)"
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # (pattern with groups: indent, keyword, name; the kind, "" for the keyword's)
    (re.compile(rf"^(\s*){_MODIFIERS}{_TYPES}\s+{_NAME}"), ""),
    (re.compile(r"^(\s*)(module)\s+([A-Z]\w*(?:::[A-Z]\w*)*)"), "module"),
    (re.compile(r"^(\s*)(def)\s+(?:self\.)?([A-Za-z_]\w*[!?=]?)"), "function"),
    (re.compile(r"^(\s*)(?:local\s+)?(function)\s+([A-Za-z_][\w.:]*)\s*\("), "function"),
    (
        re.compile(
            rf"^(\s*){_MODIFIERS}(fun|func|fn|sub)\s+(?:<[^>]*>\s*)?(?:\([^)]*\)\s*)?{_NAME}"
        ),
        "function",
    ),
    (re.compile(r"^(\s*)()([A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$"), "function"),  # shell
    (
        re.compile(
            r"^(\s*)(?:(?:public|private|protected|static|final|abstract|synchronized)\s+)+()"
            r"[\w<>\[\],.?]+\s+([A-Za-z_]\w*)\s*\("
        ),
        "method",
    ),
]
_KINDS = {"interface": "interface", "enum": "enum", "struct": "struct", "trait": "trait"}
REQUIRES = re.compile(
    r"""^\s*(?:(require_relative)\s*\(?\s*['"]([^'"]+)['"]|(?:local\s+\w+\s*=\s*)?(require)\s*\(?\s*['"]([^'"]+)['"])"""
)
_COMMENT = re.compile(r"^\s*(?:#|--|//|\*|/\*)+\s?(.*)$")


def scan(path: str, language: str, data: bytes) -> tuple[list[Symbol], list[Import]]:
    symbols: list[Symbol] = []
    imports: list[Import] = []
    owners: list[tuple[int, str]] = []  # (indent, name) of the open classes and modules
    lines = data.decode("utf-8", "replace").split("\n", MAX_LINES)[:MAX_LINES]
    for number, line in enumerate(lines, 1):
        if (req := REQUIRES.match(line)) is not None:
            kind = "require" if req.group(1) else "import"
            module = req.group(2) or req.group(4)
            imports.append(Import(module=module, kind=kind, line=number))
            continue
        symbol = _symbol(path, line, number, owners, lines)
        if symbol is not None:
            symbols.append(symbol)
    return symbols, imports


def _symbol(path: str, line: str, number: int, owners: list, lines: list[str]) -> Symbol | None:
    for pattern, kind in PATTERNS:
        match = pattern.match(line)
        if match is None:
            continue
        indent, keyword, name = len(match.group(1).expandtabs()), match.group(2), match.group(3)
        while owners and owners[-1][0] >= indent:
            owners.pop()
        parent = owners[-1][1] if owners else None
        kind = kind or _KINDS.get(keyword, "class")
        if kind == "function" and (dotted := re.split(r"[.:]", name)) and len(dotted) > 1:
            parent, name, kind = dotted[-2], dotted[-1], "method"
        elif kind == "function" and parent is not None:
            kind = "method"
        if kind in ("class", "module", "interface", "enum", "struct", "trait"):
            owners.append((indent, name))
        return Symbol(
            name=name,
            kind=kind,
            path=path,
            start_line=number,
            end_line=number,
            signature=one_line(line, SIGNATURE_CAP),
            doc=_comment_before(lines, number - 1),
            parent=parent,
        )
    return None


def _comment_before(lines: list[str], index: int) -> str:
    """The first line of the comment block that ends on the line above ``index``."""
    start = index
    while start > 0 and _COMMENT.match(lines[start - 1]) and index - start < 32:
        start -= 1
    for line in lines[start:index]:
        text = _COMMENT.match(line).group(1).strip()
        if text:
            return one_line(text, DOC_CAP)
    return ""
