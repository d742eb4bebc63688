"""One file's content becomes its record and its symbols: the one dispatch by language.

A language with a grammar is parsed by tree-sitter (:mod:`python_code` for Python,
:mod:`declarations` for JS/TS/Go/Rust); tree-sitter keeps going past a syntax error, so
a broken file still yields what parses and says ``parse_errors``. A language without a
grammar goes to the line scanner (:mod:`scan`); text files are listed with no symbols.
Manifests and READMEs add their :class:`Facts` whatever their language.

Every extractor reads the file with its line endings made ``\\n`` (:mod:`encoding`), so a
``\\r\\n`` or old Mac ``\\r`` file has its lines where they are; the record's size and hash
are those of the bytes as they are on disk.
"""

from __future__ import annotations

import hashlib

from orchestrator.index import declarations, paths, python_code
from orchestrator.index.encoding import count_lines, newlines
from orchestrator.index.languages import GRAMMARS, SCANNED, language_of
from orchestrator.index.manifests import facts_for, readme_title
from orchestrator.index.records import Facts, FileRecord, Import, Symbol
from orchestrator.index.scan import scan

MAX_SYMBOLS, MAX_IMPORTS = 5000, 2000
"""Kept per file: past that, a file is generated or hostile, not read by people."""


def extract(
    path: str, data: bytes, mtime_ns: int = 0, sha256: str = ""
) -> tuple[FileRecord, list[Symbol]]:
    """The record and symbols of the file at ``path`` (relative, ``/``) holding ``data``."""
    language = language_of(path)
    text = newlines(data)
    symbols: list[Symbol] = []
    imports: list[Import] = []
    errors, doc, main = False, "", False
    if language == "python":
        symbols, imports, errors, doc = python_code.extract(path, text)
        main = python_code.is_main(text) or paths.name(path) == "__main__.py"
    elif language in GRAMMARS:
        found, errors = declarations.extract(path, language, text)
        symbols, imports, doc, main = found.symbols, found.imports, found.doc, found.main
        main = main or (language == "javascript" and text.startswith(b"#!"))
    elif language in SCANNED:
        symbols, imports = scan(path, language, text)
        main = text.startswith(b"#!")
    symbols, imports = symbols[:MAX_SYMBOLS], imports[:MAX_IMPORTS]
    record = FileRecord(
        path=path,
        language=language,
        size=len(data),
        lines=count_lines(data),
        sha256=sha256 or hashlib.sha256(data).hexdigest(),
        mtime_ns=mtime_ns,
        parse_errors=errors,
        doc=doc,
        imports=imports,
        facts=_facts(path, text, main),
    )
    if not record.doc and paths.name(path).lower().startswith("readme"):
        record.doc = readme_title(text.decode("utf-8", "replace"))
    return record, symbols


def _facts(path: str, data: bytes, main: bool) -> Facts | None:
    facts = facts_for(path, data)
    if main:
        facts = facts or Facts()
        facts.main = True
    return facts
