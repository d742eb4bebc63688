"""What text a model wrote may not carry into a later build's prompt.

Lessons, notes and skills that a model saves are shown to later builds, so a model
could use them to steer a model that reads them later: tell it to ignore its
instructions, speak as a chat role, run a download, reach for secrets, switch the
sandbox off, send data out through an image, or hide text where a person reviewing the
memory would not see it. :func:`injection` says why a text reads as such an attempt;
the stores refuse it (a skill draft, a note or lesson from the memory tool, a
reflection's line).

What this module decides, and why:

* Patterns match the text as a reader takes it, not as it is spelled: :func:`folded`
  applies :func:`memory.text.clean` (NFKC, no format or tag characters: soft hyphens and
  zero-width characters go), case-folds, drops accents, maps the common Cyrillic and
  Greek look-alikes to the Latin letters they imitate (:data:`CONFUSABLES`), joins a
  word hyphenated across a line break and collapses every run of white space, newlines
  included, to one space. So ``Ig\\u00adnore prev\\u0456ous\\ninstructions`` is
  ``ignore previous instructions``. Role lines are matched line by line (a line that
  starts ``User:``), on the same folding without the newline collapse.
* The override phrases are matched in English (and paraphrased: "disregard everything
  you were told before", "forget your instructions", "new instructions:") and in German,
  French and Spanish.
* A markdown image with a remote URL is refused whatever it says (a renderer fetches it
  unasked, and its URL can carry data out); so is a link or link definition whose remote
  URL carries a query (``?q=...``), and an HTML image.
* Invisible characters in the raw text are refused as well: callers that store text
  clean it first (:mod:`memory.text`), so only a caller that did not is told.
* The patterns stay narrow enough for ordinary advice about code: the whole corpus of
  the earlier system's lessons passes (tests/memory/test_guard.py measures it).
"""

from __future__ import annotations

import re
import unicodedata

from memory.text import clean, invisible

CONFUSABLES = str.maketrans(
    {
        # Cyrillic (lower case: the text is case-folded first)
        "а": "a",
        "в": "b",
        "ԁ": "d",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "н": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "о": "o",
        "р": "p",
        "ԛ": "q",
        "г": "r",
        "ѕ": "s",
        "т": "t",
        "ц": "u",
        "ѵ": "v",
        "ԝ": "w",
        "х": "x",
        "у": "y",
        "з": "3",
        # Greek
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "γ": "y",
        "ω": "w",
        "ς": "s",
        "σ": "o",
        # Latin look-alikes
        "ı": "i",
        "ɩ": "i",
        "ɡ": "g",
        "ℓ": "l",
    }
)
"""The common look-alikes, mapped to the Latin letter they imitate."""

_TOLD = (
    r"(instructions?|rules|prompts?|messages?|directions?|directives?|guidelines|guidance"
    r"|orders|commands|constraints|context|told|said|given|programming)"
)
_WHICH = (
    r"(previous|prior|above|earlier|preceding|foregoing|system|all|everything|anything"
    r"|original|initial|your|any|the|those|these|what)"
)
_OVERRIDE = (
    r"\b(ignore|disregard|forget|override|overrule|abandon|discard|drop|skip|bypass"
    r"|set aside|pay no attention to|do not follow|don't follow|stop following|no longer follow)"
    rf"\b.{{0,60}}\b{_WHICH}\b.{{0,40}}\b{_TOLD}"
)
_FOREIGN = (
    # German
    r"\b(ignorier|vergiss|vergessen|missacht|uberges)\w*\b.{0,40}"
    r"\b(anweisung|instruktion|befehl|regel|vorgabe)\w*"
    r"|\bneue (anweisungen|instruktionen|regeln)\b"
    # French
    r"|\b(ignore|oublie|neglige)\w*\b.{0,40}\b(instructions?|consignes?|regles|directives?)\b"
    r"|\bnouvelles? (instructions?|consignes?)\b"
    # Spanish
    r"|\b(ignora|olvida|omite|descarta)\w*\b.{0,40}\b(instrucciones|reglas|indicaciones|ordenes)\b"
    r"|\bnuevas? (instrucciones|reglas)\b"
)
_DOWNLOAD = r"\b(curl|wget|fetch|iwr|invoke-webrequest|invoke-restmethod|irm)\b"
_SHELL = r"(sudo )?(env )?(ba|z|da|k|fi|c|tc)?sh\b|python[0-9.]*\b|perl\b|ruby\b|node\b|php\b"
_SECRET = (
    r"(~|\$home|\$\{home\}|/root|/home/[^/ ]+)/\.ssh\b|\.ssh/(id_|authorized_keys|config\b)"
    r"|\bid_(rsa|dsa|ecdsa|ed25519)\b|\.netrc\b|\.docker/config\.json|\.aws/(credentials|config)"
    r"|\.npmrc\b|\.pypirc\b|credentials\.toml\b|\.git-credentials\b|\.kube/config\b"
    r"|/etc/shadow\b|\.gnupg\b|gh/hosts\.yml"
)

