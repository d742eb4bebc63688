"""Which stack a piece of text is about: the known tag set and two ways to infer tags.

* :func:`infer_task_tags` is strict: only words that *are* known tags count.
  It is what the seed's hard tag filter runs on a task description.
* :func:`infer_tags_from_text` is broad: it also maps synonyms and file
  extensions (``aiosqlite`` means python, sqlite and asyncio; ``.tsx`` means
  typescript) and adds the language a framework implies (``flask`` means
  python), because "same language counts as same stack". It is what the
  penalty layers run on a lesson's source task and body.

Tags are lower-case words. Phase tags (plan, deps, ...) and layout tags
(modular, flat) are known tags but not *stack* tags: they say when or how a
lesson was learned, not which ecosystem it belongs to.
"""

from __future__ import annotations

import re

LANGUAGE_TAGS = frozenset(
    {"python", "typescript", "javascript", "node", "go", "rust", "php", "html", "css"}
)
FRAMEWORK_TAGS = frozenset(
    {
        "react", "vue", "angular", "electron", "desktop", "flask", "django", "fastapi",
        "express", "pygame", "click", "asyncio", "aiosqlite", "sqlite", "pytest", "vitest",
        "jest", "phpunit", "wordpress", "browser_extension", "pytorch", "numpy", "pandas",
        "cuda", "cargo",
    }
)  # fmt: skip
STACK_TAGS = LANGUAGE_TAGS | FRAMEWORK_TAGS
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
_WORD = re.compile(r"[a-z0-9_]+")
_EXT = re.compile(r"\w\.(py|tsx?|jsx?|mjs|rs|go|php)\b")
_PHRASES = {
    "browser extension": "browser_extension",
    "chrome extension": "browser_extension",
    "firefox extension": "browser_extension",
    "manifest v3": "browser_extension",
    "package.json": "node",
    "go.mod": "go",
    "cargo.toml": "rust",
    "requirements.txt": "python",
    "pyproject.toml": "python",
}


def infer_task_tags(text: str) -> set[str]:
    """Known tags that appear literally, as whole words, in ``text``."""
    return set(_WORD.findall(text.lower())) & KNOWN_TAGS


def infer_tags_from_text(text: str) -> set[str]:
    """Known tags in ``text`` plus those implied by synonyms, phrases and file extensions."""
    low = text.lower()
    words = set(_WORD.findall(low))
    tags = words & KNOWN_TAGS
    for word in words:
        implied = _IMPLIES.get(word)
        if implied:
            tags |= implied
    for phrase, tag in _PHRASES.items():
        if phrase in low:
            tags |= _IMPLIES.get(tag, frozenset({tag}))
    for ext in _EXT.findall(low):
        lang = _EXTENSIONS[ext]
        tags |= _IMPLIES.get(lang, frozenset({lang}))
    return tags


def stack_tags(tags: set[str] | frozenset[str]) -> set[str]:
    """The stack tags among ``tags``, with the languages their frameworks imply."""
    out = set(tags) & STACK_TAGS
    for tag in list(out):
        out |= _IMPLIES.get(tag, frozenset()) & STACK_TAGS
    return out


def normalize_tags(tags: list[str] | set[str] | tuple[str, ...]) -> list[str]:
    """Lower-case, stripped, de-duplicated tags in their first order."""
    seen: dict[str, None] = {}
    for tag in tags:
        t = str(tag).strip().lower()
        if t:
            seen.setdefault(t, None)
    return list(seen)
