"""The pages' one Jinja environment and the filters they share.

Autoescape is on for every template: a task, a file name, a tool's output, a lesson or a
proposal was written by a model and reaches the page as text, never as markup. Templates
never mark a value ``|safe``; markup of ours that holds model text (a diff's lines, a
round) is made by a template too, so it is escaped on the way.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from functools import cache
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

SHOWN_CHARS = 20_000
"""Of a long text (a tool's output, a file the model wrote), what a page shows inline;
the rest is behind a link to the whole text, served as plain text."""


def when(stamp: float | None) -> str:
    if not stamp or not math.isfinite(stamp):
        return ""
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def count(n: int | float | None) -> str:
    return "" if n is None else f"{n:,}"


def cost(usd: float | None) -> str:
    if usd is None or not math.isfinite(usd):
        return "—"
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


def score(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def short(text: str | None, limit: int = 120) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def head(text: str | None, limit: int = SHOWN_CHARS) -> str:
    """The start of a long text, as much as a page shows inline."""
    text = str(text or "")
    return text if len(text) <= limit else text[:limit]


def diff_class(line: str) -> str:
    """The class of one line of a unified diff."""
    if line.startswith(("+++", "---", "diff ", "index ")):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "")


def ago(stamp: float | None) -> str:
    return duration(time.time() - stamp) + " ago" if stamp else ""


def run_url(run_id: str, **query) -> str:
    url = "/runs/" + quote(run_id, safe="")
    return url + ("?" + urlencode(query) if query else "")


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("orchestrator.serve", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when,
        duration=duration,
        count=count,
        cost=cost,
        score=score,
        short=short,
        head=head,
        diff_class=diff_class,
        ago=ago,
    )
    env.globals.update(run_url=run_url, SHOWN_CHARS=SHOWN_CHARS)
    return env


def render(name: str, **context) -> str:
    return environment().get_template(name).render(**context)


def page(request: Request, template: str, status_code: int = 200, **context) -> HTMLResponse:
    """A page of ours: the template with the home and the page's name."""
    home = request.app.state.home
    html = render(template, home=str(home.root), path=request.url.path, **context)
    return HTMLResponse(html, status_code=status_code)


def paged(request: Request, items: list) -> tuple[list, int, int, int]:
    """(the page's items, its number, the number of pages, where it starts)."""
    size = request.app.state.config.page_size
    try:
        number = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        number = 1
    pages = max(1, -(-len(items) // size))
    number = min(number, pages)
    start = (number - 1) * size
    return items[start : start + size], number, pages, start