# (why, pattern, where): "flat" is the folded text on one line, "lines" keeps the lines
RULES: tuple[tuple[str, str, str], ...] = (
    ("tells the model to ignore its instructions", _OVERRIDE, "flat"),
    ("tells the model to ignore its instructions", _FOREIGN, "flat"),
    (
        "tells the model to take new instructions",
        r"\bnew (instructions?|rules|system prompt|task|orders)\s*:"
        r"|\b(from now on|henceforth),? you (are|will|must|shall)\b|\byou are now (a|an|in)\b"
        r"|\b(developer|god|jailbreak|dan) mode\b|\bjailbreak",
        "flat",
    ),
    (
        "speaks as a chat role",
        r"(?m)^[ >#*-]*(system|assistant|developer|user|human|ai|tool|model)\s*:",
        "lines",
    ),
    (
        "holds a chat-template token",
        r"<\|[a-z_ ]+\|>|\[/?inst\]|</?s>|<<\s*/?sys\s*>>"
        r"|<\s*/?\s*(system|assistant|user|developer|human|im_start|im_end)\b[^>]*>"
        r"|###\s*(instruction|system|response)\s*:",
        "flat",
    ),
    (
        "asks for the system prompt",
        r"\b(reveal|print|show|repeat|output|leak|dump)\b.{0,20}\b(system|hidden|initial) prompt",
        "flat",
    ),
    (
        "pipes a download into a shell",
        rf"{_DOWNLOAD}[^|;&]*\|\s*({_SHELL}|source\b|eval\b|iex\b|invoke-expression\b)",
        "flat",
    ),
    (
        "runs a download",
        rf"{_DOWNLOAD}.{{0,200}}(&&|;|\|\||\n)\s*({_SHELL}|chmod\b|source\b|\.\s|\./)"
        rf"|[$`]\(?\s*{_DOWNLOAD}|<\(\s*{_DOWNLOAD}|\b(eval|iex|invoke-expression)\b.{{0,20}}{_DOWNLOAD}"
        r"|\bexec\s*\(.{0,40}\b(urlopen|requests\.get|urllib)",
        "flat",
    ),
    ("reaches for secrets", _SECRET, "flat"),
    (
        "turns the sandbox off",
        r"--(unsafe-)?no-sandbox|--disable-sandbox|--dangerously"
        r"|\b(turn|switch|shut|take)(ing|s|ed)? (the )?(\w+ )?(sandbox|bwrap|bubblewrap)"
        r" (\w+ )?off\b"
        r"|\b(turn|switch|shut)(ing|s|ed)? off\b.{0,30}\b(sandbox|bwrap|bubblewrap)"
        r"|\b(disabl|bypass|escap|circumvent|remov|skip|avoid|evad|break(ing)? out of"
        r"|get(ting)? (around|out of)|leav)\w*\b.{0,30}\b(sandbox|bwrap|bubblewrap)"
        r"|\bwithout (the |a |any )?(sandbox|bwrap|bubblewrap)|\boutside (of )?the sandbox"
        r"|\bsandbox\w*\s*[:=]\s*(false|off|0|none|no)\b",
        "flat",
    ),
    (
        "sends data out through a markdown image or link",
        r"!\[[^\]]*\]\(\s*<?\s*(https?:|ftp:)?//"
        r"|!\[[^\]]*\]\s*\[[^\]]*\]"
        r"|\]\(\s*<?\s*(https?:)?//[^)\s]*\?[^)\s]*="
        r"|<\s*img\b",
        "flat",
    ),
    (
        "sends data out through a markdown image or link",
        r"(?m)^\s*\[[^\]]+\]:\s*<?\s*(https?:)?//\S*\?\S*=",
        "lines",
    ),
    ("hides text in an HTML comment", r"<!--", "flat"),
)
_RULES = tuple((why, re.compile(rx, re.IGNORECASE), where) for why, rx, where in RULES)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_HYPHEN_BREAK = re.compile(r"(?<=\w)-[ \t]*\r?\n\s*(?=\w)")


def _fold_chars(text: str) -> str:
    """Cleaned, case-folded, without accents, look-alikes mapped to Latin."""
    text = clean(text).casefold()
    if not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
        )
        text = unicodedata.normalize("NFKC", text.translate(CONFUSABLES))
    return text


def folded(text: str) -> str:
    """``text`` as the phrase patterns read it: see the module docstring."""
    return " ".join(_HYPHEN_BREAK.sub("", _fold_chars(text)).split())


def _lines(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in _fold_chars(text).splitlines())


def injection(text: str) -> str | None:
    """Why ``text`` reads as an attempt to steer the model reading it, or None."""
    views = {"flat": folded(text), "lines": _lines(text)}
    for why, pattern, where in _RULES:
        if pattern.search(views[where]):
            return why
    if invisible(text):
        return "hides text in invisible characters"
    return "holds control characters" if _CONTROL.search(clean(text)) else None
