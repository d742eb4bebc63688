"""Browser stories: the system's Chromium, driven by Playwright, inside the real sandbox.

Each story runs as the story driver runs it: a script on cadillac's own interpreter
(``-I -S``, with only :func:`driver_paths` on its path) in bubblewrap, with no network but
the sandbox's own loopback, serving the built folder with :func:`serve_static` and driving
it with :func:`drive`. CI installs Chromium (``.ci/run``), so none of these skips.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from orchestrator.sandbox.executor import ExecConfig, run_command
from phases.stories import browser
from phases.stories.browser import drive, driver_paths, find_chromium, serve_static

DRIVER = """\
import json, sys, time
sys.path[:0] = json.load(open("paths.json"))
from phases.stories.browser import drive, serve_static
server = serve_static("dist", 0)
base = "http://127.0.0.1:%d" % server.server_address[1]
for story in json.load(open("stories.json")):
    start = time.monotonic()
    out = drive(story, base, "shots")
    out["seconds"] = round(time.monotonic() - start, 2)
    print("RESULT " + json.dumps(out), flush=True)
server.shutdown()
"""


def run_stories(
    tmp_path: Path, page: str, *stories: dict, files=None, driver: str = DRIVER
) -> list[dict]:
    """Serve ``page`` as ``dist/index.html`` (and ``files`` beside it) and drive each story
    in one sandboxed command (the ``driver`` script); the results, each with its
    ``seconds``."""
    ws = tmp_path / "ws"
    (ws / "dist").mkdir(parents=True)
    (ws / "dist" / "index.html").write_text(page)
    for name, text in (files or {}).items():
        (ws / "dist" / name).write_text(text)
    paths = driver_paths()
    (ws / "paths.json").write_text(json.dumps([str(p) for p in paths.sys_path]))
    (ws / "stories.json").write_text(json.dumps(list(stories)))
    (ws / "driver.py").write_text(driver)
    python = Path(sys.executable).resolve()
    done = run_command(
        f"{python} -I -S driver.py", ws, ExecConfig(), timeout_s=300, visible=paths.visible
    )
    results = [
        json.loads(line[len("RESULT ") :])
        for line in done.output.splitlines()
        if line.startswith("RESULT ")
    ]
    assert len(results) == len(stories), done.for_model()
    for story, result in zip(stories, results, strict=True):
        print(f"{story['name']}: {result['seconds']} s")  # the time a story takes
    return results


def story(name: str, expect: list[str], steps=(), **more) -> dict:
    return {"kind": "browser", "name": name, "expect_text": expect, "steps": list(steps), **more}


def shot_of(result: dict) -> Path:
    assert result["screenshot"], result
    return Path(result["screenshot"])


# --------------------------------------------------------------------------- the machine
@pytest.mark.e2e
def test_the_system_chromium_is_there():
    assert find_chromium(), "no system Chromium: .ci/run installs it (apt-get install chromium)"
    import playwright  # noqa: F401 (a dependency of cadillac)


def test_no_chromium_fails_the_story_with_one_line_saying_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(browser, "CHROMIUM", ("no-such-chromium",))
    out = drive(story("home", ["Hi"]), "http://127.0.0.1:9", str(tmp_path))
    assert out["passed"] is False and out["screenshot"] is None
    assert out["got"] == (
        "no system Chromium found (looked for no-such-chromium): install it "
        "(apt-get install chromium); cadillac never downloads a browser"
    )


def test_the_driver_is_shown_its_modules_and_nothing_else_of_cadillac():
    visible, sys_path = driver_paths()
    root = Path(__file__).resolve().parents[2]
    assert root / "phases" in visible and root / "orchestrator" in visible
    assert root in sys_path
    assert root not in visible  # not the checkout (its .env, its runs)
    playwright = next(p for p in visible if p.name == "playwright")
    assert playwright.is_dir() and playwright.parent in sys_path
    assert playwright.parent not in visible  # not the whole site-packages


# --------------------------------------------------------------------------- in the sandbox
COUNTER = """<!doctype html><html><body>
<h1>Counter</h1><p id="count">Count: 0</p>
<input id="who"><button id="add">Add</button><p id="hello"></p>
<script>
let n = 0;
document.getElementById("add").onclick = () => {
  n += 1;
  document.getElementById("count").textContent = "Count: " + n;
  document.getElementById("hello").textContent =
    "Hello " + document.getElementById("who").value;
};
</script></body></html>"""


@pytest.mark.e2e
def test_a_click_that_changes_the_text_passes_with_a_screenshot(tmp_path):
    steps = [
        {"action": "type", "selector": "#who", "text": "Ada"},
        {"action": "click", "selector": "#add"},
        {"action": "wait_for", "selector": "#count", "text": "Count: 1"},
    ]
    good = story("counter", ["Count: 1", "Hello Ada"], steps)
    wrong = story("counter-wrong", ["Count: 2"], steps, timeout_s=3)
    missing = story(
        "no-button", ["Count: 1"], [{"action": "click", "selector": "#nope"}], timeout_s=2
    )
    (tmp_path / "ws" / "shots").mkdir(parents=True)
    (tmp_path / "ws" / "shots" / "counter.png").symlink_to(tmp_path / "ws" / "planted")
    out, bad, gone = run_stories(tmp_path, COUNTER, good, wrong, missing)
    assert out["passed"] is True, out["got"]
    assert out["console_errors"] == out["failed_requests"] == out["refused"] == []
    assert shot_of(out).name == "counter.png"
    shot = tmp_path / "ws" / "shots" / "counter.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not shot.is_symlink() and not (tmp_path / "ws" / "planted").exists()
    assert "open http://127.0.0.1:" in out["sent"] and "click '#add'" in out["sent"]
    # the same page, where the expected text never comes, or a step cannot be done
    assert bad["passed"] is False
    assert "text not on the page: 'Count: 2'" in bad["got"]
    assert "Count: 1" in bad["got"]  # what the page said instead
    assert gone["passed"] is False
    assert re.search(r"step 1 \(click '#nope'\) failed: .*Timeout \d+ms exceeded", gone["got"])
    assert (tmp_path / "ws" / "shots" / "no-button.png").is_file()  # on failure too


BROKEN_MOUNT = """<!doctype html><html><body><h1>Shop</h1><div id="root"></div>
<script>
console.error("cannot render the cart: items is undefined");
document.getElementById("root").appendChild(window.Cart.render());
</script></body></html>"""


@pytest.mark.e2e
def test_a_console_error_fails_a_page_whose_text_is_there(tmp_path):
    (out,) = run_stories(tmp_path, BROKEN_MOUNT, story("shop", ["Shop"]))
    assert out["passed"] is False
    assert "cannot render the cart: items is undefined" in out["console_errors"]
    assert (
        "uncaught TypeError: Cannot read properties of undefined (reading 'render')"
        in (out["console_errors"])
    )
    assert "console error: cannot render the cart" in out["got"]
    assert "text not on the page" not in out["got"]  # the error alone fails it
    assert (tmp_path / "ws" / "shots" / "shop.png").is_file()


REACHING_OUT = """<!doctype html><html><body><h1>Weather</h1>
<script>
fetch("http://example.com/x").catch(() => {});
fetch("file:///etc/passwd").catch(() => {});
try { new WebSocket("ws://example.com/live"); } catch (e) {}
</script></body></html>"""


@pytest.mark.e2e
def test_requests_beyond_the_served_app_are_refused_and_reported(tmp_path):
    (out,) = run_stories(tmp_path, REACHING_OUT, story("weather", ["Weather"]))
    assert out["passed"] is False
    assert "GET http://example.com/x" in out["refused"]
    assert "GET file:///etc/passwd" in out["refused"]
    assert "WebSocket ws://example.com/live" in out["refused"]
    assert "refused (not the served app): GET http://example.com/x" in out["got"]
    assert "refused (not the served app): GET file:///etc/passwd" in out["got"]


APP_SERVER = """\
import base64, hashlib, http.server, json, sys, threading, time
sys.path[:0] = json.load(open("paths.json"))
from phases.stories.browser import drive

