"""Browser stories: a real Chromium opens the served app, does what the story says, and
reports what the page did.

What this module decides, and why:

* **The system's Chromium, driven by Playwright for Python.** :func:`drive` runs inside
  the sandbox, in the story driver's process (cadillac's own interpreter; the modules it
  must see, and only those, are :func:`driver_paths`). It launches the Chromium the
  machine has (:func:`find_chromium`), never a browser Playwright downloads:
  ``PLAYWRIGHT_BROWSERS_PATH`` points at nothing. With no system Chromium, or no
  Playwright, the story fails with one line that says what to install. Chromium runs
  with ``--no-sandbox``: bubblewrap is the sandbox. Chromium's own would need user
  namespaces inside it, which not every host gives, and would keep the page's scripts
  from nothing the project's own code in the sandbox (its server) cannot reach already.
  The sandbox's ``/dev/shm`` and ``/tmp`` (its ``HOME``) are all Chromium needs besides.
* **Only the served app.** Every request the page makes is routed: one that is not to the
  base URL's own host and port (an outside host, a ``file://`` URL, another port, a
  WebSocket elsewhere) is aborted and listed in ``refused``. A request the route never
  sees is still listed: a ``file://`` URL, which Chromium itself refuses to a page
  served over HTTP, and a redirect's next hop, which Chromium sends to a proxy that is
  not there (:func:`only_to`), so it reaches no other port of the sandbox's loopback
  either; the sandbox has no network beyond that loopback. Service workers are blocked,
  so none can answer past the route.
* **The story passes only on a clean page.** It opens ``base_url + path``, runs the steps
  (click, type, press, wait for; by selector) within the story's time limit, waits until
  no request is in flight (one a step started too), then every ``expect_text`` must be
  in the page's text, read in Playwright's own isolated world, which the page's scripts
  cannot patch. A console error, an uncaught exception, a request that failed or
  answered 400 or more, or a refused request fails the story, and each is in ``got``.
* **The browser a person has, as far as the page can tell**: ``navigator.webdriver`` is
  false and the user agent is Chromium's own, without ``HeadlessChrome``, so a page that
  answers a probe differently from a person is still seen as a person sees it.
* **A screenshot of every story**, passed or failed: ``<shots_dir>/<name>.png``, the full
  page, so a person (and the model) can see what the check saw.
* **Serving a built front end** (:func:`serve_static`): a story with no ``start`` is served
  from its built folder by a standard-library server on 127.0.0.1. A path that is no file
  answers ``index.html`` when the browser asks for a page (a route of a single-page app)
  and 404 otherwise (a ``fetch`` of an API the build lacks fails as it would in use).
  Links in the folder are never followed, so a link to a file outside is not served.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import mimetypes
import os
import shutil
import stat
import threading
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from pydantic import ValidationError

from orchestrator.sandbox import files
from phases.stories.schema import BrowserStep, BrowserStory

CHROMIUM = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")
"""Where the system's Chromium is looked for, in order: Debian's binary itself (its
``/usr/bin/chromium`` is a shell wrapper reading ``/etc/chromium.d``), then on PATH."""
NO_CHROMIUM = (
    "no system Chromium found (looked for {names}): install it (apt-get install chromium); "
    "cadillac never downloads a browser"
)
NO_PLAYWRIGHT = (
    "Playwright for Python is not installed for cadillac's interpreter ({error}): "
    "pip install playwright (a dependency of cadillac)"
)
ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-blink-features=AutomationControlled",  # navigator.webdriver is false
)
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/{major}.0.0.0 Safari/537.36"
)
"""What a person's Chromium of the same version says (the headless one says
``HeadlessChrome``)."""
DEAD_PROXY = "http://127.0.0.1:1"
"""Where Chromium sends every request but the served app's: a port no unprivileged
process can listen on, so nothing answers there."""
PROXY_FAILED = "ERR_PROXY_CONNECTION_FAILED"
"""How a request sent to :data:`DEAD_PROXY` fails. Playwright may report a redirect's next
hop as a failure of the first request, whose URL is the app's own."""
VIEWPORT = {"width": 1280, "height": 800}
SETTLE_S = 5.0
"""After the steps, how long to wait at most for the page's requests to end."""
QUIET_S = 0.5
"""How long no request may be in flight for the page to count as settled."""
KEPT = 20
"""Console errors, failed and refused requests kept of each kind; the rest are counted."""
PAGE_TEXT_CHARS = 1500
READ_MS = 5000
"""How long reading the page's text may take (past the story's own time, to say why)."""
LOCAL_SCHEMES = ("data", "blob", "about")
"""URLs that load nothing from anywhere (an inline image, a blob the page made)."""
DRIVER_MODULES = (
    "phases",
    "orchestrator",
    "playwright",
    "greenlet",
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
)
"""What :func:`drive` imports beyond the standard library."""


