"""A Python file's declared encoding (PEP 263, or a UTF-8 BOM) decides its names, docs and
signatures; ``\\n``, ``\\r\\n`` and old Mac ``\\r`` line endings give the same lines, in
every extractor and in the file's line count."""

from __future__ import annotations

import pytest

from orchestrator.index.encoding import count_lines, declared
from orchestrator.index.extract import extract


def _found(path: str, data: bytes):
    record, symbols = extract(path, data)
    return record, [(s.kind, s.name, s.parent, s.start_line, s.end_line) for s in symbols]


# --- encodings --------------------------------------------------------------------------

LATIN1 = """# -*- coding: latin-1 -*-
\"\"\"Fonctions du café : noms et prix.\"\"\"

from .données import Carte


def café_name(carte: Carte) -> str:
    \"\"\"Le nom du café, accentué.\"\"\"
    return carte.nom


class Crème:
    def brûler(self, degré: int = 2) -> None:
        pass
"""


def test_a_latin1_file_keeps_its_accented_names_docs_and_signatures():
    data = LATIN1.encode("latin-1")
    assert b"caf\xe9_name" in data  # one byte per é: not UTF-8
    record, found = _found("cafe/menu.py", data)
    assert found == [
        ("module", "cafe.menu", None, 1, 14),
        ("function", "café_name", None, 7, 9),
        ("class", "Crème", None, 12, 14),
        ("method", "brûler", "Crème", 13, 14),
    ]
    _, symbols = extract("cafe/menu.py", data)
    assert record.doc == "Fonctions du café : noms et prix."
    assert symbols[1].signature == "def café_name(carte: Carte) -> str:"
    assert symbols[1].doc == "Le nom du café, accentué."
    assert symbols[3].signature == "def brûler(self, degré: int = 2) -> None:"
    assert [(i.module, i.names, i.level) for i in record.imports] == [("données", ["Carte"], 1)]
    assert record.size == len(data) and not record.parse_errors  # the bytes as on disk


def test_the_declaration_may_be_on_the_second_line_after_a_shebang():
    source = (
        "#!/usr/bin/env python\n"
        "# vim: set fileencoding=cp1252 :\n"
        "def résumé():\n"
        '    """Le résumé “court”."""\n'
    )
    _, symbols = extract("tools/resume.py", source.encode("cp1252"))
    assert [(s.name, s.doc) for s in symbols[1:]] == [("résumé", "Le résumé “court”.")]


def test_a_declaration_is_read_as_python_reads_it():
    # Python runs this file: its declaring line is not UTF-8 (tokenize.detect_encoding
    # refuses it), and Emacs names the line ending in the encoding.
    for first in ("# Fichier généré -*- coding: latin-1 -*-", "# -*- coding: latin-1-unix -*-"):
        data = f"{first}\ndef générer():\n    pass\n".encode("latin-1")
        _, found = _found("gen/make.py", data)
        assert found[1] == ("function", "générer", None, 2, 3), first
    # On the second line only after a blank or comment line; never on the third.
    assert declared(b"#!/usr/bin/env python\n# coding: latin-1\n") == "iso8859-1"
    assert declared(b"\n# coding: latin-1\n") == "iso8859-1"
    assert declared(b"import os\n# coding: latin-1\n") is None
    assert declared(b"#\n#\n# coding: latin-1\n") is None
    assert declared(b"# coding: utf-8\n") is None  # nothing to re-encode


def test_a_shift_jis_docstring_ending_in_a_backslash_byte_parses():
    # In Shift_JIS the second byte of 表 is a backslash: parsed as bytes, it escapes the
    # closing quotes, and the docstring is lost to a syntax error.
    source = (
        "# -*- coding: shift_jis -*-\n"
        "def 一覧():\n"
        '    """設定の一覧表"""\n'
        "\n"
        "\n"
        "def load():\n"
        "    return 1\n"
    )
    data = source.encode("shift_jis")
    assert b'\\"""' in data
    record, found = _found("jp/settings.py", data)
    assert found == [
        ("module", "jp.settings", None, 1, 7),
        ("function", "一覧", None, 2, 3),
        ("function", "load", None, 6, 7),
    ]
    _, symbols = extract("jp/settings.py", data)
    assert symbols[1].doc == "設定の一覧表" and not record.parse_errors


