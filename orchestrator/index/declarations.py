"""What a JavaScript, TypeScript, Go or Rust file declares at its top level, and imports.

These files are read for their API, not their bodies: top-level functions, classes,
interfaces, type aliases, enums, structs, traits and exported constants, plus the
methods that are easy to place (a JS/TS class's methods, a Go method's receiver, a Rust
``impl``'s or trait's functions, items of an inline Rust ``mod``). Each language has a
small handler that turns one top-level node into symbols.

Imports are read from the top-level statements where the language keeps them (JS/TS
``import``/``export ... from``, Go ``import``, Rust ``mod x;``), and with a linear pattern
over the text where they may sit anywhere (``require(...)``/``import(...)`` calls, Rust
``use``). No tree-sitter query runs: a query's time grows with the square of a run of
syntax errors, and a model's broken file must not stall the index.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from orchestrator.index.languages import parser
from orchestrator.index.nodes import comment_above, first_text_line, header, text
from orchestrator.index.records import Import, Symbol
from orchestrator.index.rust_paths import expand_use

KINDS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "function_signature": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "struct",
    "union_item": "struct",
    "enum_item": "enum",
    "trait_item": "trait",
    "type_item": "type",
    "const_item": "constant",
    "static_item": "constant",
    "macro_definition": "macro",
    "mod_item": "module",
}
FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")
GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}
SKIP_ABOVE = ("decorator", "attribute_item")
MAX_NESTING = 4

CALLED_IMPORT = re.compile(rb"""\b(require|import)\s*\(\s*(['"])([^'"\n]{1,300})\2\s*\)""")
RUST_USE = re.compile(rb"^[ \t]*(?:pub(?:\([^)\n]*\))?[ \t]+)?use[ \t]+([^;]{1,2000});", re.M)


@dataclass
class Found:
    """What one file gave: symbols and imports, and what the walk noticed on the way."""

    path: str
    data: bytes
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    main: bool = False
    doc: str = ""

    def add(self, outer: Node, node: Node, kind: str, name: str, parent: str | None = None):
        if not name:
            return
        body = node.child_by_field_name("body")
        self.symbols.append(
            Symbol(
                name=name,
                kind=kind,
                path=self.path,
                start_line=outer.start_point.row + 1,
                end_line=outer.end_point.row + 1,
                signature=header(outer, body, self.data),
                doc=comment_above(outer, self.data, SKIP_ABOVE),
                parent=parent,
            )
        )

    def name_of(self, node: Node, field_name: str = "name") -> str:
        return text(node.child_by_field_name(field_name), self.data)


def extract(path: str, language: str, data: bytes) -> tuple[Found, bool]:
    """The file's symbols and imports, and whether the parse met errors."""
    root = parser(language).parse(data).root_node
    found = Found(path, data)
    handle = HANDLERS["js" if language in ("javascript", "typescript", "tsx") else language]
    for node in root.named_children:
        handle(found, node, node, 0)
    IMPORTERS[language if language in IMPORTERS else "js"](found, root, language)
    found.imports.sort(key=lambda i: i.line)
    return found, root.has_error


# --- JavaScript and TypeScript ----------------------------------------------------------


def _js(found: Found, outer: Node, node: Node, depth: int, exported: bool = False) -> None:
    kind = KINDS.get(node.type)
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is not None:
            _js(found, outer, inner, depth, exported=True)
    elif node.type == "ambient_declaration" and node.named_children:
        _js(found, outer, node.named_children[0], depth, exported)
    elif node.type in ("lexical_declaration", "variable_declaration"):
        _js_variables(found, outer, node, exported)
    elif node.type in ("function_expression", "class") and exported:
        found.add(outer, node, "function" if node.type != "class" else "class", "default")
    elif kind is not None:
        name = found.name_of(node) or ("default" if exported else "")
        found.add(outer, node, kind, name)
        if kind == "class":
            _js_methods(found, node, name)


def _js_variables(found: Found, outer: Node, node: Node, exported: bool) -> None:
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        name_node = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name_node is None or name_node.type != "identifier":
            continue
        if value is not None and value.type in FUNCTION_VALUES:
            found.add(outer, value, "function", text(name_node, found.data))
        elif exported:
            found.add(outer, declarator, "constant", text(name_node, found.data))


def _js_methods(found: Found, cls: Node, name: str) -> None:
    body = cls.child_by_field_name("body")
    for member in body.named_children if body is not None else ():
        if member.type in ("method_definition", "abstract_method_signature"):
            found.add(member, member, "method", found.name_of(member), parent=name)


def _js_imports(found: Found, root: Node, language: str) -> None:
    for node in root.named_children:
        source = node.child_by_field_name("source")
        if node.type in ("import_statement", "export_statement") and source is not None:
            line = node.start_point.row + 1
            found.imports.append(Import(module=text(source, found.data)[1:-1], line=line))
    for match, line in _with_lines(CALLED_IMPORT, found.data):
        kind = "require" if match.group(1) == b"require" else "import"
        module = match.group(3).decode("utf-8", "replace")
        found.imports.append(Import(module=module, kind=kind, line=line))


def _with_lines(pattern: re.Pattern[bytes], data: bytes):
    """The pattern's matches in ``data``, each with its 1-based line number."""
    line, last = 1, 0
    for match in pattern.finditer(data):
        line += data.count(b"\n", last, match.start())
        last = match.start()
        yield match, line


# --- Go ---------------------------------------------------------------------------------


def _go(found: Found, outer: Node, node: Node, depth: int) -> None:
    if node.type == "package_clause":
        found.doc = comment_above(node, found.data)
    elif node.type == "function_declaration":
        name = found.name_of(node)
        found.main = found.main or name == "main"
        found.add(node, node, "function", name)
    elif node.type == "method_declaration":
        found.add(node, node, "method", found.name_of(node), parent=_receiver(found, node))
    elif node.type == "type_declaration":
        for spec in node.named_children:
            if spec.type in ("type_spec", "type_alias"):
                shape = getattr(spec.child_by_field_name("type"), "type", "")
                kind = GO_TYPE_KINDS.get(shape, "type")
                where = node if len(node.named_children) == 1 else spec
                found.add(where, spec, kind, found.name_of(spec))
    elif node.type in ("const_declaration", "var_declaration"):
        _go_values(found, node, "constant" if node.type == "const_declaration" else "variable")


def _go_values(found: Found, node: Node, kind: str) -> None:
    specs = [c for c in node.named_children if c.type in ("const_spec", "var_spec")]
    for group in (c for c in node.named_children if c.type == "var_spec_list"):
        specs += [c for c in group.named_children if c.type == "var_spec"]
    for spec in specs:
        where = node if len(specs) == 1 else spec
        for name_node in spec.children_by_field_name("name"):
            name = text(name_node, found.data)
            if name[:1].isupper():
                found.add(where, spec, kind, name)


def _receiver(found: Found, node: Node) -> str | None:
    receiver = node.child_by_field_name("receiver")
    params = receiver.named_children if receiver is not None else []
    kind = params[0].child_by_field_name("type") if params else None
    name = text(kind, found.data).lstrip("*").split("[", 1)[0].strip()
    return name or None


def _go_imports(found: Found, root: Node, language: str) -> None:
    for node in root.named_children:
        if node.type != "import_declaration":
            continue
        specs = [c for c in node.named_children if c.type == "import_spec"]
        for group in (c for c in node.named_children if c.type == "import_spec_list"):
            specs += [c for c in group.named_children if c.type == "import_spec"]
        for spec in specs:
            module = text(spec.child_by_field_name("path"), found.data).strip('`"')
            found.imports.append(Import(module=module, line=spec.start_point.row + 1))
    if found.main:
        package = next((c for c in root.named_children if c.type == "package_clause"), None)
        found.main = package is not None and text(package, found.data).split()[-1] == "main"


# --- Rust -------------------------------------------------------------------------------


def _rust(found: Found, outer: Node, node: Node, depth: int, owner=None, method=False) -> None:
    kind = KINDS.get(node.type)
    if node.type == "line_comment" and depth == 0 and text(node, found.data).startswith("//!"):
        found.doc = found.doc or first_text_line(text(node, found.data))
    elif node.type == "impl_item":
        impl_of = text(node.child_by_field_name("type"), found.data).split("<", 1)[0].strip()
        _rust_members(found, node, impl_of, depth, method=True)
    elif node.type == "mod_item" and node.child_by_field_name("body") is None:
        if depth == 0:
            line = node.start_point.row + 1
            found.imports.append(Import(module=found.name_of(node), kind="mod", line=line))
    elif kind is not None:
        name = found.name_of(node)
        kind = "method" if method and kind == "function" else kind
        found.main = found.main or (depth == 0 and name == "main" and kind == "function")
        found.add(node, node, kind, name, parent=owner)
        if node.type in ("trait_item", "mod_item"):
            _rust_members(found, node, name, depth, method=node.type == "trait_item")


def _rust_members(found: Found, node: Node, owner: str, depth: int, method: bool) -> None:
    body = node.child_by_field_name("body")
    if body is None or depth >= MAX_NESTING:
        return
    for member in body.named_children:
        _rust(found, member, member, depth + 1, owner=owner or None, method=method)


def _rust_imports(found: Found, root: Node, language: str) -> None:
    for match, line in _with_lines(RUST_USE, found.data):
        for path in expand_use(match.group(1).decode("utf-8", "replace")):
            found.imports.append(Import(module=path, kind="use", line=line))


Handler = Callable[..., None]
HANDLERS: dict[str, Handler] = {"js": _js, "go": _go, "rust": _rust}
IMPORTERS: dict[str, Handler] = {"go": _go_imports, "rust": _rust_imports, "js": _js_imports}
