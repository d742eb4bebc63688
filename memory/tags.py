"""Which stack a piece of text is about: the known tag set and two ways to infer tags.

* :func:`infer_task_tags` is strict: only words that *are* known tags count.
  It is what the seed's hard tag filter runs on a task description.
* :func:`infer_tags_from_text` is broad: it also maps synonyms and file
  extensions (``aiosqlite`` means python, sqlite and asyncio; ``.tsx`` means
  typescript) and adds the language a framework implies (``flask`` means
  python), because "same language counts as same stack". It is what the
  penalty layers run on a lesson's source task and body.

A lesson's tags are often its whole project's stacks: a build of a Flask API
with a React front end tags every lesson flask, pytest, react and vitest, the
lesson about ``main.tsx`` and the one about Flask's request parsing alike.
:func:`lesson_stacks` says which of them the lesson is about: its stack tags,
less those its own text rules out (see there). Recall matches a task's stacks
against these, not against the raw tags.

:func:`project_tags` tags a project that exists (``cadillac enhance``, ``iterate``) from
its files: its manifests say its languages (``pyproject.toml`` python, ``package.json``
node, ``go.mod`` go, ``Cargo.toml`` rust), and the stacks their text names in those
languages (a ``react`` dependency); a project with no manifest is tagged by the
languages of its files' extensions.

Tags are lower-case words. Phase tags (plan, deps, ...) and layout tags
(modular, flat) are known tags but not *stack* tags: they say when or how a
lesson was learned, not which ecosystem it belongs to.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from memory.tokens import words
from orchestrator.sandbox.files import UnsafeFile, read_regular, what_is

LANGUAGE_TAGS = frozenset(
    {"python", "typescript", "javascript", "node", "go", "rust", "php", "html", "css"}
)
FRAMEWORK_TAGS = frozenset(
    {
        "react",
        "vue",
        "angular",
        "electron",
        "desktop",
        "flask",
        "django",
        "fastapi",
        "express",
        "pygame",
        "click",
        "asyncio",
        "aiosqlite",
        "sqlite",
        "pytest",
        "vitest",
        "jest",
        "phpunit",
        "wordpress",
        "browser_extension",
        "pytorch",
        "numpy",
        "pandas",
        "cuda",
        "cargo",
    }
)
STACK_TAGS = LANGUAGE_TAGS | FRAMEWORK_TAGS
KINDS = (
    frozenset({"pytest", "jest", "vitest", "phpunit"}),
    frozenset({"flask", "django", "fastapi", "express"}),
    frozenset({"react", "vue", "angular"}),
)
"""Stacks of one kind (test runners, web frameworks, UI libraries): a project uses one
of a kind for a given part, so a text that names one of them is not about the others."""
PHASE_TAGS = frozenset(
    {"plan", "deps", "scaffold", "review", "build", "integrate", "wiring", "validate", "package"}
)
LAYOUT_TAGS = frozenset({"modular", "flat"})
KNOWN_TAGS = STACK_TAGS | PHASE_TAGS | LAYOUT_TAGS

# A tag (or word) -> the stack tags it implies. Languages are implied by their frameworks.
_IMPLIES: dict[str, frozenset[str]] = {
    k: frozenset(v)
    for k, v in {
        "aiosqlite": {"aiosqlite", "python", "sqlite", "asyncio"},
        "uvicorn": {"python", "fastapi"},
        "starlette": {"python", "fastapi"},
        "pydantic": {"python"},
        "pip": {"python"},
        "venv": {"python"},
        "flask": {"flask", "python"},
        "django": {"django", "python"},
        "fastapi": {"fastapi", "python"},
        "pygame": {"pygame", "python"},
        "click": {"click", "python"},
        "asyncio": {"asyncio", "python"},
        "async": {"asyncio", "python"},
        "pytest": {"pytest", "python"},
        "numpy": {"numpy", "python"},
        "pandas": {"pandas", "python"},
        "pytorch": {"pytorch", "python"},
        "torch": {"pytorch", "python"},
        "cuda": {"cuda"},
        "tsc": {"typescript"},
        "tsconfig": {"typescript"},
        "typescript": {"typescript", "javascript"},
        "npm": {"node", "javascript"},
        "npx": {"node", "javascript"},
        "node": {"node", "javascript"},
        "nodejs": {"node", "javascript"},
        "express": {"express", "node", "javascript"},
        "jest": {"jest", "javascript"},
        "vitest": {"vitest", "javascript"},
        "react": {"react", "javascript"},
        "vite": {"javascript"},
        "vue": {"vue", "javascript"},
        "angular": {"angular", "typescript", "javascript"},
        "electron": {"electron", "desktop", "javascript"},
        "cargo": {"cargo", "rust"},
        "rustc": {"rust"},
        "golang": {"go"},
        "goroutine": {"go"},
        "goroutines": {"go"},
        "wordpress": {"wordpress", "php"},
        "phpunit": {"phpunit", "php"},
        "composer": {"php"},
        "mv3": {"browser_extension", "javascript"},
        "browser_extension": {"browser_extension", "javascript"},
    }.items()
}
_EXTENSIONS = {
    "py": "python",
    "ts": "typescript",
    "tsx": "typescript",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "rs": "rust",
    "go": "go",
    "php": "php",
}
_PHRASES = {
    "browser extension": "browser_extension",
    "browser_extension": "browser_extension",
    "chrome extension": "browser_extension",
    "firefox extension": "browser_extension",
    "manifest v3": "browser_extension",
    "package.json": "node",
    "go.mod": "go",
    "cargo.toml": "rust",
    "requirements.txt": "python",
    "pyproject.toml": "python",
}
# A file extension: a dot that follows a word character and ends a word.
_EXT = re.compile(r"\.(" + "|".join(sorted(_EXTENSIONS, key=len, reverse=True)) + r")\b")


@lru_cache(maxsize=1 << 18)
def word_tags(word: bytes) -> frozenset[str]:
    """The tags one word stands for: itself if it is a known tag, plus what it implies."""
    text = word.decode("ascii")
    implied = _IMPLIES.get(text, frozenset())
    return implied | {text} if text in KNOWN_TAGS else implied


TAG_WORDS = frozenset(w.encode() for w in KNOWN_TAGS | _IMPLIES.keys())
"""The words that stand for some tag; every other word stands for none."""


def special_tags(lowered: str) -> set[str]:
    """Tags from phrases and file extensions in lower-cased text."""
    found = [tag for phrase, tag in _PHRASES.items() if phrase in lowered]
    if "." in lowered:
        for match in _EXT.finditer(lowered):
            if _word_before(lowered, match.start()):
                found.append(_EXTENSIONS[match.group(1)])
    tags: set[str] = set()
    for tag in found:
        tags |= implied_by(tag)
    return tags


def _word_before(text: str, pos: int) -> bool:
    before = text[pos - 1 : pos]
    return before.isalnum() or before == "_"


def special_hits(lowered: list[str]) -> tuple[list[int], list[str], list[int]]:
    """``special_tags`` of many lower-cased texts in one pass.

    Returns the positions of the hits in the texts joined by newlines, the tag
    each hit stands for, and where each text starts in that joined string.
    """
    joined = "\n".join(lowered)
    starts = [0] * len(lowered)
    for i in range(1, len(lowered)):
        starts[i] = starts[i - 1] + len(lowered[i - 1]) + 1
    positions: list[int] = []
    tags: list[str] = []
    for phrase, tag in _PHRASES.items():
        pos = joined.find(phrase)
        while pos >= 0:
            positions.append(pos)
            tags.append(tag)
            pos = joined.find(phrase, pos + 1)
    hits = [(m.start(), m.group(1)) for m in _EXT.finditer(joined)]
    for pos, ext in hits:
        if _word_before(joined, pos):
            positions.append(pos)
            tags.append(_EXTENSIONS[ext])
    return positions, tags, starts


def implied_by(tag: str) -> frozenset[str]:
    """A tag with the tags it implies."""
    return _IMPLIES.get(tag, frozenset({tag}))


def infer_task_tags(text: str) -> set[str]:
    """Known tags that appear literally, as whole words, in ``text``."""
    found = {w.decode() for w in words(text)} & KNOWN_TAGS
    if "browser_extension" in text.lower():
        found.add("browser_extension")
    return found


def infer_tags_from_text(text: str) -> set[str]:
    """Known tags in ``text`` plus those implied by synonyms, phrases and file extensions."""
    tags: set[str] = set()
    for word in set(words(text)):
        tags |= word_tags(word)
    return tags | special_tags(text.lower())


def stack_tags(tags: set[str] | frozenset[str]) -> set[str]:
    """The stack tags among ``tags``, with the languages their frameworks imply."""
    out = set(tags) & STACK_TAGS
    for tag in list(out):
        out |= _IMPLIES.get(tag, frozenset()) & STACK_TAGS
    return out


@lru_cache(maxsize=1 << 12)
def languages_of(tag: str) -> frozenset[str]:
    """The languages a stack tag is written in (``flask``: python; ``sqlite``: none)."""
    return frozenset(implied_by(tag) & LANGUAGE_TAGS)


def lesson_stacks(tags: frozenset[str], text: frozenset[str]) -> frozenset[str]:
    """The stacks a lesson is about: the stack tags of its tags (``tags``, with the
    languages they imply), less what the stacks inferred from its own trigger and fix
    (``text``) rule out:

    * when the text is written in some language (a ``.tsx`` file, ``npm``, a Python
      traceback), a tag in no language of the text goes (a lesson about ``main.tsx``
      in a Flask + React project is not about Flask or pytest); a tag in no language
      at all (``sqlite``) stays;
    * when the text names a stack of a kind (:data:`KINDS`), the tags of that kind it
      does not name go (a lesson that says "use vitest" is not about jest).

    With nothing left, the tags stand as they are: the text then disagrees with all
    of them, and the tags are what the lesson's author chose.
    """
    if not text:
        return tags
    kept = set(tags)
    spoken = frozenset().union(*map(languages_of, text & LANGUAGE_TAGS))  # ts is javascript too
    if spoken:
        kept = {t for t in kept if not languages_of(t) or languages_of(t) & spoken}
    for kind in KINDS:
        named = text & kind
        if named:
            kept -= kind - named
    return frozenset(kept) if kept else tags


def normalize_tags(tags: list[str] | set[str] | tuple[str, ...]) -> list[str]:
    """Lower-case, stripped, de-duplicated tags in their first order."""
    seen: dict[str, None] = {}
    for tag in tags:
        t = str(tag).strip().lower()
        if t:
            seen.setdefault(t, None)
    return list(seen)


MANIFESTS: dict[str, frozenset[str]] = {
    "pyproject.toml": frozenset({"python"}),
    "requirements.txt": frozenset({"python"}),
    "setup.py": frozenset({"python"}),
    "setup.cfg": frozenset({"python"}),
    "Pipfile": frozenset({"python"}),
    "package.json": frozenset({"node", "javascript"}),
    "tsconfig.json": frozenset({"typescript", "javascript"}),
    "go.mod": frozenset({"go"}),
    "Cargo.toml": frozenset({"rust", "cargo"}),
    "composer.json": frozenset({"php"}),
}
"""A manifest at a project's top -> the stacks it says the project is in."""
MANIFEST_BYTES = 256 * 1024
PROJECT_SKIP = frozenset(
    {".git", ".venv", "venv", "node_modules", "target", "dist", "build", "__pycache__"}
)
PROJECT_FILES = 5000
"""How many of a project's files the extension fallback looks at, at most."""


