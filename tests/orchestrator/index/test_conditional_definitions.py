"""Definitions under a module's (or a class body's) ``if``/``try``/``with`` are the module's
symbols, once per definition; a function's local helpers and a ``__main__`` block's are not.

The sources have the shapes of real libraries, written here: more_itertools' recipes
choose ``batched`` by ``hexversion``; django's ``core/files/locks.py`` defines ``lock`` and
``unlock`` under ``if os.name == "nt": ... else: try: ... except: ... else: ...``.
"""

from __future__ import annotations

from orchestrator.index.extract import extract

RECIPES = b'''"""Recipes for iterables, some taken from the itertools documentation."""

import warnings
from itertools import islice
from sys import hexversion

__all__ = ["batched", "take"]


def take(n, iterable):
    """The first *n* items of *iterable*, as a list."""
    return list(islice(iterable, n))


if hexversion >= 0x30C00A0:  # 3.12 has itertools.batched
    from itertools import batched as _itertools_batched

    def batched(iterable, n):
        """Tuples of *n* items from *iterable*; the last may be shorter."""
        return _itertools_batched(iterable, n)

elif hexversion >= 0x30800F0:

    def batched(iterable, n):
        """Tuples of *n* items, made with an assignment expression."""
        it = iter(iterable)
        while batch := tuple(islice(it, n)):
            yield batch

else:

    def batched(iterable, n):
        """Tuples of *n* items, the slow way."""
        it = iter(iterable)
        batch = tuple(islice(it, n))
        while batch:
            yield batch
            batch = tuple(islice(it, n))


with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)

    class SequenceView:
        """A read-only view of a sequence."""

        def __init__(self, target):
            self._target = target

        try:
            from types import GenericAlias
        except ImportError:
            pass
        else:

            def __class_getitem__(cls, item):
                return GenericAlias(cls, item)

        if hexversion >= 0x30A0000:

            @property
            def target(self):
                return self._target


def consume(iterator, n=None):
    """Advance *iterator* by *n* steps, or to its end."""
    if n is None:

        def _drain():
            for _ in iterator:
                pass

        _drain()


if __name__ == "__main__":

    def _demo():
        print(take(3, range(10)))

    _demo()
'''

LOCKS = b'''"""
Portable file locks, on Windows through LockFileEx and elsewhere through fcntl.

    with open("./file", "wb") as f:
        lock(f, LOCK_EX)
"""

import os

__all__ = ("LOCK_EX", "LOCK_SH", "LOCK_NB", "lock", "unlock")


def _fd(f):
    """A file descriptor from a file object or a descriptor."""
    return f.fileno() if hasattr(f, "fileno") else f


if os.name == "nt":
    import msvcrt
    from ctypes import POINTER, Structure, Union, WinDLL, byref, c_int64, c_ulong, c_void_p

    LOCK_SH = 0
    LOCK_NB = 0x1
    LOCK_EX = 0x2

    class _OFFSET(Structure):
        _fields_ = [("Offset", c_ulong), ("OffsetHigh", c_ulong)]

    class _OFFSET_UNION(Union):
        _anonymous_ = ["_offset"]
        _fields_ = [("_offset", _OFFSET), ("Pointer", c_int64)]

    def lock(f, flags):
        handle = msvcrt.get_osfhandle(_fd(f))
        return bool(WinDLL("kernel32").LockFileEx(handle, flags, 0, 0, 0xFFFF0000, None))

    def unlock(f):
        handle = msvcrt.get_osfhandle(_fd(f))
        return bool(WinDLL("kernel32").UnlockFileEx(handle, 0, 0, 0xFFFF0000, None))

else:
    try:
        import fcntl

        LOCK_SH = fcntl.LOCK_SH  # shared
        LOCK_NB = fcntl.LOCK_NB  # do not block
        LOCK_EX = fcntl.LOCK_EX
    except (ImportError, AttributeError):
        # No locking on this platform: nothing is ever locked.
        LOCK_EX = LOCK_SH = LOCK_NB = 0

        def lock(f, flags):
            return False

        def unlock(f):
            return True

    else:

        def lock(f, flags):
            try:
                fcntl.flock(_fd(f), flags)
                return True
            except BlockingIOError:
                return False

        def unlock(f):
            fcntl.flock(_fd(f), fcntl.LOCK_UN)
            return True
    finally:

        def _platform():
            return os.name
'''


def _found(path: str, data: bytes):
    _, symbols = extract(path, data)
    return [(s.kind, s.name, s.parent, s.start_line, s.end_line) for s in symbols]


def test_more_itertools_batched_under_if_hexversion_is_a_symbol_per_definition():
    found = _found("more_itertools/recipes.py", RECIPES)
    assert found == [
        ("module", "more_itertools.recipes", None, 1, 82),
        ("function", "take", None, 10, 12),
        ("function", "batched", None, 18, 20),  # if
        ("function", "batched", None, 24, 28),  # elif
        ("function", "batched", None, 32, 38),  # else
        ("class", "SequenceView", None, 44, 63),  # with
        ("method", "__init__", "SequenceView", 47, 48),
        ("method", "__class_getitem__", "SequenceView", 56, 57),  # a class body's try/else
        ("method", "target", "SequenceView", 61, 63),  # a class body's if, from @property
        ("function", "consume", None, 66, 74),
    ]
    # consume's _drain (a function's local helper) and the __main__ block's _demo are out
    _, symbols = extract("more_itertools/recipes.py", RECIPES)
    batched = [s for s in symbols if s.name == "batched"]
    assert [s.doc for s in batched] == [
        "Tuples of *n* items from *iterable*; the last may be shorter.",
        "Tuples of *n* items, made with an assignment expression.",
        "Tuples of *n* items, the slow way.",
    ]
    assert batched[0].signature == "def batched(iterable, n):"


def test_django_locks_lock_nested_in_if_else_try_except_else_finally():
    found = _found("django/core/files/locks.py", LOCKS)
    assert found == [
        ("module", "django.core.files.locks", None, 1, 73),
        ("function", "_fd", None, 13, 15),
        ("class", "_OFFSET", None, 26, 27),  # if os.name == "nt"
        ("class", "_OFFSET_UNION", None, 29, 31),
        ("function", "lock", None, 33, 35),
        ("function", "unlock", None, 37, 39),
        ("function", "lock", None, 52, 53),  # else: try: ... except
        ("function", "unlock", None, 55, 56),
        ("function", "lock", None, 60, 65),  # ... the try's else
        ("function", "unlock", None, 67, 69),
        ("function", "_platform", None, 72, 73),  # ... the try's finally
    ]
