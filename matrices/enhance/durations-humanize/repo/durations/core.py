"""Durations as text (``2d4h``, ``1h 30m``, ``90s``) and as a number of seconds."""

from __future__ import annotations

import re

UNITS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
"""Seconds in each unit, largest first."""

_DURATION = re.compile(r"\s*(?:(\d+)\s*d)?\s*(?:(\d+)\s*h)?\s*(?:(\d+)\s*m)?\s*(?:(\d+)\s*s)?\s*")


def parse_duration(text: str) -> int:
    """The number of seconds in a duration such as ``"1h30m"``, ``"2d 4h"`` or ``"90s"``.

    Units are ``d``, ``h``, ``m`` and ``s``, each at most once and largest first; case and
    spaces between the parts do not matter. A bare number is a number of seconds.

    >>> parse_duration("1h30m")
    5400
    >>> parse_duration("45")
    45

    Raises ValueError for anything else (an empty string, an unknown unit, a unit twice).
    """
    cleaned = text.strip().lower()
    if cleaned.isdigit():
        return int(cleaned)
    match = _DURATION.fullmatch(cleaned)
    if not cleaned or match is None or not any(match.groups()):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * size for n, size in zip(match.groups(), UNITS.values(), strict=True) if n)


def format_duration(seconds: int) -> str:
    """``seconds`` in the compact form parse_duration reads: ``5400`` gives ``"1h30m"``.

    Units that are zero are left out; ``0`` gives ``"0s"``. Raises ValueError for a
    negative number.

    >>> format_duration(93_784)
    '1d2h3m4s'
    """
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {seconds}")
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
