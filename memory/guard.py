"""What text a model wrote may not carry into a later build's prompt.

Lessons, notes and skills that a model saves are shown to later builds, so a model
could use them to steer a model that reads them later: tell it to ignore its
instructions, speak as a chat role, pipe a download into a shell, reach for secrets,
switch the sandbox off, or hide text where a person reviewing the memory would not see
it. :func:`injection` says why a text reads as such an attempt; the stores refuse it
(a skill draft, a note or lesson from the memory tool, a reflection's line). The
patterns are deliberately narrow: advice about ordinary code passes.
"""

from __future__ import annotations

import re

INJECTION = {
    "tells the model to ignore its instructions": r"\b(ignore|disregard|forget|override)\b"
    r"[^\n.]{0,40}\b(previous|prior|above|earlier|system|all)\b[^\n.]{0,20}"
    r"\b(instructions?|rules|prompts?|messages?)\b",
    "speaks as a chat role": r"(?im)^\s*(system|assistant|developer)\s*:",
    "holds a chat-template token": r"<\|[a-z_]+\|>|\[/?INST\]",
    "asks for the system prompt": r"\b(reveal|print|show|repeat)\b[^\n.]{0,20}\bsystem prompt",
    "pipes a download into a shell": r"\b(curl|wget)\b[^\n]*\|\s*(ba|z|da)?sh\b",
    "reaches for secrets": r"~/\.ssh|\bid_rsa\b|/etc/shadow|\.aws/credentials",
    "turns the sandbox off": r"--unsafe-no-sandbox|\b(disable|bypass|escape)\b[^\n.]{0,20}sandbox",
    "hides text in an HTML comment": r"<!--",
    "hides text in invisible characters": "[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]",
}
_INJECTION = {why: re.compile(rx, re.IGNORECASE) for why, rx in INJECTION.items()}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def injection(text: str) -> str | None:
    """Why ``text`` reads as an attempt to steer the model reading it, or None."""
    for why, pattern in _INJECTION.items():
        if pattern.search(text):
            return why
    return "holds control characters" if _CONTROL.search(text) else None