hits = []
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

class Other(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        hits.append(self.path)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass

class App(Other):  # /go redirects to the other port, /live is a WebSocket saying hello,
    def do_GET(self):  # /slow answers 404 after a second
        if self.path == "/slow":
            time.sleep(1)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/go":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:%d/secret" % other)
            self.end_headers()
        elif self.path == "/live":
            key = self.headers["Sec-WebSocket-Key"] + GUID
            accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.end_headers()
            self.wfile.write(b"\\x81\\x05hello")
            self.wfile.flush()
            self.rfile.read(2)
        else:
            page = open("dist/index.html", "rb").read()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]

other, app = serve(Other), serve(App)
for story in json.load(open("stories.json")):
    start = time.monotonic()
    out = drive(story, "http://127.0.0.1:%d" % app, "shots")
    out["seconds"] = round(time.monotonic() - start, 2)
    out["other"], out["hits"] = other, hits
    print("RESULT " + json.dumps(out), flush=True)
"""
FOLLOWS_A_REDIRECT = """<!doctype html><html><body><h1>Hi</h1>
<script>fetch("/go").catch(() => {});</script></body></html>"""


@pytest.mark.e2e
def test_a_redirect_to_another_port_reaches_nothing_and_is_refused(tmp_path):
    (out,) = run_stories(tmp_path, FOLLOWS_A_REDIRECT, story("hop", ["Hi"]), driver=APP_SERVER)
    assert out["hits"] == [], "the redirect's next hop reached the other port"
    hop = f"GET http://127.0.0.1:{out['other']}/secret"  # or, as Playwright may tell it:
    first = f"GET {out['sent'].split()[1].rstrip('/')}/go: redirected beyond the served app"
    assert hop in out["refused"] or first in out["refused"], out["refused"]
    assert not any("/go" in line for line in out["failed_requests"]), out["failed_requests"]
    assert out["passed"] is False


LIVE = """<!doctype html><html><body><h1 id="state">waiting</h1><script>
const socket = new WebSocket("ws://" + location.host + "/live");
socket.onmessage = (event) => {
  document.getElementById("state").textContent = "live: " + event.data;
};
</script></body></html>"""


@pytest.mark.e2e
def test_the_apps_own_websocket_goes_through(tmp_path):
    (out,) = run_stories(tmp_path, LIVE, story("live", ["live: hello"]), driver=APP_SERVER)
    assert out["passed"] is True, out["got"]
    assert out["refused"] == []


LATE = """<!doctype html><html><body><p id="ready"></p><p id="said"></p><button>Save</button>
<script>
setTimeout(() => { document.getElementById("ready").textContent = "ready"; }, 1000);
document.querySelector("button").onclick = () => {
  document.getElementById("said").textContent = "saving";
  fetch("/slow").catch(() => {});
};
</script></body></html>"""


@pytest.mark.e2e
def test_a_request_a_step_starts_is_waited_for(tmp_path):
    steps = [
        {"action": "wait_for", "selector": "#ready", "text": "ready"},
        {"action": "click", "selector": "button"},
    ]
    (out,) = run_stories(tmp_path, LATE, story("save", ["saving"], steps), driver=APP_SERVER)
    assert out["passed"] is False
    assert any(line.endswith("/slow -> 404") for line in out["failed_requests"]), out["got"]


CALLS_AN_API = """<!doctype html><html><body><h1>Todos</h1><ul id="items"></ul>
<script type="module" src="/app.js"></script></body></html>"""
APP_JS = """fetch("/api/todos").then(r => r.ok ? r.json() : []).then(items => {
  for (const t of items) document.getElementById("items").append(t.title);
});"""


@pytest.mark.e2e
def test_a_fetch_of_an_api_path_the_build_lacks_is_a_failed_request(tmp_path):
    (out,) = run_stories(
        tmp_path, CALLS_AN_API, story("todos", ["Todos"]), files={"app.js": APP_JS}
    )
    assert out["passed"] is False
    failed = [r for r in out["failed_requests"] if r.endswith("/api/todos -> 404")]
    assert failed and failed[0].startswith("GET http://127.0.0.1:"), out["failed_requests"]
    assert not any("app.js" in r for r in out["failed_requests"])  # the script itself loaded
    assert "failed request: GET http://127.0.0.1:" in out["got"]


TELLS_A_PROBE = """<!doctype html><html><body><p id="total"></p>
<script>
const probe = navigator.webdriver || /Headless/.test(navigator.userAgent);
document.getElementById("total").textContent = probe ? "Total: 42" : "Total: NaN";
</script></body></html>"""


@pytest.mark.e2e
def test_a_page_that_answers_a_probe_differently_is_seen_as_a_person_sees_it(tmp_path):
    (out,) = run_stories(tmp_path, TELLS_A_PROBE, story("total", ["Total: 42"], timeout_s=2))
    assert out["passed"] is False
    assert "text not on the page: 'Total: 42'" in out["got"]
    assert "Total: NaN" in out["got"]


def test_a_story_that_is_not_a_browser_story_fails_saying_why(tmp_path):
    out = drive({"kind": "browser", "name": "x"}, "http://127.0.0.1:9", str(tmp_path))
    assert out["passed"] is False and out["screenshot"] is None
    assert out["got"].startswith("not a browser story: 1 validation error")
    assert "expect_text" in out["got"]


# --------------------------------------------------------------------------- serving
def get(url: str, accept: str = "*/*") -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def test_the_built_folder_is_served_as_a_single_page_app_would_be(tmp_path):
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<p>app</p>")
    (dist / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("the key")
    (dist / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (dist / "linked").symlink_to(tmp_path)
    server = serve_static(dist)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert get(base + "/") == (200, b"<p>app</p>")
        assert get(base + "/assets/app.js") == (200, b"console.log(1)")
        assert get(base + "/cart/42", accept="text/html,*/*") == (200, b"<p>app</p>")
        assert get(base + "/api/items") == (404, b"")  # a fetch of what the build lacks
        assert get(base + "/leak.txt") == (404, b"")  # links are not followed
        assert get(base + "/linked/secret.txt") == (404, b"")
        assert get(base + "/leak.txt", accept="text/html") == (200, b"<p>app</p>")
        assert get(base + "/%2e%2e/secret.txt") == (404, b"")
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="is not a folder of the built front end"):
        serve_static(tmp_path / "nowhere")
