"""Hidden checks for url-shortener-http: `python -m shortener` as a subprocess on 127.0.0.1."""

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import unittest
import urllib.error
import urllib.request

ROOT = os.getcwd()
LIMIT_S = 3.0
FIRST_LINE = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 302 comes back as an HTTPError we can inspect


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _start(port):
    """Start the service; return (process, first line of its stdout)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "shortener", "--port", str(port)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=2 * LIMIT_S)
    except queue.Empty:
        _stop(proc)
        raise AssertionError("the service printed no first line") from None
    if not FIRST_LINE.fullmatch(line.strip()):
        _stop(proc)
        raise AssertionError(f"unexpected first line {line!r}")
    return proc, line.strip()


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=LIMIT_S)
    if proc.stdout:
        proc.stdout.close()


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Service(unittest.TestCase):
    port_arg = 0

    @classmethod
    def setUpClass(cls):
        cls.proc, cls.first_line = _start(cls.port_arg)
        cls.port = int(FIRST_LINE.fullmatch(cls.first_line).group(1))

    @classmethod
    def tearDownClass(cls):
        _stop(cls.proc)

    def request(self, method, path, body=None, raw=None):
        """(status, headers, parsed JSON body or None)."""
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method
        )
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with OPENER.open(request, timeout=LIMIT_S) as response:
                status, headers, content = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, headers, content = error.code, error.headers, error.read()
            error.close()
        if status == 302:
            return status, headers, None
        self.assertEqual(headers.get_content_type(), "application/json", (method, path))
        return status, headers, json.loads(content.decode("utf-8"))

    def shorten(self, url, **extra):
        return self.request("POST", "/shorten", {"url": url, **extra})


class ShortenerTest(_Service):
    def test_first_line_reports_the_bound_port(self):
        self.assertGreater(self.port, 0)
        self.assertEqual(self.first_line, f"listening on 127.0.0.1:{self.port}")

    def test_shorten_returns_a_new_code(self):
        status, _, body = self.shorten("https://example.com/a/long/path?x=1")
        self.assertEqual(status, 201)
        self.assertRegex(body["code"], r"\A[A-Za-z0-9]{6}\Z")
        self.assertEqual(body, {"code": body["code"], "url": "https://example.com/a/long/path?x=1"})

    def test_a_code_redirects_to_its_url(self):
        _, _, body = self.shorten("http://example.org/redirect-me")
        status, headers, _ = self.request("GET", f"/{body['code']}")
        self.assertEqual(status, 302)
        self.assertEqual(headers["Location"], "http://example.org/redirect-me")

    def test_stats_count_redirects_only(self):
        _, _, body = self.shorten("https://example.net/counted")
        code = body["code"]
        expected = {"code": code, "url": "https://example.net/counted", "hits": 0}
        self.assertEqual(self.request("GET", f"/stats/{code}")[::2], (200, expected))
        for _ in range(3):
            self.assertEqual(self.request("GET", f"/{code}")[0], 302)
        self.request("GET", f"/stats/{code}")
        expected["hits"] = 3
        self.assertEqual(self.request("GET", f"/stats/{code}")[::2], (200, expected))

    def test_the_same_url_gets_its_code_back(self):
        status, _, first = self.shorten("https://example.com/same")
        self.assertEqual(status, 201)
        status, _, again = self.shorten("https://example.com/same")
        self.assertEqual((status, again), (200, first))
        status, _, other = self.shorten("https://example.com/other")
        self.assertEqual(status, 201)
        self.assertNotEqual(other["code"], first["code"])

    def test_custom_codes(self):
        url = "https://example.com/custom"
        status, _, body = self.shorten(url, code="my-Link_1")
        self.assertEqual((status, body), (201, {"code": "my-Link_1", "url": url}))
        self.assertEqual(self.request("GET", "/my-Link_1")[1]["Location"], url)
        status, _, body = self.shorten("https://example.com/else", code="my-Link_1")
        self.assertEqual(status, 409)
        self.assertIn("error", body)
        status, _, generated = self.shorten(url)
        self.assertEqual(status, 201)
        self.assertNotEqual(generated["code"], "my-Link_1")
        self.assertEqual(self.shorten(url, code=generated["code"])[0], 409)
        for bad in ("ab", "has space", "stats", "shorten", "x" * 33, "dots.no", 123):
            with self.subTest(code=bad):
                status, _, body = self.shorten("https://example.com/bad-code", code=bad)
                self.assertEqual(status, 400)
                self.assertIn("error", body)
        self.assertEqual(self.request("GET", "/ab")[0], 404)

    def test_bad_bodies_are_400(self):
        bodies = [
            b"{not json",
            b"",
            b'["https://example.com"]',
            b'"https://example.com"',
            b"{}",
            b'{"link": "https://example.com"}',
            b'{"url": 42}',
            b'{"url": "ftp://example.com/file"}',
            b'{"url": "example.com"}',
            b'{"url": "https://"}',
        ]
        for raw in bodies:
            with self.subTest(body=raw):
                status, _, body = self.request("POST", "/shorten", raw=raw)
                self.assertEqual(status, 400)
                self.assertIn("error", body)

    def test_unknown_codes_and_paths_are_404(self):
        for method, path in [
            ("GET", "/zzzzzz9"),
            ("GET", "/stats/zzzzzz9"),
            ("GET", "/"),
            ("GET", "/stats"),
            ("GET", "/a/b/c"),
            ("GET", "/shorten"),
            ("POST", "/elsewhere"),
        ]:
            with self.subTest(method=method, path=path):
                raw = b'{"url": "https://example.com"}' if method == "POST" else None
                status, _, body = self.request(method, path, raw=raw)
                self.assertEqual(status, 404)
                self.assertIn("error", body)

    def test_a_slow_client_does_not_block_others(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=LIMIT_S) as slow:
            slow.sendall(b"GET /stats/zzzzzz9 HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # unfinished
            status, _, _ = self.shorten("https://example.com/while-another-waits")
            self.assertEqual(status, 201)


class GivenPortTest(_Service):
    @classmethod
    def setUpClass(cls):
        cls.port_arg = _free_port()
        super().setUpClass()

    def test_the_given_port_is_used(self):
        self.assertEqual(self.port, self.port_arg)
        self.assertEqual(self.first_line, f"listening on 127.0.0.1:{self.port_arg}")
        self.assertEqual(self.shorten("https://example.com/port")[0], 201)
