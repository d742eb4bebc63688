"""Keeping a phase's conversation within the model's context: trim the oldest large pieces.

A long phase (a build budget can run past a hundred rounds) accumulates text: tool
results (file contents, test output), the model's own replies, and the arguments of its
tool calls (a ``write_file`` argument is a whole file). Everything counts: a message
weighs what its JSON weighs as it is sent. What this module decides, and why:

* When the conversation grows past its character budget, it is trimmed, in place, to
  :data:`LOW_WATER` of the budget, not just under it, so that a trim is followed by
  rounds that change nothing before it: the conversation's start stays the same from
  one request to the next (what a provider's prompt cache and ``llm.jsonl``, which logs
  each request's new messages only, both rely on).
* The opening (system prompt and task, ``messages[0:2]``) is never touched: it holds
  the model's instructions. If the opening alone is over the budget, it is sent whole.
* First, oldest first, the large pieces of the older messages (all but the last
  :data:`KEEP_RECENT`) are cut to a stub: a tool result to its first line and a note of
  its whole size and how to get it back, a reply or a user message to a head, a
  tool-call argument to a head and a tail, each with a note saying how many characters
  went. If the stubs are still too many (a phase of hundreds of rounds), they are cut
  again, oldest first, to little more than their note.
* If that is not enough (a single message can outweigh the budget, such as a 30 MB
  file the model just wrote), the largest pieces anywhere after the opening, the recent
  ones too, are cut to a head and a tail, as little as the budget needs. The recent
  messages' work is worth more than old stubs, so they are cut last.
* No message is removed (a tool result must follow the call it answers), so a
  conversation of very many messages can stay over the budget by what their bare
  structure weighs (some 500 characters a round of one call: at the default budget of
  240,000, beyond 400 rounds).
* A tool call's arguments stay a JSON object of the same keys (providers validate
  them): only its string values are cut. Arguments that were not a JSON object become
  ``{"unparsed_arguments": ...}`` when they are cut.
* A piece cut again (a recent piece that becomes old) keeps the count of everything
  ever elided from it, not the count of the last cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KEEP_RECENT = 12
"""Pieces of the last this many messages are cut only when cutting older ones is not enough."""
LOW_WATER = 0.75
"""A trim brings the conversation down to this share of its budget."""
MIN_PIECE = 400
"""Old pieces shorter than this are not cut to a stub."""
STUB = 200
"""Characters an old piece keeps (a tool result: at most this much of its first line)."""
BARE = 30
"""What an old stub keeps when stubs alone are over the budget (a long phase)."""
BARE_MIN = 200
"""Old pieces shorter than this are not cut to bare."""
MIN_KEEP = 400
"""The least a recent piece keeps when the budget makes it cut."""
NOTE_ROOM = 600
"""What a cut's note may weigh, escaped, in the message's JSON (the cut must save more)."""

NOTES = {
    "result": " from this output; read the file or run the command again if you need them",
    "reply": " from this reply",
    "message": " from this message",
    "argument": " from this argument; the call itself had them all",
}
"""What a cut's note says after its count, by the piece's kind."""
STUB_NOTE = "; read the file or run the command again if you need them"
"""The note of an old tool result cut to its first line; its count is the whole result's."""
_MARK = re.compile(r"\n?\[\.\.\. ([\d,]+) characters elided to save context([^\]]*) \.\.\.\]\n?")


def compact(messages: list[dict], limit: int) -> None:
    """Trim, in place, the oldest large pieces until the conversation fits ``limit`` characters.

    Tool results, replies, user messages and tool-call arguments all count (see the module
    docstring); the opening (system prompt and task) stays whole.
    """
    sizes = [_size(m) for m in messages]
    total = sum(sizes)
    if total <= limit:
        return
    target = int(limit * LOW_WATER)

    def remeasure(index: int) -> None:
        nonlocal total
        new = _size(messages[index])
        total += new - sizes[index]
        sizes[index] = new

    for keep, least in ((STUB, MIN_PIECE), (BARE, BARE_MIN)):  # old pieces: stubs, then bare
        for index in range(2, max(2, len(messages) - KEEP_RECENT)):
            if total <= target:
                return
            pieces, commit = _pieces(messages[index])
            cut = [p for p in pieces if len(p.text) >= least]
            for piece in cut:
                piece.set(_cut(piece.text, piece.kind, keep))
            if cut:
                commit()
                remeasure(index)
    cap: int | None = None
    while total > target:
        found = [(i, p) for i in range(2, len(messages)) for p in _pieces(messages[i])[0]]
        cap = _cap([(len(p.text), p.weight()) for _, p in found], total - target, cap)
        if cap is None:
            return  # nothing left to cut: the opening or many small pieces fill the budget
        for index in sorted({i for i, p in found if len(p.text) > cap}):
            pieces, commit = _pieces(messages[index])
            for piece in pieces:
                if len(piece.text) > cap:
                    piece.set(_cut(piece.text, piece.kind, cap, tail=True))
            commit()
            remeasure(index)


