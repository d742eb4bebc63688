"""The six build phases, in order, and the rounds each gets when history is silent.

A round is one model turn (one reply, with its tool calls). The defaults are
what a small Python project needs; :mod:`memory.budgets` raises a phase's
budget when past builds of similar tasks needed more. Each phase lives in its
own module (``phases/plan.py`` ...) with its prompt beside it
(``phases/plan.md``); :func:`load_phases` imports them only when a build
needs them, so the memory commands stay light.
"""

from __future__ import annotations

PHASES: tuple[str, ...] = ("plan", "deps", "scaffold", "build", "integrate", "validate")

DEFAULT_ROUNDS: dict[str, int] = {
    "plan": 4,
    "deps": 6,
    "scaffold": 16,
    "build": 30,
    "integrate": 16,
    "validate": 8,
}


def load_phases() -> dict:
    """name -> phase object (see phases.base.Phase), in build order."""
    from importlib import import_module

    return {name: import_module(f"phases.{name}").PHASE for name in PHASES}
