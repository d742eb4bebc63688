"""The judge's wire to the project: the project runs in a child; the judge holds proxies.

The hidden checks run in the judge's process (:mod:`orchestrator.bench.acceptance_runner`),
which never imports the project's code. What a check imports that is not the standard
library is a :class:`ProxyModule`; every attribute, call and operator on it (``==``,
``len``, ``in``, ``[]``, ``iter``, ``next``, ``str``, ``hash``, ``with`` ...) is one request
over a pipe to a child process that imports the real code, and the answer comes back as
data. What this module decides, and why:

* **Data only, never pickle.** Messages are JSON lines; values are JSON scalars or tagged
  containers (list, tuple, dict, set, frozenset, bytes, complex, Decimal, Fraction, dates,
  times) rebuilt from their parts by the standard library; anything else stays where it
  lives and travels as a numbered reference. Decoding what a child sent runs no code of
  the child's: unpickling would.
* **Exceptions as data.** An exception raised in the child comes back as its class's
  module, name and bases, its args, ``str`` and public attributes; the judge raises an
  instance of a local class made once per remote class (so ``except CalcError`` and
  ``isinstance`` work), a subclass of the builtin exceptions its remote class derives from.
  A builtin or standard-library exception comes back as itself.
* **Callbacks both ways.** A function or object of the judge's passed as an argument (a
  fake clock, a function to memoize) travels as a reference the child can call while the
  judge waits; the child may call it, read its public attributes and a few plain dunders
  (``__name__``, ``__doc__``...), compare and hash it: nothing reaches the judge's modules,
  frames or globals.
* **The child cannot lie about being alive.** Whatever ends, garbles or times out the
  conversation (an ``os._exit``, a crash, a forged line, a check's time limit) raises
  :class:`ChildGone`, a ``BaseException`` a check cannot swallow, kills the child and fails
  what was pending. Proxies reached from an import by attribute names alone are found
  again in the next child; the rest fail.
* What the child prints while it answers is sent back and written to the judge's
  ``sys.stdout``/``sys.stderr`` of the moment (a check's ``redirect_stdout`` sees it); its
  file descriptors 0, 1 and 2 are ``/dev/null``.

Standard library only, Python 3.9 and later; the child runs this file as a script
(``python judge_rpc.py --serve RFD WFD``) with the project's interpreter.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime
import decimal
import fractions
import importlib
import io
import json
import math
import operator
import os
import sys
import threading
import types

MAX_MESSAGE = 64 * 1024 * 1024
MAX_DEPTH = 40
OUTPUT_CHARS = 200_000
PLAIN_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})
"""What the child may read of the judge's objects besides their public attributes."""
JUDGE_OPS = frozenset(
    {"str", "repr", "hash", "eq", "ne", "bool", "len", "iter", "next", "getitem", "contains"}
)
"""The operators the child may ask of the judge's objects (a check may hand the project an
iterator, a stream or a callback)."""
NEVER_EXPORTED = (types.ModuleType, types.FrameType, types.CodeType, types.CoroutineType)
"""What leads to the judge's globals or code: never handed to the child."""


CLASSES: dict[tuple, type] = {}
"""The local class made for each remote exception class, shared by every child a run starts,
so ``except CalcError`` still catches it from the next child."""


class ChildGone(BaseException):
    """The project's process ended, broke the protocol or was killed; what was pending fails."""


class JudgeRefused(TypeError):
    """The child asked the judge for something it does not give."""


def _binary(name: str):
    op = getattr(operator, name)
    return op, (lambda obj, other: op(other, obj))


OPS: dict = {
    "len": len,
    "iter": iter,
    "next": next,
    "reversed": reversed,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "contains": lambda obj, item: item in obj,
    "bool": bool,
    "str": str,
    "repr": repr,
    "hash": hash,
    "format": format,
    "dir": dir,
    "float": float,
    "int": int,
    "index": operator.index,
    "complex": complex,
    "round": round,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "enter": lambda obj: obj.__enter__(),
    "exit": lambda obj, *exc: obj.__exit__(*exc),
    "instancecheck": lambda cls, obj: isinstance(obj, cls),
    "subclasscheck": lambda cls, sub: issubclass(sub, cls),
}
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    OPS[_name] = getattr(operator, _name)
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
    OPS[_name], OPS["r" + _name] = _binary(_name)
