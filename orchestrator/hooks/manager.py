"""Loading plugins and calling their hooks, so that no plugin can break what cadillac does.

Plugins come from two places: the ``cadillac.plugins`` entry-point group of the installed
distributions (skipped when ``CADILLAC_NO_PLUGINS`` is set to anything but ``0``: an improve
trial sets it, since the candidate's code runs there) and ``--plugin module[:object]`` on
the command line. The object may be a module, a class (instantiated with no arguments), an
instance, or one ``@hookimpl`` function. The same object named twice (an entry point and
``--plugin``, or two copies of one distribution) is loaded once.

A plugin is the user's own code and runs in cadillac's process (never in the sandbox),
with cadillac's rights. What it may not do is break a build:

* each implementation is called on its own, so one that raises neither stops the others
  nor the caller; its error comes back as a :class:`HookError`, which :meth:`Hooks.report`
  records as a ``hook_error`` event and one warning line on stderr;
* every exception is caught, ``SystemExit`` too (a plugin's ``sys.exit()`` does not end the
  build), except ``KeyboardInterrupt``: that is Ctrl-C or SIGTERM, and it stops cadillac as
  anywhere else. ``os._exit`` or a crash of the interpreter cannot be caught;
* each implementation gets its own copy of the payload (a JSON round trip), so changing it
  changes nothing of cadillac's records, nor what the next plugin sees;
* calls are made one at a time (a lock), so a plugin needs no locking of its own when a
  matrix runs builds in threads. There is no timeout: a slow plugin makes the build (and,
  with ``--jobs``, the other builds' hooks) wait for it.

A broken entry point (it cannot be imported, has no hook, names an unknown hook) is
reported in :attr:`Hooks.load_errors` and skipped; a broken ``--plugin`` is a
:class:`~orchestrator.errors.CadillacError`, since the user asked for it just now.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pluggy

from orchestrator.errors import CadillacError
from orchestrator.hooks import specs

ENTRY_POINT_GROUP = "cadillac.plugins"
NO_PLUGINS_ENV = "CADILLAC_NO_PLUGINS"
HOOKS = (
    "build_start",
    "phase_end",
    "lesson_saved",
    "build_end",
    "matrix_end",
    "improve_decision",
)
_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_AFTER = {
    "build_end": "the build had ended; its result stands",
    "matrix_end": "the matrix run's results stand",
    "improve_decision": "the cycle goes on",
}


@dataclass
class HookError:
    """One plugin's failure in one hook (or ``load``), its error on one line."""

    plugin: str
    hook: str
    error: str
    """``"ValueError: what it said"``."""

    def line(self) -> str:
        if self.hook == "load":
            return f"warning: plugin {self.plugin} cannot be loaded: {self.error} (it is skipped)"
        after = _AFTER.get(self.hook, "the build goes on")
        return f"warning: plugin {self.plugin} failed in {self.hook}: {self.error} ({after})"


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _plain(value: object) -> object:
    """What ``json.dumps`` does with a value that is not JSON: a pydantic model's JSON
    dump, a set as a list, anything else as its text (a path, a time)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


class PluginRefused(Exception):
    """Why an object cannot be a plugin (a message for the user)."""


def disabled() -> bool:
    """``CADILLAC_NO_PLUGINS`` is set (and not ``0``): no entry point is loaded."""
    return os.environ.get(NO_PLUGINS_ENV, "").strip() not in ("", "0")


class Hooks:
    """The plugins of one command, and the calls of their hooks (see the module docstring)."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(specs.PROJECT)
        self._pm.add_hookspecs(specs)
        self._lock = threading.Lock()
        self._sources: list[object] = []
        """What was loaded (a module, a class, an instance): one object is loaded once."""
        self.names: list[str] = []
        """The plugins loaded, by name (an entry point's name, or the ``--plugin`` text)."""
        self.load_errors: list[HookError] = []
        """Entry points that could not be loaded, and were skipped."""
        self.loaded_from: tuple[tuple[str, ...], bool] | None = ((), False)
        """How to load the same plugins in another process: (the ``--plugin`` names,
        whether the installed ones too); None when one was added otherwise."""

    @classmethod
    def none(cls) -> Hooks:
        """No plugins at all (tests; a trial's builds)."""
        return cls()

    @classmethod
    def load(cls, plugins: Sequence[str] = (), entry_points: bool = True) -> Hooks:
        """The entry-point plugins (unless ``entry_points`` is False or ``CADILLAC_NO_PLUGINS``
        is set), then each ``module[:object]`` of ``plugins``; CadillacError for one of
        those that cannot be loaded."""
        hooks = cls()
        if entry_points and not disabled():
            hooks._load_entry_points()
        for text in plugins:
            hooks._load_option(text)
        hooks.loaded_from = (tuple(plugins), entry_points and not disabled())
        return hooks

    # ------------------------------------------------------------------ loading
    def _load_entry_points(self) -> None:
        try:
            found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
        except Exception as exc:  # a distribution's metadata that cannot be read
            self.load_errors.append(HookError("(entry points)", "load", _one_line(exc)))
            return
        for ep in found:
            try:
                self._add(ep.load(), ep.name)
            except KeyboardInterrupt:
                raise
            except PluginRefused as exc:
                self.load_errors.append(HookError(ep.name, "load", str(exc)))
            except BaseException as exc:  # its import raised (or exited): skip it, say why
                self.load_errors.append(HookError(ep.name, "load", _one_line(exc)))

    def _load_option(self, text: str) -> None:
        module, colon, attribute = text.strip().partition(":")
        if not _NAME.fullmatch(module) or (colon and not _NAME.fullmatch(attribute)):
            raise CadillacError(
                f"--plugin {text!r} is not module[:object] (e.g. --plugin my_plugin or "
                "--plugin my_plugin:Plugin)"
            )
        try:
            obj = importlib.import_module(module)
        except KeyboardInterrupt:
            raise
        except ModuleNotFoundError as exc:
            if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
                raise CadillacError(
                    f"--plugin {text}: no module named {exc.name!r} (install it, or put its "
                    "folder on PYTHONPATH: e.g. PYTHONPATH=. for a file in this folder)"
                ) from None
            raise CadillacError(
                f"--plugin {text}: importing {module} failed: {_one_line(exc)}"
            ) from None
        except BaseException as exc:
            raise CadillacError(
                f"--plugin {text}: importing {module} failed: {_one_line(exc)}"
            ) from None
        for part in attribute.split(".") if attribute else ():
            if not hasattr(obj, part):
                raise CadillacError(f"--plugin {text}: {module} has no {attribute!r}")
            obj = getattr(obj, part)
        try:
            self._add(obj, text.strip())
        except PluginRefused as exc:
            raise CadillacError(f"--plugin {text}: {exc}") from None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise CadillacError(f"--plugin {text}: {_one_line(exc)}") from None

    def _add(self, source: object, name: str) -> None:
        """Register ``source`` (module, class, instance or function) under ``name``, unless
        it is loaded already; PluginRefused when it is no plugin of cadillac's."""
        if any(source is seen for seen in self._sources):
            return
        plugin = self._instance(source)
        if self._pm.is_registered(plugin):  # one instance named through two sources
            return
        unique, n = name, 1
        while self._pm.has_plugin(unique):
            n += 1
            unique = f"{name}#{n}"
        try:
            self._pm.register(plugin, name=unique)
        except pluggy.PluginValidationError as exc:
            raise PluginRefused(" ".join(str(exc).split())) from None
        problem = self._problem(plugin)
        if problem:
            self._pm.unregister(plugin)
            raise PluginRefused(problem)
        self._sources.append(source)
        self.names.append(unique)

    @staticmethod
    def _instance(source: object) -> object:
        if inspect.isclass(source):
            try:
                return source()
            except Exception as exc:
                raise PluginRefused(f"{source.__name__}() failed: {_one_line(exc)}") from None
        if inspect.isfunction(source):  # one @hookimpl function: a plugin of its own
            return types.SimpleNamespace(**{source.__name__: source})
        return source

    def _problem(self, plugin: object) -> str:
        callers = self._pm.get_hookcallers(plugin) or []
        unknown = []
        for caller in callers:
            impls = [i for i in caller.get_hookimpls() if i.plugin is plugin]
            if any(i.hookwrapper or i.wrapper for i in impls):
                return f"its {caller.name} is a wrapper: cadillac calls plain hooks only"
            if caller.name not in HOOKS and not all(i.optionalhook for i in impls):
                unknown.append(caller.name)
        if unknown:
            return (
                f"cadillac has no hook {', '.join(sorted(unknown))} (its hooks: "
                f"{', '.join(HOOKS)}; mark a hook of a later version optionalhook=True)"
            )
        if not any(caller.name in HOOKS for caller in callers):
            return (
                "it has no cadillac hook: mark functions named after a hook ("
                f"{', '.join(HOOKS)}) with @hookimpl from orchestrator.hooks"
            )
        return ""

    # ------------------------------------------------------------------ calling
    def call(self, hook: str, **kwargs) -> list[HookError]:
        """Call every implementation of ``hook`` with a copy of the payload; the errors.

        ValueError for a hook that does not exist and TypeError for arguments that are not
        the hook's: those are mistakes of cadillac's code, not of a plugin's."""
        if hook not in HOOKS:
            raise ValueError(f"no hook {hook!r} (hooks: {', '.join(HOOKS)})")
        caller = getattr(self._pm.hook, hook)
        expected = set(caller.spec.argnames)
        if set(kwargs) != expected:
            raise TypeError(f"hook {hook} takes {sorted(expected)}, not {sorted(kwargs)}")
        payload = {name: json.dumps(value, default=_plain) for name, value in kwargs.items()}
        errors: list[HookError] = []
        with self._lock:
            for impl in reversed(caller.get_hookimpls()):  # pluggy's order (tryfirst first)
                args = [json.loads(payload[name]) for name in impl.argnames]
                try:
                    impl.function(*args)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # SystemExit too: a plugin does not end a build
                    errors.append(HookError(impl.plugin_name, hook, _one_line(exc)))
        return errors

    def report(self, errors: list[HookError], emit: Callable[..., None] | None) -> None:
        """Each error: a ``hook_error`` event through ``emit`` (when given) and one warning
        line on stderr."""
        for error in errors:
            if emit is not None:
                emit("hook_error", plugin=error.plugin, hook=error.hook, error=error.error)
            print(f"cadillac: {error.line()}", file=sys.stderr, flush=True)

    def __repr__(self) -> str:
        return f"Hooks({self.names!r})"