def find_chromium() -> str | None:
    """The system Chromium's executable, or None."""
    for name in CHROMIUM:
        found = shutil.which(name)
        if found:
            return found
    return None


class DriverPaths(NamedTuple):
    """What the story driver's interpreter needs to import this module and run
    :func:`drive`: each module's own folder (or file) to make visible in the sandbox, and
    the folders holding them to put on ``sys.path``. Only these are shown, never the whole
    ``site-packages`` or a checkout of cadillac (which may hold a ``.env`` with keys)."""

    visible: list[Path]
    sys_path: list[Path]


def driver_paths() -> DriverPaths:
    """:class:`DriverPaths` for :data:`DRIVER_MODULES`, as cadillac's interpreter finds them."""
    visible: list[Path] = []
    holders: list[Path] = []
    for name in DRIVER_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        own = Path(spec.origin).resolve()
        if spec.submodule_search_locations:
            own = own.parent
        if own not in visible:
            visible.append(own)
        if own.parent not in holders:
            holders.append(own.parent)
    return DriverPaths(visible, holders)


# ------------------------------------------------------------------------------ driving
class Watch:
    """What the page did that fails a story: console errors, uncaught exceptions, failed
    requests and refused ones; it also routes every request (refusing what is not ours)."""

    def __init__(self, base_url: str):
        self.origin = _host_port(base_url)
        self.console_errors: list[str] = []
        self.failed_requests: list[str] = []
        self.refused: list[str] = []
        self.counts = {"console": 0, "failed": 0, "refused": 0}
        self.seen: set[tuple[str, str]] = set()
        self.in_flight: set = set()

    def ours(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in LOCAL_SCHEMES:
            return True
        return parts.scheme in ("http", "https", "ws", "wss") and _host_port(url) == self.origin

    def _add(self, kind: str, into: list[str], line: str) -> None:
        if (kind, line) in self.seen:
            return
        self.seen.add((kind, line))
        self.counts[kind] += 1
        if len(into) < KEPT:
            into.append(line)

    def attach(self, context) -> None:
        context.route("**/*", self._route)
        context.route_web_socket("**/*", self._socket)
        context.on("request", self._request)
        context.on("requestfinished", self._request_finished)
        context.on("requestfailed", self._request_failed)
        context.on("response", self._response)
        context.on("console", self._console)
        context.on("weberror", self._uncaught)

    def _route(self, route) -> None:
        if self.ours(route.request.url):
            route.continue_()
        else:
            route.abort("blockedbyclient")

    def _socket(self, socket) -> None:
        if self.ours(socket.url):
            socket.connect_to_server()
        else:
            self._add("refused", self.refused, f"WebSocket {socket.url}")
            socket.close()

    def _request(self, request) -> None:
        self.in_flight.add(request)
        if not self.ours(request.url):
            self._add("refused", self.refused, f"{request.method} {request.url}")

    def _request_finished(self, request) -> None:
        self.in_flight.discard(request)

    def _request_failed(self, request) -> None:
        self.in_flight.discard(request)
        if not self.ours(request.url):
            return  # refused already
        why = request.failure or "failed"
        line = f"{request.method} {request.url}"
        if PROXY_FAILED in why:  # only what goes elsewhere is sent to the proxy
            self._add("refused", self.refused, f"{line}: redirected beyond the served app")
        else:
            self._add("failed", self.failed_requests, f"{line}: {why}")

    def _response(self, response) -> None:
        if response.status >= 400 and self.ours(response.url):
            line = f"{response.request.method} {response.url} -> {response.status}"
            self._add("failed", self.failed_requests, line)

    def _uncaught(self, web_error) -> None:
        error = web_error.error
        name = getattr(error, "name", "") or "Error"
        self._add("console", self.console_errors, f"uncaught {name}: {error.message}")

    def _console(self, message) -> None:
        if message.type == "error":
            self._add("console", self.console_errors, message.text)


def only_to(url: str) -> list[str]:
    """Chromium's arguments that send every request, but those to ``url``'s own host and
    port, to a proxy that is not there (:data:`DEAD_PROXY`); ``<-loopback>`` takes away the
    direct way Chromium gives every loopback address. This stops what the route never
    sees, such as a redirect's next hop."""
    host, port = _host_port(url).rsplit(":", 1)
    host = f"[{host}]" if ":" in host else host
    return [f"--proxy-server={DEAD_PROXY}", f"--proxy-bypass-list=<-loopback>;{host}:{port}"]


def _host_port(url: str) -> str:
    parts = urlsplit(url)
    default = 443 if parts.scheme in ("https", "wss") else 80
    try:
        port = parts.port or default
    except ValueError:
        return ""
    return f"{(parts.hostname or '').lower()}:{port}"


def _said(step: BrowserStep) -> str:
    if step.action == "type":
        return f"type {step.text!r} into {step.selector!r}"
    if step.action == "press":
        return f"press {step.text or 'Enter'} in {step.selector!r}"
    if step.action == "wait_for" and step.text:
        return f"wait for {step.selector!r} holding {step.text!r}"
    return f"{step.action.replace('_', ' ')} {step.selector!r}"


def _sent(story: BrowserStory, url: str) -> str:
    lines = [f"open {url}", *(_said(step) for step in story.steps)]
    lines.append("expect text: " + ", ".join(repr(t) for t in story.expect_text))
    return "\n".join(lines)


def _step(page, step: BrowserStep, timeout_ms: float) -> None:
    target = page.locator(step.selector).first
    if step.action == "click":
        target.click(timeout=timeout_ms)
    elif step.action == "type":
        target.fill(step.text, timeout=timeout_ms)
    elif step.action == "press":
        target.press(step.text or "Enter", timeout=timeout_ms)
    elif step.text:
        page.locator(step.selector, has_text=step.text).first.wait_for(timeout=timeout_ms)
    else:
        target.wait_for(timeout=timeout_ms)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _page_text(page) -> str:
    return page.locator("body").inner_text(timeout=READ_MS)


def _settle(page, watch: Watch, until: float) -> None:
    """Wait until no request of the page has been in flight for :data:`QUIET_S` (one a
    step started too, which the page's ``networkidle``, reached once, would not wait
    for), or until ``until``."""
    quiet_since = None
    while time.monotonic() < until:
        now = time.monotonic()
        if watch.in_flight:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= QUIET_S:
            return
        page.wait_for_timeout(50)  # the page's events are handled meanwhile


def _walk(
    page, watch: Watch, story: BrowserStory, url: str, deadline: float
) -> tuple[list[str], str]:
    """Open the page, run the steps, wait for the expected text: (what went wrong, the
    page's text)."""
    from playwright.sync_api import Error

    def left_ms() -> int:  # whole milliseconds: Playwright's errors say them
        return max(round((deadline - time.monotonic()) * 1000), 1)

    try:
        page.goto(url, wait_until="load", timeout=left_ms())
    except Error as exc:
        return [f"opening {url} failed: {_first_line(exc)}"], ""
    for n, step in enumerate(story.steps, 1):
        try:
            _step(page, step, left_ms())
        except Error as exc:
            return [f"step {n} ({_said(step)}) failed: {_first_line(exc)}"], _text_or(page)
    _settle(page, watch, min(deadline, time.monotonic() + SETTLE_S))
    while True:
        try:
            text = _page_text(page)
        except Error as exc:  # the page is between two documents: again, in time
            if time.monotonic() >= deadline:
                return [f"reading the page's text failed: {_first_line(exc)}"], ""
            page.wait_for_timeout(100)
            continue
        missing = [t for t in story.expect_text if t not in text]
        if not missing or time.monotonic() >= deadline:
            return [f"text not on the page: {t!r}" for t in missing], text
        page.wait_for_timeout(100)


def _text_or(page) -> str:
    try:
        return _page_text(page)
    except Exception:  # the page is gone or hung: what went wrong is said already
        return ""


def _screenshot(page, path: Path) -> tuple[str | None, str | None]:
    """(the screenshot's path, or None and why it could not be taken). Written anew, never
    through a link a process of the sandbox put at its name."""
    try:
        files.replace_file(path, page.screenshot(full_page=True, timeout=15_000), durable=False)
    except Exception as exc:  # any failure here is reported, never raised
        return None, f"no screenshot: {_first_line(exc)}"
    return str(path), None


def _listed(title: str, lines: list[str], count: int) -> list[str]:
    out = [f"{title}: {line}" for line in lines]
    if count > len(lines):
        out.append(f"{title}: ... and {count - len(lines)} more")
    return out


def _result(
    sent: str,
    problems: list[str],
    text: str = "",
    watch: Watch | None = None,
    screenshot: str | None = None,
) -> dict:
    got = list(problems)
    if watch is not None:
        got += _listed("refused (not the served app)", watch.refused, watch.counts["refused"])
        got += _listed("failed request", watch.failed_requests, watch.counts["failed"])
        got += _listed("console error", watch.console_errors, watch.counts["console"])
    passed = not got
    if text:
        cut = text[:PAGE_TEXT_CHARS] + (" ..." if len(text) > PAGE_TEXT_CHARS else "")
        got.append(f"page text: {cut!r}")
    if screenshot:
        got.append(f"screenshot: {screenshot}")
    return {
        "passed": passed,
        "sent": sent,
        "got": "\n".join(got),
        "screenshot": screenshot,
        "console_errors": list(watch.console_errors) if watch else [],
        "failed_requests": list(watch.failed_requests) if watch else [],
        "refused": list(watch.refused) if watch else [],
    }


def drive(story: dict, base_url: str, shots_dir: str) -> dict:
    """Run one browser story against the app at ``base_url`` (``http://127.0.0.1:PORT``)
    and take its screenshot in ``shots_dir``: ``{"passed", "sent", "got", "screenshot",
    "console_errors", "failed_requests", "refused"}``. Never raises for what the page, the
    browser or the machine does: each is a failed story that says why."""
    try:
        parsed = BrowserStory.model_validate(story)
    except ValidationError as exc:
        return _result(json.dumps(story, default=str)[:2000], [f"not a browser story: {exc}"])
    url = base_url.rstrip("/") + parsed.path
    sent = _sent(parsed, url)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        return _result(sent, [NO_PLAYWRIGHT.format(error=exc)])
    chromium = find_chromium()
    if chromium is None:
        return _result(sent, [NO_CHROMIUM.format(names=", ".join(CHROMIUM))])
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = os.devnull  # never a browser of Playwright's
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    shots = Path(shots_dir)
    shots.mkdir(parents=True, exist_ok=True)
    watch = Watch(url)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=[*ARGS, *only_to(url)], timeout=60_000
            )
            try:
                context = browser.new_context(
                    service_workers="block",
                    viewport=VIEWPORT,
                    user_agent=USER_AGENT.format(major=browser.version.split(".")[0]),
                )
                watch.attach(context)
                page = context.new_page()
                deadline = time.monotonic() + parsed.timeout_s
                problems, text = _walk(page, watch, parsed, url, deadline)
                shot, why = _screenshot(page, shots / f"{parsed.name}.png")
                if why:
                    problems.append(why)
            finally:
                browser.close()
    except Exception as exc:  # the browser would not start or died: the story fails, saying so
        return _result(sent, [f"the browser failed: {_first_line(exc)}"], watch=watch)
    return _result(sent, problems, text, watch, shot)


