"""Which file of the tree an import names: the ``imports`` relations.

Only files in the tree count; an import of a library or of the standard library
resolves to nothing. Per language:

* Python: dotted modules against the tree's *source roots* (the root, ``src/`` and
  ``lib/`` folders, folders holding a ``pyproject.toml``/``setup.py``, and the folder
  above each top-level package), as a module file or a package's ``__init__.py``;
  ``from a import b`` tries the module ``a.b`` before ``a``; relative imports climb
  from the importing file's package; a script outside any package also sees its own
  folder. Several matches: the one nearest the importer wins.
* JS/TS: relative specifiers, with the usual extensions and ``index.*``; ``./x.js``
  may name ``x.ts``. Bare specifiers are packages.
* Go: the import path minus the ``module`` of a ``go.mod`` names a package folder:
  every non-test ``.go`` file in it.
* Rust: ``mod x;`` is ``x.rs`` or ``x/mod.rs``; ``use crate::``/``self::``/``super::``
  (and a workspace crate's name) walk Cargo's layout to the deepest file that exists.
* Ruby ``require_relative`` and Lua ``require``, from the line scanner.
"""

from __future__ import annotations

import posixpath
from collections import Counter, defaultdict

from orchestrator.index import paths
from orchestrator.index.paths import join as _join
from orchestrator.index.paths import parent as _parent
from orchestrator.index.records import FileRecord, Import, Relation
from orchestrator.index.rust_paths import children_folder, crate_src, module_of

JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
PY_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")


class Tree:
    """The tree's files, with the lookups resolution needs, built once per index."""

    def __init__(self, files: list[FileRecord]):
        self.paths = {f.path for f in files}
        self.folders: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.paths):
            self.folders[_parent(path)].append(path)
        self.py_modules = self._python_modules(self._python_roots())
        self.go_modules = {_parent(f.path): f.facts.name for f in files if _named(f, "go.mod")}
        self.crates = {
            f.facts.name.replace("-", "_"): _join(_parent(f.path), "src")
            for f in files
            if _named(f, "Cargo.toml")
        }

    def _python_roots(self) -> list[str]:
        roots = {""}
        for path in self.paths:
            folder, name = _parent(path), paths.name(path)
            if name in PY_ROOT_MARKERS or paths.name(folder) in ("src", "lib"):
                roots.add(folder)
            if name == "__init__.py" and _join(_parent(folder), "__init__.py") not in self.paths:
                roots.add(_parent(folder))
        return sorted(roots)

    def _python_modules(self, roots: list[str]) -> dict[str, list[str]]:
        """Dotted name -> the files importable by it from some source root."""
        found: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.paths):
            if not path.endswith((".py", ".pyi")):
                continue
            stem = path.rsplit(".", 1)[0].removesuffix("/__init__")
            for root in roots:
                if not root or stem.startswith(root + "/"):
                    dotted = stem[len(root) + 1 :] if root else stem
                    if dotted and dotted != "__init__":
                        found[dotted.replace("/", ".")].append(path)
        return found

    def file(self, *candidates: str) -> str | None:
        return next((c for c in candidates if c in self.paths), None)


def import_relations(files: list[FileRecord], tree: Tree) -> list[Relation]:
    weights: Counter[tuple[str, str]] = Counter()
    for record in files:
        resolver = RESOLVERS.get(record.language)
        if resolver is None:
            continue
        for item in record.imports:
            for target in resolver(tree, record.path, item):
                if target != record.path:
                    weights[(record.path, target)] += 1
    return [
        Relation(kind="imports", source=s, target=t, weight=w, via="import")
        for (s, t), w in sorted(weights.items())
    ]


# --- Python -----------------------------------------------------------------------------


def _python(tree: Tree, importer: str, item: Import) -> list[str]:
    if item.level:
        return _python_relative(tree, importer, item)
    names = [f"{item.module}.{n}" for n in item.names if n != "*"]
    found = [f for dotted in names if (f := _python_module(tree, importer, dotted))]
    if found:  # from pkg import core, util: the modules core and util
        return found
    parts = item.module.split(".")
    for cut in range(len(parts), 0, -1):  # import a.b.missing still imports a.b
        if found := _python_module(tree, importer, ".".join(parts[:cut])):
            return [found]
    return []


