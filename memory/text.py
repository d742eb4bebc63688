"""What any text entering memory is made into first: one normal form, nothing invisible.

Lessons, notes and skills are read by later builds' models and by people reviewing the
memory; a text must read the same to both. :func:`clean` is applied by every store on
every way in (a reflection's lesson, the memory tool, ``memory add``, ``remember``,
``edit``, ``import``, a skill draft):

* NFKC normalization: compatibility forms (full-width letters, ligatures, mathematical
  alphanumerics such as ``𝐢𝐠𝐧𝐨𝐫𝐞``) become the plain letters they look like, so the
  text a person sees is the text the guard (:mod:`memory.guard`) matched.
* Every format character (Unicode category Cf: zero-width spaces and joiners, soft
  hyphens, bidirectional overrides, the byte-order mark) and every tag character
  (U+E0000 to U+E007F, which carry ASCII no screen shows) is removed: a text cannot hold
  words a reader does not see.

Control characters are not removed here; the guard refuses a text that holds them.
"""

from __future__ import annotations

import unicodedata


def _invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or 0xE0000 <= ord(char) <= 0xE007F


def clean(text: str) -> str:
    """``text`` in NFKC, without format (Cf) or tag characters."""
    normal = unicodedata.normalize("NFKC", text)
    if normal.isascii():
        return normal
    return "".join(c for c in normal if not _invisible(c))


def invisible(text: str) -> bool:
    """Whether ``text`` holds a format (Cf) or tag character that :func:`clean` removes."""
    return not text.isascii() and any(_invisible(c) for c in text)