for _name in ("lshift", "rshift", "and_", "or_", "xor"):
    _key = _name.rstrip("_")
    OPS[_key], OPS["r" + _key] = _binary(_name)


class Wire:
    """JSON lines over two file descriptors, each line at most :data:`MAX_MESSAGE` bytes."""

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.buffer = bytearray()

    def send(self, message: dict) -> None:
        data = memoryview((json.dumps(message, separators=(",", ":")) + "\n").encode())
        try:
            while data:
                data = data[os.write(self.wfd, data) :]
        except OSError as exc:
            raise ChildGone(f"the other end closed the pipe ({exc.strerror})") from None

    def receive(self) -> dict:
        start = 0
        while True:
            end = self.buffer.find(b"\n", start)
            if end >= 0:
                break
            start = len(self.buffer)
            if start > MAX_MESSAGE:
                raise ChildGone("a message past the size limit")
            try:
                chunk = os.read(self.rfd, 1 << 16)
            except OSError as exc:
                raise ChildGone(f"the pipe failed ({exc.strerror})") from None
            if not chunk:
                raise ChildGone("the other end ended")
            self.buffer += chunk
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise ChildGone("a garbled message") from None
        if not isinstance(message, dict):
            raise ChildGone("a garbled message")
        return message


def _remote_str(self) -> str:
    text = self.__dict__.get("_judge_str")
    return text if isinstance(text, str) else BaseException.__str__(self)


def _remote_repr(self) -> str:
    text = self.__dict__.get("_judge_repr")
    return text if isinstance(text, str) else BaseException.__repr__(self)