def _python_module(tree: Tree, importer: str, dotted: str) -> str | None:
    hits = tree.py_modules.get(dotted)
    if not hits:
        folder = _parent(importer)
        if _join(folder, "__init__.py") not in tree.paths:  # a script sees its own folder
            return _py_file(tree, _join(folder, dotted.replace(".", "/")))
        return None
    if len(hits) == 1:
        return hits[0]
    return max(hits, key=lambda h: (_shared(h, importer), h.endswith(".py"), -len(h)))


def _python_relative(tree: Tree, importer: str, item: Import) -> list[str]:
    base = _parent(importer)
    for _ in range(item.level - 1):
        base = _parent(base)
    module = _join(base, item.module.replace(".", "/")) if item.module else base
    found = [f for n in item.names if n != "*" and (f := _py_file(tree, _join(module, n)))]
    if found:
        return found
    own = _py_file(tree, module) if item.module else tree.file(_join(module, "__init__.py"))
    return [own] if own else []


def _py_file(tree: Tree, stem: str) -> str | None:
    return tree.file(stem + ".py", _join(stem, "__init__.py"), stem + ".pyi")


# --- JavaScript and TypeScript ----------------------------------------------------------


def _js(tree: Tree, importer: str, item: Import) -> list[str]:
    if not item.module.startswith("."):
        return []
    base = posixpath.normpath(_join(_parent(importer), item.module))
    if base.startswith(".."):
        return []
    stems = [base]
    for ext in (".js", ".jsx", ".mjs", ".cjs"):
        if base.endswith(ext):
            stems.append(base[: -len(ext)])
    candidates = [base]
    for stem in stems:
        candidates += [stem + ext for ext in JS_EXTENSIONS]
        candidates += [_join(stem, "index" + ext) for ext in JS_EXTENSIONS]
    found = tree.file(*candidates)
    return [found] if found else []


# --- Go ---------------------------------------------------------------------------------


def _go(tree: Tree, importer: str, item: Import) -> list[str]:
    for folder, module in tree.go_modules.items():
        if module and (item.module == module or item.module.startswith(module + "/")):
            package = _join(folder, item.module[len(module) + 1 :])
            return [
                f
                for f in tree.folders.get(package.rstrip("/"), [])
                if f.endswith(".go") and not f.endswith("_test.go")
            ]
    return []


# --- Rust -------------------------------------------------------------------------------


def _rust(tree: Tree, importer: str, item: Import) -> list[str]:
    if item.kind == "mod":
        stem = _join(children_folder(importer), item.module)
        found = tree.file(stem + ".rs", _join(stem, "mod.rs"))
        return [found] if found else []
    parts = item.module.split("::")
    src, here = crate_src(importer), module_of(importer)
    if parts[0] == "crate":
        segments = parts[1:]
    elif parts[0] in ("self", "super"):
        while parts and parts[0] == "super" and here:
            here, parts = here[:-1], parts[1:]
        segments = here + [p for p in parts if p not in ("self", "super")]
    elif parts[0] in tree.crates:
        src, segments = tree.crates[parts[0]], parts[1:]
    else:
        return []
    for cut in range(len(segments), 0, -1):
        stem = _join(src, "/".join(segments[:cut]))
        if found := tree.file(stem + ".rs", _join(stem, "mod.rs")):
            return [found]
    root = tree.file(_join(src, "lib.rs"), _join(src, "main.rs"))  # an item of the crate root
    return [root] if root else []


# --- scanned languages ------------------------------------------------------------------


def _scanned(tree: Tree, importer: str, item: Import) -> list[str]:
    ext = paths.suffix(importer)
    if item.kind == "require":  # Ruby require_relative: from the importer's folder
        rel = posixpath.normpath(_join(_parent(importer), item.module))
        found = tree.file(rel, rel + ext)
    else:  # Lua require "a.b": from the root or the importer's folder
        rel = item.module.replace(".", "/")
        found = tree.file(rel + ext, _join(_parent(importer), rel) + ext)
    return [found] if found else []


RESOLVERS = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "rust": _rust,
    "ruby": _scanned,
    "lua": _scanned,
}


def _named(record: FileRecord, name: str) -> bool:
    return record.facts is not None and paths.name(record.path) == name


def _shared(a: str, b: str) -> int:
    """How many leading folders two paths share."""
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n
