"""What a Python file declares: its module, classes, functions and methods, and its imports.

Symbols come from a walk over the module's top-level statements and class bodies only
(a function's local helpers are not the file's API), so the Python work per file is a
few nodes per definition. The walk enters what runs when the module is imported: the
blocks of an ``if``/``elif``/``else``, a ``try``/``except``/``else``/``finally`` and a
``with``, nested any way, at the top level or in a class body. A name defined in several
of them (``batched`` under ``if hexversion >= ...: ... else: ...``, django's ``lock`` per
platform) is a symbol per definition, each with its own lines, signature and doc. The
body of ``if __name__ == "__main__":`` is left out (it does not run on import; its
``elif``/``else`` do), and so are loops and ``match`` (a definition made per iteration or
per case is not the module's API).

Imports come from a walk over statements at every depth, so a lazy import inside a
function counts, as it does for ``tests/test_architecture.py``; the walk never enters an
expression. (A tree-sitter query would find them too, but a query's time grows with the
square of a run of syntax errors: 500,000 ``(`` take minutes.) A definition's lines run
from its first decorator to its last line.

The file is read in UTF-8 whatever it declares (:func:`encoding.python_utf8`: PEP 263,
a BOM), with ``\\n`` line endings (the caller's :func:`encoding.newlines`).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from orchestrator.index import paths
from orchestrator.index.encoding import count_lines, python_utf8
from orchestrator.index.languages import parser
from orchestrator.index.nodes import first_text_line, header, text
from orchestrator.index.records import Import, Symbol

STATEMENT_HOLDERS = frozenset(
    """
    block function_definition class_definition decorated_definition if_statement elif_clause
    else_clause try_statement except_clause except_group_clause finally_clause with_statement
    for_statement while_statement match_statement case_clause ERROR
    """.split()
)
"""Nodes whose children may be statements: where an import can be, lazy ones included."""
CONDITIONAL = frozenset(
    """
    if_statement elif_clause else_clause try_statement except_clause except_group_clause
    finally_clause with_statement block
    """.split()
)
"""Nodes whose statements run when the block that holds them does: where a module's or a
class's definitions are, besides its own top level."""
MAX_DEPTH = 32
MAIN_GUARD = re.compile(rb"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.M)
MAIN_TEST = re.compile(r"""__name__\s*==\s*(['"])__main__\1|(['"])__main__\2\s*==\s*__name__""")
MAX_NESTING = 8
_DEFINITIONS = ("function_definition", "class_definition")


def module_name(path: str) -> str:
    """The dotted name a file is imported as: ``src/pkg/core.py`` -> ``pkg.core``."""
    parts = [*paths.folders(path), paths.stem(path)]
    roots = [i for i, part in enumerate(parts[:-1]) if part == "src"]
    if roots:
        parts = parts[roots[-1] + 1 :]
    if parts and parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def extract(path: str, data: bytes) -> tuple[list[Symbol], list[Import], bool, str]:
    """Symbols, imports, whether the parse met errors, and the module's doc line."""
    data = python_utf8(data)
    tree = parser("python").parse(data)
    root = tree.root_node
    doc = docstring(root, data)
    module = Symbol(
        name=module_name(path),
        kind="module",
        path=path,
        start_line=1,
        end_line=count_lines(data),
        doc=doc,
    )
    symbols = [module]
    _block(root, data, path, None, 0, 0, symbols)
    return symbols, imports(root, data), root.has_error, doc


def is_main(data: bytes) -> bool:
    return b"__main__" in data and MAIN_GUARD.search(data) is not None


def _block(
    block: Node, data: bytes, path: str, parent: str | None, classes: int, depth: int, out: list
):
    """The definitions of ``block`` and of the conditional blocks in it, into ``out``;
    ``classes`` counts the class bodies around it, ``depth`` every level."""
    for node in block.named_children:
        if node.type in CONDITIONAL:
            if depth < MAX_DEPTH:
                for part in _run_on_import(node, data):
                    _block(part, data, path, parent, classes, depth + 1, out)
            continue
        outer = node
        if node.type == "decorated_definition":
            node = node.child_by_field_name("definition")
        if node is None or node.type not in _DEFINITIONS:
            continue
        name = text(node.child_by_field_name("name"), data)
        body = node.child_by_field_name("body")
        is_class = node.type == "class_definition"
        kind = "class" if is_class else ("method" if parent else "function")
        out.append(
            Symbol(
                name=name,
                kind=kind,
                path=path,
                start_line=outer.start_point.row + 1,
                end_line=outer.end_point.row + 1,
                signature=header(node, body, data, keep=":"),
                doc=docstring(body, data),
                parent=parent,
            )
        )
        if is_class and body is not None and classes < MAX_NESTING and depth < MAX_DEPTH:
            _block(body, data, path, name, classes + 1, depth + 1, out)


def _run_on_import(node: Node, data: bytes) -> list[Node]:
    """``node`` itself, or for ``if __name__ == "__main__":`` only its ``elif``/``else``."""
    if node.type != "if_statement":
        return [node]
    condition = text(node.child_by_field_name("condition"), data)
    if "__main__" not in condition or MAIN_TEST.fullmatch(condition.strip()) is None:
        return [node]
    return node.children_by_field_name("alternative")


def docstring(body: Node | None, data: bytes) -> str:
    """The first line of the string that opens a module, class or function body."""
    if body is None:
        return ""
    first = next((c for c in body.named_children if c.type != "comment"), None)
    if first is None or first.type != "expression_statement" or not first.named_children:
        return ""
    string = first.named_children[0]
    if string.type != "string":
        return ""
    content = [c for c in string.named_children if c.type == "string_content"]
    return first_text_line("".join(text(c, data) for c in content))


def imports(root: Node, data: bytes) -> list[Import]:
    """Every import statement, at any depth of statements (never inside an expression)."""
    out: list[Import] = []
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        for child in node.named_children:
            if child.type == "import_statement":
                line = child.start_point.row + 1
                names = child.children_by_field_name("name")
                out += [Import(module=_dotted(n, data), line=line) for n in names]
            elif child.type == "import_from_statement":
                if (item := _from(child, data)) is not None:
                    out.append(item)
            elif child.type in STATEMENT_HOLDERS and depth < MAX_DEPTH:
                stack.append((child, depth + 1))
    out.sort(key=lambda i: i.line)
    return out


def _from(node: Node, data: bytes) -> Import | None:
    source = node.child_by_field_name("module_name")
    if source is None:
        return None
    level, module = 0, text(source, data)
    if source.type == "relative_import":
        prefix = next((c for c in source.children if c.type == "import_prefix"), None)
        level = len(text(prefix, data).strip())
        dotted = next((c for c in source.named_children if c.type == "dotted_name"), None)
        module = text(dotted, data)
    names = [_dotted(n, data) for n in node.children_by_field_name("name")]
    if any(c.type == "wildcard_import" for c in node.named_children):
        names.append("*")
    return Import(module=module, names=names, level=level, line=node.start_point.row + 1)


def _dotted(node: Node, data: bytes) -> str:
    if node.type == "aliased_import":
        node = node.child_by_field_name("name")
    return "".join(text(node, data).split())
