"""Which language a file is, and the one tree-sitter parser of each language that has one.

Grammars come compiled inside their wheels (``tree_sitter_python.language()`` ...);
nothing is fetched at run time. A parser is made once per language and process and
reused for every file. Languages without a grammar here are either *scanned* (a line
scanner finds their ``def``/``class``/``function`` lines) or *text* (listed, no symbols).
"""

from __future__ import annotations

from functools import cache

import tree_sitter

from orchestrator.index import paths

GRAMMARS = ("python", "javascript", "typescript", "tsx", "go", "rust")

_BY_SUFFIX = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    # scanned line by line
    ".rb": "ruby",
    ".lua": "lua",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".swift": "swift",
    ".php": "php",
    ".cs": "csharp",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".pl": "perl",
    ".ex": "elixir",
    ".exs": "elixir",
    ".r": "r",
    ".jl": "julia",
    ".dart": "dart",
    # text
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".toml": "toml",
    ".json": "json",
    ".jsonl": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".cfg": "ini",
    ".ini": "ini",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "css",
    ".xml": "xml",
    ".sql": "sql",
    ".csv": "csv",
    ".lock": "lock",
    ".j2": "template",
    ".jinja": "template",
}
_BY_NAME = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "license": "text",
    "readme": "text",
    "go.sum": "lock",
    "go.mod": "gomod",
    ".gitignore": "text",
    ".ignore": "text",
    ".dockerignore": "text",
    ".gitattributes": "text",
    ".editorconfig": "ini",
}
SCANNED = frozenset(
    "ruby lua shell java kotlin scala swift php csharp c cpp perl elixir r julia dart".split()
)
CODE = frozenset(GRAMMARS) | SCANNED


def language_of(path: str) -> str:
    """The language of a file from its name: a grammar's, a scanned one's, a text kind, or
    ``other``."""
    name = paths.name(path).lower()
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.startswith("dockerfile"):
        return "dockerfile"
    return _BY_SUFFIX.get(paths.suffix(name), "other")


def family(language: str) -> str:
    """Languages whose files import each other: the JS/TS dialects are one family."""
    return "js" if language in ("javascript", "typescript", "tsx") else language


@cache
def grammar(language: str) -> tree_sitter.Language:
    if language == "python":
        import tree_sitter_python as mod
    elif language == "javascript":
        import tree_sitter_javascript as mod
    elif language in ("typescript", "tsx"):
        import tree_sitter_typescript as ts

        raw = ts.language_tsx() if language == "tsx" else ts.language_typescript()
        return tree_sitter.Language(raw)
    elif language == "go":
        import tree_sitter_go as mod
    elif language == "rust":
        import tree_sitter_rust as mod
    else:
        raise KeyError(language)
    return tree_sitter.Language(mod.language())


@cache
def parser(language: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(grammar(language))