def test_a_utf8_bom_is_utf8_and_no_part_of_the_first_line():
    data = '\ufeff"""Über alles."""\n\n\ndef größe():\n    return 1\n'.encode()
    record, found = _found("pkg/size.py", data)
    assert found == [("module", "pkg.size", None, 1, 5), ("function", "größe", None, 4, 5)]
    assert record.doc == "Über alles."


@pytest.mark.parametrize("declared", ["klingon", "utf-16", "rot13"])
def test_an_unknown_or_unusable_encoding_falls_back_to_utf8_with_replacement(declared):
    data = f"# coding: {declared}\ndef naïve():\n    pass\n".encode() + b"# \xff\n"
    record, found = _found("pkg/odd.py", data)
    assert found == [("module", "pkg.odd", None, 1, 4), ("function", "naïve", None, 2, 3)]
    assert record.lines == 4


# --- line endings -----------------------------------------------------------------------

PYTHON = """\"\"\"Old Mac utilities.\"\"\"
import os

from .paths import home


class Finder:
    \"\"\"Finds files.\"\"\"

    def open(self, name):
        return os.path.join(home(), name)


if __name__ == "__main__":
    Finder().open("x")
"""

JAVASCRIPT = """// Formats money.
const { round } = require("./round");


function money(cents) {
  return round(cents / 100);
}

export class Till {
  add(cents) {
    return money(cents);
  }
}
"""

RUBY = """require_relative "helpers"

# Ships the shop.
class Deployer
  def run
    true
  end
end
"""

ENDINGS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


@pytest.mark.parametrize("ending", ENDINGS)
def test_python_lines_are_right_for_every_line_ending(ending):
    data = PYTHON.replace("\n", ENDINGS[ending]).encode()
    record, found = _found("macos/finder.py", data)
    assert found == [
        ("module", "macos.finder", None, 1, 15),
        ("class", "Finder", None, 7, 11),
        ("method", "open", "Finder", 10, 11),
    ]
    assert record.lines == 15 and not record.parse_errors
    assert [(i.module, i.line) for i in record.imports] == [("os", 2), ("paths", 4)]
    assert record.facts is not None and record.facts.main
    _, symbols = extract("macos/finder.py", data)
    assert symbols[1].doc == "Finds files." and symbols[2].signature == "def open(self, name):"


@pytest.mark.parametrize("ending", ENDINGS)
def test_javascript_lines_are_right_for_every_line_ending(ending):
    data = JAVASCRIPT.replace("\n", ENDINGS[ending]).encode()
    record, found = _found("web/till.js", data)
    assert found == [
        ("function", "money", None, 5, 7),
        ("class", "Till", None, 9, 13),
        ("method", "add", "Till", 10, 12),
    ]
    assert record.lines == 13
    assert [(i.module, i.line) for i in record.imports] == [("./round", 2)]


@pytest.mark.parametrize("ending", ENDINGS)
def test_scanned_lines_are_right_for_every_line_ending(ending):
    data = RUBY.replace("\n", ENDINGS[ending]).encode()
    record, found = _found("scripts/deploy.rb", data)
    assert found == [("class", "Deployer", None, 4, 4), ("method", "run", "Deployer", 5, 5)]
    assert record.lines == 8
    assert [(i.module, i.line) for i in record.imports] == [("helpers", 1)]


def test_a_form_feed_is_no_line_break_for_the_scanner_either():
    # GNU-style C separates pages with ^L; tree-sitter and the line count do not break
    # lines there, so the scanner must not either.
    data = (
        b"/* Page one. */\n\x0c\nstatic int first(void) {\n  return 1;\n}\n"
        b"\x0c\nstatic int second(void);\n"
    )
    record, found = _found("src/pages.c", data)
    assert [(name, start) for _, name, _, start, _ in found] == [("first", 3), ("second", 7)]
    assert record.lines == 7


def test_count_lines_agrees_for_every_line_ending():
    for ending in ENDINGS.values():
        assert count_lines(f"a{ending}b{ending}".encode()) == 2
        assert count_lines(f"a{ending}b".encode()) == 2
        assert count_lines(f"a{ending}{ending}b{ending}".encode()) == 3
    assert count_lines(b"") == 0 and count_lines(b"a\r\n\rb\n") == 3
