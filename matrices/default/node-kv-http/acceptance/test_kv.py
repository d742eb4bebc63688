"""Hidden checks for node-kv-http: `node server.js` started with PORT in its environment and
driven over HTTP on 127.0.0.1."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

ROOT = os.getcwd()
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start():
    """The service on a free port, once it accepts connections: (process, port)."""
    port = _free_port()
    proc = subprocess.Popen(
        ["node", "server.js"],
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
            raise AssertionError(f"node server.js exited with status {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    _stop(proc)
    raise AssertionError(f"node server.js did not listen on 127.0.0.1:{port} within 10 s")


def _stop(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)


class Store(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = _start()

    @classmethod
    def tearDownClass(cls):
        _stop(cls.proc)

    def call(self, method, path, body=None, raw=None, headers=None):
        """(status, headers, parsed JSON body or None when empty)."""
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method, headers=headers or {}
        )
        try:
            with OPENER.open(request, timeout=5) as reply:
                status, got, payload = reply.status, reply.headers, reply.read()
        except urllib.error.HTTPError as error:
            status, got, payload = error.code, error.headers, error.read()
        if payload or status != 204:
            self.assertTrue(got["Content-Type"].startswith("application/json"), (method, path))
        return status, got, json.loads(payload) if payload else None

    def assert_error(self, status, reply, expected, what):
        self.assertEqual(status, expected, what)
        self.assertIsInstance(reply.get("error"), str, what)

    def test_put_creates_then_replaces_with_versions_and_etags(self):
        status, headers, reply = self.call("PUT", "/kv/color", {"r": 1, "g": [2, 3]})
        self.assertEqual(status, 201)
        self.assertEqual(reply, {"key": "color", "value": {"r": 1, "g": [2, 3]}, "version": 1})
        self.assertEqual(headers["ETag"], '"1"')
        status, headers, reply = self.call("PUT", "/kv/color", "blue")
        self.assertEqual((status, reply["version"], reply["value"]), (200, 2, "blue"))
        self.assertEqual(headers["ETag"], '"2"')

    def test_get_returns_any_json_value(self):
        for key, value in (("n.1", 3.5), ("nil", None), ("flag", False), ("list_-", [])):
            self.call("PUT", f"/kv/{key}", raw=json.dumps(value).encode())
            status, headers, reply = self.call("GET", f"/kv/{key}")
            self.assertEqual((status, reply), (200, {"key": key, "value": value, "version": 1}))
            self.assertEqual(headers["ETag"], '"1"')

    def test_delete_replies_204_then_the_key_is_gone(self):
        self.call("PUT", "/kv/gone", 1)
        status, _, reply = self.call("DELETE", "/kv/gone")
        self.assertEqual((status, reply), (204, None))
        self.assert_error(*self.call("GET", "/kv/gone")[::2], 404, "GET after DELETE")
        self.assert_error(*self.call("DELETE", "/kv/gone")[::2], 404, "DELETE again")
        self.assertEqual(self.call("PUT", "/kv/gone", 2)[2]["version"], 1)

    def test_if_match_guards_put_and_delete(self):
        self.call("PUT", "/kv/guard", "a")
        stale = {"If-Match": '"5"'}
        self.assert_error(*self.call("PUT", "/kv/guard", "b", headers=stale)[::2], 412, "PUT")
        self.assert_error(*self.call("DELETE", "/kv/guard", headers=stale)[::2], 412, "DELETE")
        self.assertEqual(self.call("GET", "/kv/guard")[2]["value"], "a")
        status, _, reply = self.call("PUT", "/kv/guard", "c", headers={"If-Match": '"1"'})
        self.assertEqual((status, reply["version"]), (200, 2))
        self.assertEqual(self.call("DELETE", "/kv/guard", headers={"If-Match": '"2"'})[0], 204)
        status, _, reply = self.call("PUT", "/kv/never", 1, headers={"If-Match": '"1"'})
        self.assert_error(status, reply, 412, "If-Match on a missing key")
        self.assertEqual(self.call("GET", "/kv/never")[0], 404)

    def test_list_is_sorted_by_code_and_filtered_by_prefix(self):
        for key in ("pre.b", "pre.B", "pre.a", "pre-z", "prf"):
            self.call("PUT", f"/kv/{key}", 0)
        status, _, reply = self.call("GET", "/kv?prefix=pre")
        self.assertEqual(status, 200)
        self.assertEqual(reply, {"keys": ["pre-z", "pre.B", "pre.a", "pre.b"]})
        everything = self.call("GET", "/kv")[2]["keys"]
        self.assertEqual(everything, sorted(everything))
        self.assertIn("prf", everything)

    def test_bad_json_and_bad_keys_give_400(self):
        self.assert_error(*self.call("PUT", "/kv/ok", raw=b"{nope")[::2], 400, "bad JSON")
        self.assert_error(*self.call("PUT", "/kv/ok2", raw=b"")[::2], 400, "empty body")
        self.assertEqual(self.call("GET", "/kv/ok")[0], 404)
        for key in ("a%20b", "x" * 65, "semi%3Bcolon", "%C3%A9"):
            self.assert_error(*self.call("PUT", f"/kv/{key}", 1)[::2], 400, key)
            self.assert_error(*self.call("GET", f"/kv/{key}")[::2], 400, key)
        self.assertEqual(self.call("PUT", "/kv/" + "y" * 64, 1)[0], 201)

    def test_other_methods_and_paths(self):
        self.call("PUT", "/kv/m", 1)
        self.assert_error(*self.call("POST", "/kv/m", 1)[::2], 405, "POST /kv/m")
        self.assert_error(*self.call("POST", "/kv", 1)[::2], 405, "POST /kv")
        self.assert_error(*self.call("DELETE", "/kv")[::2], 405, "DELETE /kv")
        for path in ("/", "/keys", "/kvx"):
            self.assert_error(*self.call("GET", path)[::2], 404, path)
