"""``digest.md``: one screen that tells a newcomer (or a model) how the project is laid out.

Built from the records alone, rendered by ``templates/digest.md.j2``, at most
``MAX_LINES`` lines and ``MAX_CHARS`` characters (each list is capped, and the rendered
text is cut if it still runs over). It says:

* the languages, by file count;
* the entry points: ``__main__`` guards and ``__main__.py``, ``[project.scripts]``,
  ``package.json`` ``bin``/``main``, Go ``package main`` with ``func main``, Rust
  ``fn main`` and ``[[bin]]``;
* the top folders (a ``src/`` folder's packages in its place) and their role: the
  ``__init__.py`` docstring, else a README's first line, else the words most common in
  the names of their symbols;
* the tests: folders, count, and a guess at the framework;
* the commands: README code blocks, Makefile targets, pyproject scripts and pytest
  settings, ``package.json`` scripts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import jinja2
from pydantic import BaseModel

from memory.tokens import STOPWORDS
from orchestrator.index import paths
from orchestrator.index.python_code import module_name
from orchestrator.index.records import FileRecord
from orchestrator.index.search import name_words
from orchestrator.index.testmap import is_test

TEMPLATES = Path(__file__).with_name("templates")
MAX_LINES, MAX_CHARS = 60, 4000
MAX_ENTRIES, MAX_FOLDERS, MAX_COMMANDS, MAX_LANGUAGES = 8, 12, 14, 10
ENTRY_SOURCES = {
    "pyproject.toml": "[project.scripts]",
    "package.json": "package.json",
    "Cargo.toml": "[[bin]]",
}
MANIFEST_NAMES = {
    "pyproject.toml": "Python project",
    "package.json": "npm package",
    "go.mod": "Go module",
    "Cargo.toml": "Rust crate",
}
MANIFEST_ORDER = ("readme", "makefile", "gnumakefile", "pyproject.toml", "package.json")


Head = tuple[str, str, str]
"""A symbol as the digest needs it: (path, kind, name)."""


class Folder(BaseModel):
    path: str
    files: int
    role: str = ""


class TestLayout(BaseModel):
    count: int = 0
    folders: list[str] = []
    frameworks: list[str] = []


class Digest(BaseModel):
    name: str
    title: str = ""
    files: int
    symbols: int
    languages: list[str]
    entries: list[str]
    folders: list[Folder]
    tests: TestLayout
    commands: list[str]


def digest(name: str, files: list[FileRecord], symbols: list[Head]) -> str:
    return render(facts(name, files, symbols))


def facts(name: str, files: list[FileRecord], symbols: list[Head]) -> Digest:
    counts = Counter(f.language for f in files)
    readme = next((f for f in files if "/" not in f.path and _is_readme(f.path)), None)
    return Digest(
        name=name,
        title=readme.doc if readme else "",
        files=len(files),
        symbols=len(symbols),
        languages=[f"{lang} {n}" for lang, n in counts.most_common(MAX_LANGUAGES)],
        entries=entry_points(files)[:MAX_ENTRIES],
        folders=folders(files, symbols)[:MAX_FOLDERS],
        tests=test_layout(files),
        commands=commands(files)[:MAX_COMMANDS],
    )


@cache
def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["plural"] = lambda n, word: f"{n} {word}" + ("" if n == 1 else "s")
    return env


def render(digest: Digest) -> str:
    text = _templates().get_template("digest.md.j2").render(**dict(digest))
    lines = text.splitlines()
    if len(lines) > MAX_LINES or len(text) > MAX_CHARS:
        kept, size = [], 0
        for line in lines[: MAX_LINES - 1]:
            if size + len(line) + 1 > MAX_CHARS - 40:
                break
            kept.append(line)
            size += len(line) + 1
        text = "\n".join(kept) + "\n… (cut to one screen)\n"
    return text


def entry_points(files: list[FileRecord]) -> list[str]:
    out = []
    for f in files:
        facts = f.facts
        if facts is None:
            continue
        name = paths.name(f.path)
        if facts.main:
            out.append(_program(f))
        source = ENTRY_SOURCES.get(name)
        out += [f"`{e}` ({source}, `{f.path}`)" for e in facts.entries if source]
    return out


def _program(f: FileRecord) -> str:
    if paths.name(f.path) == "__main__.py":
        package = module_name(paths.join(paths.parent(f.path), "__init__.py"))
        return f"`python -m {package}` (`{f.path}`)"
    how = {
        "python": 'if __name__ == "__main__"',
        "go": "package main, func main",
        "rust": "fn main",
    }.get(f.language, "#! script")
    return f"`{f.path}` ({how})"


def folders(files: list[FileRecord], symbols: list[Head]) -> list[Folder]:
    """The top folders, largest first, with their role."""
    members: dict[str, list[FileRecord]] = defaultdict(list)
    for f in files:
        if top := _top_folder(f.path):
            members[top].append(f)
    ordered = sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_FOLDERS]
    roles = {p: _stated_role(p, fs) for p, fs in ordered}
    words = _name_words(symbols, {p for p, role in roles.items() if not role})
    return [
        Folder(path=p, files=len(fs), role=roles[p] or _about(words.get(p))) for p, fs in ordered
    ]


def _top_folder(path: str) -> str:
    parts = paths.folders(path)
    if not parts:
        return ""
    if parts[0] == "src" and len(parts) > 1:
        return f"src/{parts[1]}"
    return parts[0]


def _stated_role(folder: str, members: list[FileRecord]) -> str:
    """What the folder says it is: its package docstring, its README's first line, or the
    name in its manifest."""
    by_path = {f.path: f for f in members}
    init = by_path.get(f"{folder}/__init__.py")
    if init is not None and init.doc:
        return init.doc
    readme = next((f for f in members if f.path.startswith(folder + "/README")), None)
    if readme is not None and readme.doc:
        return readme.doc
    for manifest, what in MANIFEST_NAMES.items():
        found = by_path.get(f"{folder}/{manifest}")
        if found is not None and found.facts is not None and found.facts.name:
            return f"{what} `{found.facts.name}`"
    return ""


def _name_words(symbols: list[Head], wanted: set[str]) -> dict[str, Counter]:
    words: dict[str, Counter] = defaultdict(Counter)
    for path, kind, name in symbols:
        top = _top_folder(path) if kind != "module" else ""
        if top in wanted:
            cut = name_words(name).lower().split()
            words[top].update(w for w in cut if len(w) > 2 and w not in STOPWORDS)
    return words


def _about(words: Counter | None) -> str:
    common = [w for w, _ in words.most_common(4)] if words else []
    return f"about {', '.join(common)}" if common else ""


def test_layout(files: list[FileRecord]) -> TestLayout:
    tests = [f for f in files if is_test(f.path, f.language)]
    where = Counter(paths.parent(f.path) for f in tests)
    shown = [f"`{p}/` ({n})" if p else f"the root ({n})" for p, n in where.most_common(5)]
    return TestLayout(count=len(tests), folders=shown, frameworks=frameworks(files, tests))


def frameworks(files: list[FileRecord], tests: list[FileRecord]) -> list[str]:
    named = [fw for f in files if f.facts for fw in f.facts.frameworks]
    imported = {i.module.split(".")[0].split("/")[0] for t in tests for i in t.imports}
    found = list(named)
    if "pytest" in imported or any(paths.name(t.path) == "conftest.py" for t in tests):
        found.append("pytest")
    if "unittest" in imported and "pytest" not in found:
        found.append("unittest")
    found += [fw for fw in ("vitest", "jest", "mocha") if fw in imported]
    if any(t.path.endswith("_test.go") for t in tests):
        found.append("go test")
    if any(t.language == "rust" for t in tests) and "cargo test" not in found:
        found.append("cargo test")
    return list(dict.fromkeys(found))


def commands(files: list[FileRecord]) -> list[str]:
    manifests = [f for f in files if f.facts and f.facts.commands and _manifest_rank(f) is not None]
    manifests.sort(key=lambda f: (f.path.count("/"), _manifest_rank(f), f.path))
    return list(dict.fromkeys(c for f in manifests for c in f.facts.commands))


def _manifest_rank(f: FileRecord) -> int | None:
    name = paths.name(f.path).lower()
    if _is_readme(f.path):
        return 0
    return MANIFEST_ORDER.index(name) if name in MANIFEST_ORDER else None


def _is_readme(path: str) -> bool:
    return paths.name(path).lower().startswith("readme")
