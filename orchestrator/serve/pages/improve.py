"""The improve page (to be filled)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from orchestrator.serve.render import page


def show(request: Request, run_id: str) -> Response:
    return page(request, "error.html", message=f"{run_id}: this page is not made yet")


routes: list = []
