"""Hooks for a user's own code: pluggy hook specifications and the plugins that implement them.

A plugin is a module or class with functions named after hooks (:mod:`.specs`) marked
``@hookimpl``; it is found through the ``cadillac.plugins`` entry-point group or named with
``--plugin module[:object]``. :class:`Hooks` loads plugins and calls them so that none can
break a build (:mod:`.manager`). This layer imports only cadillac's core.
"""

from orchestrator.hooks.manager import (
    ENTRY_POINT_GROUP,
    HOOKS,
    NO_PLUGINS_ENV,
    HookError,
    Hooks,
)
from orchestrator.hooks.specs import hookimpl

__all__ = ["ENTRY_POINT_GROUP", "HOOKS", "NO_PLUGINS_ENV", "HookError", "Hooks", "hookimpl"]
