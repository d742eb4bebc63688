"""A package index on 127.0.0.1 for the tests whose projects install third-party packages
(the matrix tasks' reference projects, enhance's real-shaped repositories).

No test reaches a registry, so the wheels those projects install (pinned in
``tests/fixtures/test-wheels.txt``) are downloaded by ``make test`` into
``.cache/test-wheels`` and served here as a PEP 503 simple index. The scorer's install
step is pointed at it the way a user points pip at their own index (``PIP_INDEX_URL``),
with this machine's own pip configuration switched off (``PIP_CONFIG_FILE=/dev/null``), so
what passes is what the index serves.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import re
import threading
from pathlib import Path

import pytest

WHEELS = Path(__file__).resolve().parents[1] / ".cache" / "test-wheels"


def _project(wheel: str) -> str:
    return re.sub(r"[-_.]+", "-", wheel.split("-", 1)[0]).lower()


@pytest.fixture(scope="session")
def wheel_server():
    """The index's URL; fails (never skips) when the wheels were not downloaded."""
    files = sorted(WHEELS.glob("*.whl")) if WHEELS.is_dir() else []
    assert files, f"no wheels in {WHEELS}: run make test (it downloads the test wheels)"
    pages: dict[str, list[Path]] = {}
    for path in files:
        pages.setdefault(_project(path.name), []).append(path)
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = [p for p in self.path.split("?", 1)[0].split("/") if p]
            body, kind = None, "text/html"
            if len(parts) == 2 and parts[0] == "simple" and parts[1] in pages:
                links = "".join(
                    f'<a href="/files/{html.escape(p.name)}#sha256={digests[p.name]}">'
                    f"{html.escape(p.name)}</a>\n"
                    for p in pages[parts[1]]
                )
                body = f"<!DOCTYPE html><html><body>\n{links}</body></html>".encode()
            elif len(parts) == 2 and parts[0] == "files" and parts[1] in digests:
                body, kind = (WHEELS / parts[1]).read_bytes(), "application/octet-stream"
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    server.shutdown()
    server.server_close()


@pytest.fixture
def wheel_index(wheel_server, monkeypatch) -> str:
    """pip's installs, the scorer's included, use the 127.0.0.1 index and nothing else."""
    monkeypatch.setenv("PIP_INDEX_URL", wheel_server)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)
    return wheel_server
