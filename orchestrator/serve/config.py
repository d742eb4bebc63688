"""The dashboard server's configuration: where it listens and what it reads."""

from __future__ import annotations

import secrets

from pydantic import BaseModel, Field

LOCAL = "127.0.0.1"


class ServeConfig(BaseModel):
    host: str = LOCAL
    """The address to listen on: 127.0.0.1 by default (reach a remote machine's dashboard
    through an SSH tunnel); another address serves the network, still behind the token."""
    port: int = Field(default=8765, ge=0, le=65535)
    """0 takes a free port."""
    token: str = Field(default_factory=lambda: secrets.token_urlsafe(24), min_length=16)
    """What every request must carry (in the URL once, then a cookie; or a bearer header)."""
    poll_s: float = Field(default=0.5, gt=0, le=10)
    """How often a live page's stream looks for what a running build wrote."""
    page_size: int = Field(default=200, ge=10, le=5000)
    """Rows of a long table per page (runs, lessons)."""