def _cap(pieces: list[tuple[int, int]], excess: int, previous: int | None) -> int | None:
    """The largest length to cut every longer piece to so that ``excess`` goes (or the
    least allowed, when even that is not enough); None when there is nothing to cut.

    ``pieces`` are (length, weight in the JSON): a character cut from a piece saves its
    share of the piece's weight (escapes make a file in an argument weigh more)."""
    longest = max((n for n, _ in pieces), default=0)
    top = min(longest, previous if previous is not None else longest) - 1
    if top < MIN_KEEP:
        return None

    def saved(cap: int) -> float:
        return sum((n - cap) * w / n - NOTE_ROOM for n, w in pieces if n > cap)

    if saved(MIN_KEEP) < excess:
        return MIN_KEEP
    low, high = MIN_KEEP, top  # saved(low) >= excess; find the largest such cap
    while low < high:
        middle = (low + high + 1) // 2
        if saved(middle) >= excess:
            low = middle
        else:
            high = middle - 1
    return low


def _size(message: dict) -> int:
    """A message's weight: its JSON as sent, with the separator between messages."""
    return len(json.dumps(message, ensure_ascii=False, default=str)) + 2


@dataclass
class _Piece:
    text: str
    kind: str
    set: Callable[[str], None]

    def weight(self) -> int:
        """What the text weighs in its message's JSON (an argument is escaped twice)."""
        escaped = json.dumps(self.text, ensure_ascii=False)
        if self.kind == "argument":
            escaped = json.dumps(escaped, ensure_ascii=False)
        return len(escaped) - 2


def _pieces(message: dict) -> tuple[list[_Piece], Callable[[], None]]:
    """The cuttable texts of a message, and what to call once some were set (it writes
    cut arguments back as JSON)."""
    pieces: list[_Piece] = []
    kind = {"tool": "result", "assistant": "reply"}.get(message.get("role", ""), "message")
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(_Piece(content, kind, _setter(message, "content")))
    elif isinstance(content, list):  # parts: only their text counts as a piece
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(_Piece(part["text"], kind, _setter(part, "text")))
    calls: list[tuple[dict, Any, list[bool]]] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        raw = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(raw, str) or len(raw) < BARE_MIN:
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            value = {"unparsed_arguments": raw}
        dirty = [False]
        for holder, key in _strings(value):
            pieces.append(_Piece(holder[key], "argument", _setter(holder, key, dirty)))
        calls.append((function, value, dirty))

    def commit() -> None:
        for function, value, dirty in calls:
            if dirty[0]:
                function["arguments"] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    return pieces, commit


def _setter(holder: Any, key: Any, dirty: list[bool] | None = None) -> Callable[[str], None]:
    def set_(text: str) -> None:
        holder[key] = text
        if dirty is not None:
            dirty[0] = True

    return set_


def _strings(value: Any):
    """(holder, key) of every string inside a JSON value, depth first."""
    stack = [value]
    while stack:
        holder = stack.pop()
        keys = list(holder.keys()) if isinstance(holder, dict) else range(len(holder))
        for key in keys:
            item = holder[key]
            if isinstance(item, str):
                yield holder, key
            elif isinstance(item, dict | list):
                stack.append(item)


def _cut(text: str, kind: str, keep: int, tail: bool | None = None) -> str:
    """``text`` cut to about ``keep`` characters and a note of how many went (in all cuts
    so far). An old tool result keeps its first line, and its note counts the whole
    result (as a reminder of what it was); arguments, and recent pieces (``tail=True``),
    keep a head and a tail."""
    head_text, elided, tail_text, whole = _parts(text)
    if tail is None:
        tail = kind == "argument"
    if kind == "result" and not tail:
        first_line = head_text.splitlines()[0][:keep] if head_text else ""
        return f"{first_line}\n[... {whole:,} characters elided to save context{STUB_NOTE} ...]"
    if tail:
        first = keep * 2 // 3
        head = head_text[:first]
        end_keep = keep - first
        end = tail_text[-end_keep:] if elided else head_text[first:][-end_keep:]
    else:
        head, end = head_text[:keep], ""
    gone = whole - len(head) - len(end)
    return f"{head}\n[... {gone:,} characters elided to save context{NOTES[kind]} ...]\n{end}"


def _parts(text: str) -> tuple[str, int, str, int]:
    """(head, characters earlier cuts elided, tail, length before any cut) of a piece; a
    piece never cut is (the text, 0, "", its length)."""
    match = _MARK.search(text)
    if match is None:
        return text, 0, "", len(text)
    head, tail = text[: match.start()], text[match.end() :]
    elided = int(match.group(1).replace(",", ""))
    if match.group(2) == STUB_NOTE:  # a first-line stub: the count is the whole result's
        return head, elided, tail, elided
    return head, elided, tail, len(head) + elided + len(tail)