class Peer:
    """One end of the conversation: asks the other end, and serves its requests meanwhile.

    ``judge`` is True in the judge's process: it serves only calls and a few plain
    operators on what it exported, and turns anything malformed into :class:`ChildGone`."""

    def __init__(self, wire: Wire, judge: bool) -> None:
        self.wire, self.judge = wire, judge
        self.exports: dict[int, object] = {}
        self.export_ids: dict[int, int] = {}
        self.proxies: dict[int, Proxy] = {}
        self.seq = 0
        self.depth = 0
        self.dead = ""
        self.lock = threading.RLock()
        self.serving: threading.Thread | None = None
        self.on_death = None

    # ------------------------------------------------------------------ asking
    def request(self, op: str, **fields):
        with self.lock:
            if self.dead:
                raise ChildGone(self.dead)
            if not self.judge and threading.current_thread() is not self.serving:
                raise RuntimeError("the judge's objects can be used only while it asks")
            self.seq += 1
            seq = self.seq
            if self.judge:
                fields["cwd"] = os.getcwd()
            try:
                self.wire.send({"q": seq, "op": op, **fields})
                while True:
                    message = self.wire.receive()
                    if "q" in message:
                        self.serve(message)
                    elif message.get("r") == seq:
                        break
                    else:
                        raise ChildGone("a reply out of order")
                value = self.decode(message.get("v"))
                error = self.decode_exception(message["x"]) if "x" in message else None
            except BaseException as exc:  # a time limit mid-answer leaves the pipe out of step
                self.die(str(exc) if isinstance(exc, ChildGone) else "the judge stopped waiting")
                raise
            self._echo(message)
            if error is not None:
                raise error
            return value

    def _echo(self, message: dict) -> None:
        for key, stream in (("out", sys.stdout), ("err", sys.stderr)):
            text = message.get(key)
            if isinstance(text, str) and text and stream is not None:
                with contextlib.suppress(Exception):  # a check's closed stream: no echo
                    stream.write(text)

    def die(self, why: str) -> None:
        if not self.dead:
            self.dead = why or "the project's process ended"
            if self.on_death is not None:
                self.on_death()

    # ----------------------------------------------------------------- serving
    def serve(self, message: dict) -> None:
        seq = message.get("q")
        self.depth += 1
        outer = self.depth == 1 and not self.judge
        if outer:
            saved, captured = (sys.stdout, sys.stderr), (io.StringIO(), io.StringIO())
            sys.stdout, sys.stderr = captured
            self.serving = threading.current_thread()
            cwd = message.get("cwd")
            if isinstance(cwd, str) and cwd != os.getcwd():
                with contextlib.suppress(OSError):
                    os.chdir(cwd)
        try:
            reply = {"r": seq, "v": self.encode(self.handle(message))}
        except ChildGone:
            raise
        except BaseException as exc:  # noqa: B036 - a SystemExit of the project is its answer
            try:
                reply = {"r": seq, "x": self.encode_exception(exc)}
            except Exception:
                reply = {"r": seq, "x": self.encode_exception(RuntimeError(type(exc).__name__))}
        finally:
            self.depth -= 1
            if outer:
                sys.stdout, sys.stderr = saved
        if outer:
            reply["out"] = captured[0].getvalue()[-OUTPUT_CHARS:]
            reply["err"] = captured[1].getvalue()[-OUTPUT_CHARS:]
        self.wire.send(reply)

    def handle(self, message: dict):
        op = message.get("op")
        args = self.decode(message.get("a", {"T": []}))
        kwargs = dict(self.decode(message.get("k", {"D": []})))
        if op == "import" and not self.judge:
            return importlib.import_module(str(message.get("n")))
        if op == "helper" and not self.judge:
            return HELPERS[str(message.get("n"))](*args, **kwargs)
        target = self.local(message.get("o"))
        name = message.get("n")
        if self.judge:
            return self._judge_handle(op, target, name, args, kwargs)
        if op == "getattr":
            return getattr(target, str(name))
        if op == "setattr":
            return setattr(target, str(name), args[0])
        if op == "delattr":
            return delattr(target, str(name))
        if op == "call":
            return target(*args, **kwargs)
        if op == "op" and name in OPS:
            return OPS[name](target, *args)
        raise JudgeRefused(f"no such request: {op!r}")

    def _judge_handle(self, op, target, name, args, kwargs):
        if op == "call" and callable(target):
            return target(*args, **kwargs)
        if op == "getattr" and isinstance(name, str):
            if name.startswith("_") and name not in PLAIN_DUNDERS:
                raise AttributeError(name)
            return getattr(target, name)
        if op == "op" and name in JUDGE_OPS:
            return OPS[name](target, *args)
        raise JudgeRefused(f"the judge does not do {op} {name!r} for the project")

    def local(self, ref):
        if not (isinstance(ref, dict) and isinstance(ref.get("M"), int)):
            raise JudgeRefused("no object named")
        try:
            return self.exports[ref["M"]]
        except KeyError:
            raise JudgeRefused("an object the judge never gave") from None

    # ---------------------------------------------------------------- encoding
    def export(self, value) -> dict:
        if self.judge and isinstance(value, NEVER_EXPORTED):
            raise JudgeRefused(f"the judge does not hand out a {type(value).__name__}")
        key = id(value)
        number = self.export_ids.get(key)
        if number is None:
            number = len(self.exports) + 1
            self.exports[number] = value
            self.export_ids[key] = number
        return {"R": number}

    def encode(self, value, depth: int = 0):
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {"f": repr(value)}
        if kind is ProxyModule and "_j_root" in value.__dict__:
            value, kind = value.__dict__["_j_root"], Proxy  # the project's module itself
        if kind is Proxy:
            if _live(value) is not self:
                raise ChildGone("an object of the project's process that ended")
            return {"M": object.__getattribute__(value, "_j_id")}
        if depth > MAX_DEPTH:
            return self.export(value)
        down = depth + 1
        if kind in (list, tuple, set, frozenset):
            tag = {list: "L", tuple: "T", set: "S", frozenset: "F"}[kind]
            return {tag: [self.encode(item, down) for item in value]}
        if kind is dict:
            return {"D": [[self.encode(k, down), self.encode(v, down)] for k, v in value.items()]}
        if kind in (bytes, bytearray):
            return {"B" if kind is bytes else "BA": value.hex()}
        if kind is complex:
            return {"C": [repr(value.real), repr(value.imag)]}
        if kind is decimal.Decimal:
            return {"Dec": str(value)}
        if kind is fractions.Fraction:
            return {"Fr": [value.numerator, value.denominator]}
        if kind is datetime.timedelta:
            return {"td": [value.days, value.seconds, value.microseconds]}
        if kind in (datetime.datetime, datetime.time) and (
            value.tzinfo is None or type(value.tzinfo) is datetime.timezone
        ):
            return {"dt" if kind is datetime.datetime else "tm": value.isoformat()}
        if kind is datetime.date:
            return {"da": value.isoformat()}
        if kind is types.TracebackType:
            return None
        if isinstance(value, BaseException):
            return {"E": self.encode_exception(value)}
        if isinstance(value, type) and issubclass(value, BaseException):
            return {"XC": self.describe(value)}
        if isinstance(value, type) and getattr(builtins, value.__name__, None) is value:
            return {"Bt": value.__name__}
        return self.export(value)

    def describe(self, cls: type) -> dict:
        path = cls.__dict__.get("_judge_path")
        module, qualname = path if path else (cls.__module__, cls.__qualname__)
        bases = [self.describe(b) for b in cls.__bases__ if issubclass(b, BaseException)]
        return {"m": str(module), "q": str(qualname), "b": bases}

    def encode_exception(self, exc: BaseException) -> dict:
        attrs = [
            [name, self.encode(value, 1)]
            for name, value in list(getattr(exc, "__dict__", {}).items())
            if isinstance(name, str) and not name.startswith("_")
        ]
        try:
            text, shown = str(exc), repr(exc)
        except Exception:
            text = shown = type(exc).__name__
        return {
            "c": self.describe(type(exc)),
            "a": self.encode(tuple(exc.args), 1),
            "s": text,
            "r": shown,
            "d": attrs,
        }

    # ---------------------------------------------------------------- decoding
    def decode(self, data, depth: int = 0):
        if depth > 2 * MAX_DEPTH + 10:
            raise ChildGone("a message nested too deep")
        if data is None or isinstance(data, (bool, int, str, float)):
            return data
        if isinstance(data, list) or not isinstance(data, dict) or len(data) != 1:
            raise ChildGone("a garbled value")
        ((tag, body),) = data.items()
        down = depth + 1
        try:
            return self._decode(tag, body, down)
        except (ChildGone, JudgeRefused):
            raise
        except Exception as exc:
            raise ChildGone(f"a garbled value ({type(exc).__name__})") from None

    def _decode(self, tag: str, body, down: int):
        if tag in ("L", "T", "S", "F"):
            items = [self.decode(item, down) for item in body]
            return {"L": list, "T": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "D":
            return {self.decode(k, down): self.decode(v, down) for k, v in body}
        if tag == "f":
            return float(str(body))
        if tag in ("B", "BA"):
            return (bytes if tag == "B" else bytearray).fromhex(body)
        if tag == "C":
            return complex(float(body[0]), float(body[1]))
        if tag == "Dec":
            return decimal.Decimal(str(body))
        if tag == "Fr":
            return fractions.Fraction(int(body[0]), int(body[1]))
        if tag == "td":
            return datetime.timedelta(int(body[0]), int(body[1]), int(body[2]))
        if tag == "dt":
            return datetime.datetime.fromisoformat(str(body))
        if tag == "tm":
            return datetime.time.fromisoformat(str(body))
        if tag == "da":
            return datetime.date.fromisoformat(str(body))
        if tag == "Bt":
            found = getattr(builtins, str(body), None)
            if not isinstance(found, type):
                raise ChildGone("a garbled builtin")
            return found
        if tag == "XC":
            return self.exception_class(body)
        if tag == "E":
            return self.decode_exception(body)
        if tag == "M":
            return self.local({"M": body})
        if tag == "R" and isinstance(body, int) and not isinstance(body, bool):
            proxy = self.proxies.get(body)
            if proxy is None:
                proxy = self.proxies[body] = Proxy(self, body)
            return proxy
        raise ChildGone(f"a garbled value tag {tag!r}")

    def exception_class(self, desc) -> type:
        if not isinstance(desc, dict):
            raise ChildGone("a garbled exception class")
        module, qualname, bases = desc.get("m"), desc.get("q"), desc.get("b", [])
        if not (isinstance(module, str) and isinstance(qualname, str) and isinstance(bases, list)):
            raise ChildGone("a garbled exception class")
        found = self._real_class(module, qualname)
        if found is not None:
            return found
        key = (module, qualname)
        made = CLASSES.get(key)
        if made is None:
            parents = tuple(self.exception_class(b) for b in bases[:8]) or (Exception,)
            namespace = {
                "__module__": module,
                "__qualname__": qualname,
                "__str__": _remote_str,
                "__repr__": _remote_repr,
                "_judge_path": (module, qualname),
            }
            name = qualname.rsplit(".", 1)[-1] or "RemoteError"
            for attempt in (parents, parents[:1], (Exception,)):
                try:
                    made = type(name, attempt, namespace)
                    break
                except TypeError:
                    continue
            CLASSES[key] = made
        return made

    def _real_class(self, module: str, qualname: str) -> type | None:
        """The class itself when this process has it: a builtin, or (in the judge) a class
        of a standard-library module it imported; in the child, any imported module's."""
        if module == "builtins":
            found = getattr(builtins, qualname, None)
            return found if isinstance(found, type) and issubclass(found, BaseException) else None
        holder = sys.modules.get(module)
        if holder is None or isinstance(holder, ProxyModule):
            return None
        found = holder
        for part in qualname.split("."):
            found = getattr(found, part, None) if not part.startswith("<") else None
            if found is None:
                return None
        if isinstance(found, type) and issubclass(found, BaseException):
            return None if "_judge_path" in found.__dict__ else found
        return None

    def decode_exception(self, body) -> BaseException:
        if not isinstance(body, dict):
            raise ChildGone("a garbled exception")
        cls = self.exception_class(body.get("c"))
        args = self.decode(body.get("a", {"T": []}))
        args = args if isinstance(args, tuple) else (args,)
        exc = None
        if "_judge_path" not in cls.__dict__:
            try:
                exc = cls(*args)
            except Exception:
                exc = None
        if exc is None:
            exc = cls.__new__(cls)
            exc.args = args
        for pair in body.get("d", [])[:64]:
            try:
                name, value = pair
                if isinstance(name, str) and not name.startswith("_"):
                    setattr(exc, name, self.decode(value))
            except (ChildGone, JudgeRefused):
                raise
            except Exception:  # noqa: S112 - an attribute a builtin class will not take
                continue
        if "_judge_path" in cls.__dict__:
            exc.__dict__["_judge_str"] = str(body.get("s", ""))
            exc.__dict__["_judge_repr"] = str(body.get("r", ""))
        return exc


def _proxy_op(name: str):
    def method(self, *args):
        return self._j_ask("op", n=name, a=args)

    method.__name__ = f"__{name}__"
    return method


class Proxy:
    """An object that lives in the other process; every use of it is a request there."""

    __slots__ = ("_j_peer", "_j_id", "_j_path", "_j_judge", "__weakref__")

    def __init__(self, peer: Peer, number: int, path: tuple = (), judge=None) -> None:
        object.__setattr__(self, "_j_peer", peer)
        object.__setattr__(self, "_j_id", number)
        object.__setattr__(self, "_j_path", path)
        object.__setattr__(self, "_j_judge", judge)

    def _j_ask(self, op: str, n=None, a=(), k=None):
        peer = _live(self)
        fields = {"o": {"M": object.__getattribute__(self, "_j_id")}}
        if n is not None:
            fields["n"] = n
        if a:
            fields["a"] = peer.encode(tuple(a))
        if k:
            fields["k"] = peer.encode(dict(k))
        return peer.request(op, **fields)

    def __getattr__(self, name: str):
        if name.startswith("_j_"):
            raise AttributeError(name)
        value = self._j_ask("getattr", n=name)
        return _with_path(value, self, name)

    def __setattr__(self, name: str, value) -> None:
        self._j_ask("setattr", n=name, a=(value,))

    def __delattr__(self, name: str) -> None:
        self._j_ask("delattr", n=name)

    def __call__(self, *args, **kwargs):
        return self._j_ask("call", a=args, k=kwargs)

    @property
    def __doc__(self):  # noqa: D105 - the remote object's docstring
        return self._j_ask("getattr", n="__doc__")

    @property
    def __module__(self):
        return self._j_ask("getattr", n="__module__")

    def __exit__(self, *exc):
        return self._j_ask("op", n="exit", a=tuple(_exc_for_exit(e) for e in exc))

    def __next__(self):
        return self._j_ask("op", n="next")

    def __iter__(self):
        return self._j_ask("op", n="iter")

    def __round__(self, *ndigits):
        return self._j_ask("op", n="round", a=ndigits)


_OP_NAMES = [
    "len", "reversed", "getitem", "setitem", "delitem", "contains", "bool", "str", "repr",
    "hash", "format", "dir", "float", "int", "index", "complex", "neg", "pos", "abs",
    "invert", "enter", "instancecheck", "subclasscheck", "eq", "ne", "lt", "le", "gt", "ge",
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
    "and", "or", "xor", "radd", "rsub", "rmul", "rtruediv", "rfloordiv", "rmod", "rpow",
    "rmatmul", "rlshift", "rrshift", "rand", "ror", "rxor",
]  # fmt: skip
for _name in _OP_NAMES:
    setattr(Proxy, f"__{_name}__", _proxy_op(_name))


def _exc_for_exit(value):
    """What ``__exit__`` hands the child: the exception and its class, never a traceback."""
    return None if isinstance(value, types.TracebackType) else value


def _with_path(value, holder, name: str):
    """A proxy got from an importable path by names alone can be found again later."""
    path = object.__getattribute__(holder, "_j_path")
    if path and type(value) is Proxy and not object.__getattribute__(value, "_j_path"):
        object.__setattr__(value, "_j_path", (*path, name))
        object.__setattr__(value, "_j_judge", object.__getattribute__(holder, "_j_judge"))
    return value


def _live(proxy) -> Peer:
    """The proxy's peer, or the next child's when the first one ended and the proxy has a
    path to be found there again."""
    peer = object.__getattribute__(proxy, "_j_peer")
    if not peer.dead:
        return peer
    judge, path = (
        object.__getattribute__(proxy, "_j_judge"),
        object.__getattribute__(proxy, "_j_path"),
    )
    if judge is None or not path:
        raise ChildGone(peer.dead)
    fresh = judge.live()
    value = fresh.request("import", n=path[0])
    for name in path[1:]:
        value = fresh.request("getattr", o={"M": object.__getattribute__(value, "_j_id")}, n=name)
    if type(value) is not Proxy:
        raise ChildGone("the project's object is not there any more")
    object.__setattr__(proxy, "_j_peer", fresh)
    object.__setattr__(proxy, "_j_id", object.__getattribute__(value, "_j_id"))
    fresh.proxies[object.__getattribute__(proxy, "_j_id")] = proxy
    return fresh


class ProxyModule(types.ModuleType):
    """A module of the project (or a package it installed) as the judge sees it."""

    def __getattr__(self, name: str):
        if name == "_j_root" or "_j_root" not in self.__dict__:  # still being imported
            raise AttributeError(name)
        return self.__dict__["_j_root"].__getattr__(name)


# ---------------------------------------------------------------------- the child's side
def _asyncio_server(start, *args):
    """Run ``await start(*args)`` (an asyncio server) on a loop in a thread of the child;
    a handle with its ``port`` and ``close()``, so the checks connect from outside."""
    import asyncio

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    server = asyncio.run_coroutine_threadsafe(start(*args), loop).result(10)
    return _ServerHandle(loop, server)


class _ServerHandle:
    def __init__(self, loop, server) -> None:
        self.loop, self.server = loop, server
        self.port = server.sockets[0].getsockname()[1]

    def close(self) -> None:
        import asyncio

        async def stop():
            self.server.close()
            await asyncio.wait_for(self.server.wait_closed(), 3)

        try:
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)


def _doctest(obj):
    """Run the docstring examples of ``obj``: (examples, failures)."""
    import doctest

    tests = doctest.DocTestFinder().find(obj)
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test, out=lambda text: None)
    return sum(len(t.examples) for t in tests), runner.failures


def _differing(first, second, names):
    """The names whose attributes are not the same object in ``first`` and ``second``."""
    return [name for name in names if getattr(first, name) is not getattr(second, name)]


HELPERS = {"asyncio_server": _asyncio_server, "doctest": _doctest, "differing": _differing}
"""Work a check cannot do through proxies, done in the child on its behalf."""


def serve(rfd: int, wfd: int) -> None:
    """The child: import what the judge asks for, answer until the judge hangs up."""
    root = os.getcwd()
    sys.path[0] = root
    sys.argv = [sys.argv[0]]
    peer = Peer(Wire(rfd, wfd), judge=False)
    while True:
        try:
            message = peer.wire.receive()
            if "q" not in message:
                break
            peer.serve(message)
        except ChildGone:
            break
    os._exit(0)


if __name__ == "__main__" and sys.argv[1:2] == ["--serve"]:
    serve(int(sys.argv[2]), int(sys.argv[3]))