def project_tags(root: Path) -> set[str]:
    """The stack tags of the project at ``root`` (see the module docstring). Files are
    read without following links; what cannot be read says nothing."""
    languages: set[str] = set()
    named: set[str] = set()
    for name, stacks in MANIFESTS.items():
        if what_is(root / name) is not None:
            continue
        languages |= stacks
        try:
            text = read_regular(root / name, MANIFEST_BYTES).decode("utf-8", "replace")
        except (UnsafeFile, OSError):
            continue
        named |= stack_tags(infer_tags_from_text(text))
    if not languages:
        return _extension_languages(root)
    spoken = frozenset().union(*map(languages_of, languages))
    return languages | {t for t in named if not languages_of(t) or languages_of(t) & spoken}


def _extension_languages(root: Path) -> set[str]:
    found: set[str] = set()
    seen = 0
    for _folder, subfolders, files in os.walk(root):  # os.walk does not enter links
        subfolders[:] = [d for d in subfolders if d not in PROJECT_SKIP]
        for name in files:
            ext = name.rpartition(".")[2].lower() if "." in name else ""
            if ext in _EXTENSIONS:
                found |= implied_by(_EXTENSIONS[ext])
            seen += 1
            if seen >= PROJECT_FILES:
                return found & STACK_TAGS
    return found & STACK_TAGS
