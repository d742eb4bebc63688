"""The memory page (to be filled)."""

from __future__ import annotations

routes: list = []
