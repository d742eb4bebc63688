"""The dashboard's Starlette application: its routes, its token and its headers.

**The token.** Every request needs the server's token, whatever address it came from
(another user of the machine can reach 127.0.0.1 too). The URL ``cadillac serve`` prints
carries it once (``?token=…``); a request with the right one gets a cookie holding it
(HttpOnly, SameSite=Strict, named after the port: cookies do not tell ports apart) and is
sent on to the same address without it, so the token does not stay in the address bar or
leak in a Referer. A script may send ``Authorization: Bearer <token>`` instead. Anything
else gets 403 and one line saying what is missing. Tokens are compared in constant time.

**The headers.** Every response says: no script but the server's own files, no inline
script or style, no frame, no plugin, nothing fetched from another origin
(``Content-Security-Policy``), no MIME sniffing, no Referer. A page that shows what a
model wrote can then at worst show it, never run it. ``Server-Timing`` says how long the
server took to start answering (``benchmarks/bench_serve.py`` reads it).

**Read only.** No route writes the home: the pages read records with the same readers the
command line uses, and a lock is probed without being taken
(:func:`orchestrator.loop.runs.lock_held`).
"""

from __future__ import annotations

import secrets
import time
from http.cookies import SimpleCookie
from importlib import resources
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.serve.config import ServeConfig
from orchestrator.serve.render import page

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def cookie_name(port: int) -> str:
    return f"cadillac_token_{port}"


class Guard:
    """ASGI middleware: the token on every request, the headers on every response."""

    def __init__(self, app: ASGIApp, token: str, port: int):
        self.app, self.token, self.cookie = app, token, cookie_name(port)

    def _valid(self, given: str | None) -> bool:
        return bool(given) and secrets.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()
                message["headers"] = [
                    *message.get("headers", []),
                    *HEADERS,
                    (b"server-timing", took),
                ]
            await send(message)

        request = Request(scope)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
        given = [value for name, value in query if name == "token"]
        if given and self._valid(given[-1]):
            rest = urlencode([(n, v) for n, v in query if n != "token"])
            target = request.url.path + (f"?{rest}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send_with_headers)
            return
        bearer = request.headers.get("authorization", "")
        cookies = SimpleCookie()
        try:
            cookies.load(request.headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is no token
            cookies = SimpleCookie()
        held = cookies.get(self.cookie)
        if (held is not None and self._valid(held.value)) or (
            bearer.startswith("Bearer ") and self._valid(bearer[7:].strip())
        ):
            await self.app(scope, receive, send_with_headers)
            return
        response = PlainTextResponse(
            "cadillac serve: this needs the access token: open the URL 'cadillac serve' "
            "printed (it ends in ?token=...)\n",
            status_code=403,
        )
        await response(scope, receive, send_with_headers)


async def not_found(request: Request, exc: Exception) -> Response:
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    return page(request, "error.html", status_code=status, message=detail)


async def refused(request: Request, exc: Exception) -> Response:
    """A record cadillac cannot read: its one line, as the command line says it."""
    return page(request, "error.html", status_code=404, message=str(exc))


def icon(request: Request) -> Response:
    data = (resources.files("orchestrator.serve") / "static" / "icon.svg").read_bytes()
    return Response(data, media_type="image/svg+xml")


def make_app(home: Home, config: ServeConfig | None = None, port: int | None = None) -> ASGIApp:
    """The application over ``home``, behind its token (``port`` names the cookie; the
    configured one when not given)."""
    from orchestrator.serve.pages import ROUTES

    config = config or ServeConfig()
    static = StaticFiles(packages=[("orchestrator.serve", "static")])
    app = Starlette(
        routes=[
            *ROUTES,
            Mount("/static", static, name="static"),
            Route("/favicon.ico", icon),  # what a page without an icon link (a report) asks
        ],
        exception_handlers={HTTPException: not_found, CadillacError: refused},
    )
    app.state.home = home
    app.state.config = config
    app.state.rows = {}  # the runs page's settled rows (orchestrator.serve.listing.all_runs)
    return Guard(app, config.token, config.port if port is None else port)