# ------------------------------------------------------------------------------ serving
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".map": "application/json",
}


def _mode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _regular(root: Path, parts: list[str]) -> Path | None:
    """``root/parts...`` (a folder: its ``index.html``) when it is a regular file reached
    through no link; else None."""
    path, mode = root, _mode(root)
    for part in parts:
        path = path / part
        mode = _mode(path)
        if mode is None or stat.S_ISLNK(mode):
            return None
    if mode is not None and stat.S_ISDIR(mode):
        path = path / "index.html"
        mode = _mode(path)
    return path if mode is not None and stat.S_ISREG(mode) else None


def resolve(root: Path, request_path: str, page: bool) -> Path | None:
    """The file that answers ``request_path``: the file itself, or for a ``page`` request
    (the browser asks for HTML) that matches no file, the folder's ``index.html``."""
    parts = [p for p in unquote(urlsplit(request_path).path).split("/") if p not in ("", ".")]
    if any(p == ".." or "\0" in p or "\\" in p for p in parts):
        return None
    found = _regular(root, parts)
    if found is None and page:
        found = _regular(root, ["index.html"])
    return found


class _Static(http.server.BaseHTTPRequestHandler):
    root: Path

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        page = "text/html" in self.headers.get("Accept", "")
        found = resolve(self.root, self.path, page)
        data = None
        if found is not None:
            with contextlib.suppress(OSError):  # swapped for a link or a FIFO meanwhile
                data = files.read_regular(found)
        if data is None:
            self.send_error(404, "Not Found")
            return
        kind = TYPES.get(found.suffix.lower()) or mimetypes.guess_type(found.name)[0]
        self.send_response(200)
        self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base's name)
        pass  # what failed is the page's to report


def serve_static(folder: str | Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Serve the built front end in ``folder`` on ``127.0.0.1:port`` (0: a free port) from
    a daemon thread; the server's ``server_address`` says the port, ``shutdown()`` stops
    it. ValueError when the folder is not a real folder (a link is not served)."""
    path = Path(folder)
    if path.is_symlink() or not path.is_dir():
        raise ValueError(f"{folder} is not a folder of the built front end")
    handler = type("Static", (_Static,), {"root": path.absolute()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="serve-static", daemon=True).start()
    return server
