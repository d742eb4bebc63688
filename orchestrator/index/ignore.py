"""``.gitignore`` rules as git applies them, bounded so a hostile file cannot stall a walk.

Each folder's ``.gitignore`` applies to the paths below that folder; for a path, the
deepest file with a matching pattern decides, and within a file the last matching
pattern (so ``!keep.log`` after ``*.log`` keeps it). Matching is pathspec's
``GitIgnoreSpec``, a regular expression per pattern tried one after another, so a file
of the model's making is held to what real ones need: at most ``MAX_PATTERNS`` patterns
of at most ``MAX_PATTERN_CHARS`` characters, with at most ``MAX_GLOBSTARS`` ``**`` each
(each more ``**`` multiplies the time a deep path can take), and ``MAX_RULES`` patterns
over all the folders above a path. Patterns past those limits, and ones git would
reject, are dropped.
"""

from __future__ import annotations

import re

from pathspec import GitIgnoreSpec

MAX_PATTERNS = 400
MAX_PATTERN_CHARS = 256
MAX_GLOBSTARS = 2
MAX_RULES = 2000

Rules = list[tuple[str, GitIgnoreSpec]]
"""(the folder a .gitignore sits in, with a trailing ``/`` or ``""``; its patterns)."""


def spec_of(text: str) -> GitIgnoreSpec:
    lines = [line for line in text.splitlines() if line.strip()][:MAX_PATTERNS]
    lines = [
        line
        for line in lines
        if len(line) <= MAX_PATTERN_CHARS and line.count("**") <= MAX_GLOBSTARS
    ]
    try:
        return GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):  # one bad pattern: keep the others
        patterns = []
        for line in lines:
            try:
                patterns += GitIgnoreSpec.from_lines([line]).patterns
            except (ValueError, re.error):
                continue
        return GitIgnoreSpec(patterns)


def with_file(rules: Rules, folder: str, text: str) -> Rules:
    """``rules`` and the ``.gitignore`` of ``folder``, while the patterns stay in bounds."""
    spec = spec_of(text)
    if sum(len(s.patterns) for _, s in rules) + len(spec.patterns) > MAX_RULES:
        return rules
    return [*rules, (folder, spec)]


def ignored(rules: Rules, where: str, is_dir: bool) -> bool:
    """What the deepest ``.gitignore`` with a say decides for ``where``."""
    for base, spec in reversed(rules):
        if not where.startswith(base):
            continue
        verdict = spec.check_file(where[len(base) :] + ("/" if is_dir else "")).include
        if verdict is not None:
            return verdict
    return False
