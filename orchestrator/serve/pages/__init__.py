"""The dashboard's pages, one module each; :data:`ROUTES` is every route of theirs."""

from __future__ import annotations

from orchestrator.serve import live
from orchestrator.serve.pages import build, improve, matrix, memory, nights, runs

ROUTES = [
    *build.routes,
    *live.routes,
    *runs.routes,
    *matrix.routes,
    *improve.routes,
    *nights.routes,
    *memory.routes,
]
