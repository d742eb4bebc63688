"""How text a model made is shown back to a model: never a control character raw.

A file name, a command's output, a past run's task or a saved note can hold what a
terminal or a reader's parser would act on: a newline that starts a forged line of the
listing, a carriage return that overwrites it, an ANSI escape (``\\x1b[``). Every tool
result is shown through one of two functions:

* :func:`name` for one name (a path, a run's task, a symbol): everything that is not
  printable (newlines and tabs too, format characters, C0 and C1 controls) is escaped as
  Python escapes it (``\\n``, ``\\x1b``, ``\\u202e``), so one name is one line and looks
  like itself.
* :func:`output` for multi-line text (a command's output, a note's body, a whole
  answer): newlines and tabs stay, every other C0 and C1 control (ESC and so every
  terminal sequence, CR, NUL, DEL) is escaped the same way.

The tool box applies :func:`output` to every result (:mod:`orchestrator.tools.box`);
what joins names into lines (``list_files``, the knowledge tool's answers) applies
:func:`name` to each first. It lives in the sandbox layer so that every layer above can
use it.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(char: str) -> str:
    return repr(char)[1:-1] if char != "'" else char


def name(text: str) -> str:
    """``text`` on one line, every non-printable character escaped (see the docstring)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def output(text: str) -> str:
    """``text`` with every control character but newline and tab escaped."""
    return _CONTROL.sub(lambda m: _escaped(m.group()), text)
