"""Hidden checks for go-notes-http: the binary `go build` makes, started with PORT in its
environment and driven over HTTP on 127.0.0.1."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

ROOT = os.getcwd()
BUILT = {}
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _tool():
    """The binary, built once into a temporary folder (the build's error fails every check)."""
    if "path" not in BUILT:
        out = os.path.join(tempfile.mkdtemp(), "notes")
        done = subprocess.run(
            ["go", "build", "-o", out, "."], cwd=ROOT, capture_output=True, text=True, timeout=50
        )
        BUILT["path"] = out if done.returncode == 0 else None
        BUILT["error"] = done.stderr[-500:]
    assert BUILT["path"], f"go build failed: {BUILT['error']}"
    return BUILT["path"]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start():
    """The service on a free port, once it accepts connections: (process, port)."""
    port = _free_port()
    proc = subprocess.Popen(
        [_tool()],
        cwd=ROOT,
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the service exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    _stop(proc)
    raise AssertionError(f"the service did not listen on 127.0.0.1:{port} within 10 s")


def _stop(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)


class _Service(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = _start()

    @classmethod
    def tearDownClass(cls):
        _stop(cls.proc)

    def call(self, method, path, body=None, raw=None):
        """(status, headers, parsed JSON body or None when empty)."""
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method
        )
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with OPENER.open(request, timeout=5) as reply:
                status, headers, payload = reply.status, reply.headers, reply.read()
        except urllib.error.HTTPError as error:
            status, headers, payload = error.code, error.headers, error.read()
        return status, headers, json.loads(payload) if payload else None

    def create(self, title, body=None):
        sent = {"title": title} if body is None else {"title": title, "body": body}
        status, _, note = self.call("POST", "/notes", sent)
        self.assertEqual(status, 201, note)
        return note


class FreshService(_Service):
    def test_ids_count_from_one_and_are_never_given_again(self):
        first = self.create("first", "one")
        second = self.create("second")
        self.assertEqual(first, {"id": 1, "title": "first", "body": "one"})
        self.assertEqual(second, {"id": 2, "title": "second", "body": ""})
        self.assertEqual(self.call("DELETE", "/notes/2")[0], 204)
        self.assertEqual(self.create("third")["id"], 3)
        status, _, listing = self.call("GET", "/notes")
        self.assertEqual(status, 200)
        self.assertEqual([n["id"] for n in listing["notes"]], [1, 3])


class Notes(_Service):
    def test_create_replies_201_with_location_and_json(self):
        status, headers, note = self.call("POST", "/notes", {"title": "Buy milk", "x": 1})
        self.assertEqual(status, 201)
        self.assertEqual(headers["Location"], f"/notes/{note['id']}")
        self.assertTrue(headers["Content-Type"].startswith("application/json"))
        self.assertEqual(note["title"], "Buy milk")
        self.assertEqual(note["body"], "")
        self.assertEqual(set(note), {"id", "title", "body"})

    def test_get_one_note(self):
        note = self.create("Read", "chapter 3")
        status, headers, got = self.call("GET", f"/notes/{note['id']}")
        self.assertEqual((status, got), (200, note))
        self.assertTrue(headers["Content-Type"].startswith("application/json"))

    def test_list_is_sorted_and_filtered_ignoring_case(self):
        a = self.create("Zebra FACTS", "stripes")
        b = self.create("plain", "about zebras")
        self.create("other", "nothing here")
        status, _, listing = self.call("GET", "/notes?q=zEbRa")
        self.assertEqual(status, 200)
        self.assertEqual(listing["notes"], [a, b])
        _, _, everything = self.call("GET", "/notes")
        ids = [n["id"] for n in everything["notes"]]
        self.assertEqual(ids, sorted(ids))
        self.assertTrue({a["id"], b["id"]} <= set(ids))

    def test_bad_bodies_give_400_with_an_error(self):
        for raw in (b"{not json", b"[1, 2]", b'"title"', b"{}", b'{"title": ""}',
                    b'{"title": 5}', b'{"title": "t", "body": 7}', b'{"title": null}'):  # fmt: skip
            status, headers, reply = self.call("POST", "/notes", raw=raw)
            self.assertEqual(status, 400, raw)
            self.assertIsInstance(reply.get("error"), str, raw)
            self.assertTrue(headers["Content-Type"].startswith("application/json"), raw)

    def test_delete_replies_204_then_the_note_is_gone(self):
        note = self.create("temporary")
        status, _, reply = self.call("DELETE", f"/notes/{note['id']}")
        self.assertEqual((status, reply), (204, None))
        status, _, reply = self.call("GET", f"/notes/{note['id']}")
        self.assertEqual(status, 404)
        self.assertIsInstance(reply.get("error"), str)
        self.assertEqual(self.call("DELETE", f"/notes/{note['id']}")[0], 404)

    def test_unknown_or_malformed_ids_and_paths_give_404(self):
        for path in ("/notes/99999", "/notes/abc", "/notes/1.5", "/nothing", "/"):
            status, _, reply = self.call("GET", path)
            self.assertEqual(status, 404, path)
            self.assertIsInstance(reply.get("error"), str, path)

    def test_other_methods_give_405(self):
        note = self.create("methods")
        self.assertEqual(self.call("PUT", "/notes", {"title": "x"})[0], 405)
        self.assertEqual(self.call("DELETE", "/notes")[0], 405)
        self.assertEqual(self.call("POST", f"/notes/{note['id']}", {"title": "x"})[0], 405)

    def test_concurrent_creates_get_distinct_ids(self):
        ids, errors = [], []

        def post(n):
            try:
                ids.append(self.create(f"parallel {n}")["id"])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc))

        threads = [threading.Thread(target=post, args=(n,)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        self.assertEqual(errors, [])
        self.assertEqual(len(set(ids)), 20)
