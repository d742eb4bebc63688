"""What the extractors read of a file's bytes: one kind of line ending, and Python in UTF-8.

Tree-sitter counts rows at ``\\n`` only. So before a file is parsed or scanned,
:func:`newlines` turns ``\\r\\n`` and a bare ``\\r`` (old Mac files) into ``\\n``, and every
extractor's line numbers agree with :func:`count_lines`, which counts the three alike on
the bytes as they are. A form feed or a Unicode line separator breaks no line, here or for
tree-sitter. (On the bytes of an ASCII-compatible encoding this is safe: no multi-byte
character holds a ``\\r`` or ``\\n`` byte.)

Tree-sitter also takes bytes as UTF-8. A Python file may declare another encoding (PEP 263:
``# -*- coding: latin-1 -*-`` in a comment on its first line, or on its second when the
first is blank or a comment) or open with a UTF-8 BOM; :func:`python_utf8` re-encodes it
to UTF-8 before it is parsed, so names, docs and signatures read right, and a Shift_JIS
character whose second byte is a ``\\`` cannot escape a quote. Rows stay where they were;
byte offsets then count in the UTF-8 text, which is all that reads them. An unknown
encoding, or one that is not ASCII-compatible (``utf-16``, ``rot13``), is read as UTF-8
with replacement characters, as a file without a declaration is.

The declaration is matched on bytes, with the patterns of :mod:`tokenize`:
``tokenize.detect_encoding`` itself decodes the declaring line as UTF-8 first, and so
refuses ``# Fichier généré -*- coding: latin-1 -*-``, which Python runs.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

BOM = codecs.BOM_UTF8
COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
BLANK = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
EMACS_EOL = re.compile(r"-(?:unix|dos|mac)$")
"""Emacs spells a line ending into the name (``utf-8-unix``); Python reads past it."""
AS_UTF8 = frozenset({"utf-8", "utf-8-sig", "ascii"})
"""Declarations read as plain UTF-8 (ASCII is its subset: a stray byte reads as UTF-8)."""
_PROBE = b"#coding=\t 'x' \"y\" \\\\ +~\n"
"""ASCII that an ASCII-compatible codec decodes to itself (``utf-7`` and escapes do not)."""


def newlines(data: bytes) -> bytes:
    """``data`` with ``\\r\\n`` and bare ``\\r`` made ``\\n``."""
    if b"\r" not in data:
        return data
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def count_lines(data: bytes) -> int:
    """The lines of ``data``, ended by ``\\n``, ``\\r\\n`` or ``\\r``; a last line without
    an ending counts."""
    if not data:
        return 0
    breaks = data.count(b"\n")
    if b"\r" in data:
        breaks += data.count(b"\r") - data.count(b"\r\n")
    return breaks + (0 if data.endswith((b"\n", b"\r")) else 1)


def python_utf8(data: bytes) -> bytes:
    """A Python file's bytes in UTF-8: a BOM dropped, a declared encoding decoded (invalid
    bytes replaced). Other bytes are returned as they are."""
    if data.startswith(BOM):
        return data[len(BOM) :]
    encoding = declared(data)
    if encoding is None:
        return data
    try:
        return data.decode(encoding, "replace").encode("utf-8", "replace")
    except UnicodeError:  # a codec that knows no "replace" (idna) and met what it refuses
        return data


def declared(data: bytes) -> str | None:
    """The codec a Python file's PEP 263 declaration names, when it is one to decode with:
    None for none, UTF-8 or ASCII, and for an unknown or unusable one."""
    end = data.find(b"\n")
    if end >= 0:
        end = data.find(b"\n", end + 1)
    head = data if end < 0 else data[:end]
    if b"coding" not in head:
        return None
    first, _, second = head.partition(b"\n")
    match = COOKIE.match(first)
    if match is None and BLANK.match(first):
        match = COOKIE.match(second)
    if match is None:
        return None
    return _codec(match.group(1).decode("ascii").lower())


@lru_cache(maxsize=256)
def _codec(name: str) -> str | None:
    try:
        codec = codecs.lookup(EMACS_EOL.sub("", name)).name
        usable = _PROBE.decode(codec) == _PROBE.decode("ascii")
    except (LookupError, UnicodeError):
        return None
    return codec if usable and codec not in AS_UTF8 else None
