"""The egress gate: an improve trial that calls a real provider reaches that provider and
the package registries, through a gate outside its sandbox, and nothing else."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from orchestrator.errors import CadillacError
from orchestrator.sandbox import egress
from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.policy import command_env
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parents[3]


def port_of(server: FakeOpenAI) -> int:
    return server.server.server_address[1]


def ask(gate: egress.EgressGate, request: bytes) -> bytes:
    """One request to the gate's socket, and all it answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(gate.path))
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def completion_request(port: int, absolute: bool) -> bytes:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    target = f"http://127.0.0.1:{port}/v1/chat/completions" if absolute else "/v1/chat/completions"
    head = f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\n"
    head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def test_the_gate_connects_to_an_allowed_host_and_refuses_the_rest(tmp_path):
    with FakeOpenAI(lambda body: "through the gate") as server:
        port = port_of(server)
        log = tmp_path / "egress.jsonl"
        with egress.EgressGate(tmp_path / "gate", {("127.0.0.1", port)}, log=log) as gate:
            plain = ask(gate, completion_request(port, absolute=True))
            tunnel = f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode()
            tunnel += completion_request(port, absolute=False).replace(
                b"Connection: keep-alive", b"Connection: close"
            )
            tunnelled = ask(gate, tunnel)
            other = ask(gate, f"CONNECT 127.0.0.1:{port + 1} HTTP/1.1\r\n\r\n".encode())
            other_plain = ask(gate, completion_request(port + 1, absolute=True))
            named = ask(gate, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
            bad = ask(gate, b"GET /relative HTTP/1.1\r\n\r\n")
            junk = ask(gate, b"\x16\x03\x01 not http\r\n\r\n")
        assert not gate.path.exists()  # the socket goes with the gate
    assert plain.startswith(b"HTTP/1.0 200") and b"through the gate" in plain
    # a tunnel carries TLS alone: plain HTTP inside one (whose Host the gate would not
    # check) is told TLS's unrecognized_name and reaches nothing
    assert (
        tunnelled == b"HTTP/1.1 200 Connection established\r\n\r\n" + egress.TLS_UNRECOGNIZED_NAME
    )
    # the origin server saw its own request: origin form, no proxy header, one request
    first = server.headers[0]
    assert "Proxy-Authorization" not in first and first["Connection"] == "close"
    for refused, port_ in ((other, port + 1), (other_plain, port + 1)):
        assert refused.startswith(b"HTTP/1.1 403")
        assert f"127.0.0.1:{port_} is not an allowed host".encode() in refused
    assert named.startswith(b"HTTP/1.1 403") and b"example.com:443" in named
    assert bad.startswith(b"HTTP/1.1 400") and junk.startswith(b"HTTP/1.1 400")
    assert len(server.requests) == 1  # nothing refused got through
    decisions = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(d["port"], d["allowed"]) for d in decisions] == [
        (port, True),
        (port, False),
        (port + 1, False),
        (port + 1, False),
        (443, False),
    ]


def test_a_sandboxed_process_reaches_the_model_through_the_gate_and_nothing_else(tmp_path):
    """Inside bubblewrap with no network: litellm reaches the allowed server through the
    relay; a direct connection to a host port fails, and so does a request through the
    proxy to a host the gate was not given."""
    listener = socket.create_server(("127.0.0.1", 0))
    closed = listener.getsockname()[1]
    work = tmp_path / "work"
    work.mkdir()
    script = f"""
import os, socket, sys, urllib.request
from orchestrator.sandbox.egress import use_relay
use_relay()
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
answer = litellm.completion(model="openai/gpt-4o-mini", api_base=sys.argv[1], api_key="k",
                            messages=[{{"role": "user", "content": "hi"}}])
print("model:", answer.choices[0].message.content)
try:
    socket.create_connection(("127.0.0.1", {closed}), timeout=2)
    print("direct: connected")
except OSError as exc:
    print("direct: failed", exc)
try:
    urllib.request.urlopen("http://127.0.0.1:{closed}/", timeout=5)
    print("proxied: answered")
except Exception as exc:
    print("proxied: failed", exc)
"""
    (work / "probe.py").write_text(script)
    with FakeOpenAI(lambda body: "hello from the model") as server:
        allowed = {("127.0.0.1", port_of(server))}
        with egress.EgressGate(tmp_path / "g", allowed, log=work / "egress.jsonl") as gate:
            done = run_command(
                f"{sys.executable} probe.py {server.api_base}",
                work,
                ExecConfig(),
                env={egress.SOCKET_ENV: str(gate.path), "PYTHONPATH": str(ROOT)},
                writable=[gate.folder],
                visible=[ROOT, Path(sys.prefix).resolve()],
            )
    out = done.for_model()
    assert "model: hello from the model" in out, out
    assert "direct: failed" in out and "proxied: failed HTTP Error 403" in out, out
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing reached the host's port
    listener.close()
    refused = [json.loads(x) for x in (work / "egress.jsonl").read_text().splitlines()]
    assert [d["port"] for d in refused if not d["allowed"]] == [closed]


def test_the_hosts_are_the_models_and_the_registries(tmp_path):
    def provider(model):
        return model.split("/")[0] if "/" in model else None

    hosts = egress.model_hosts(
        [("openai/gpt-4o-mini", None), ("x/m", "http://10.0.0.5:8000/v1"), ("anthropic/c", None)],
        provider,
    )
    assert hosts == {("api.openai.com", 443), ("10.0.0.5", 8000), ("api.anthropic.com", 443)}
    with pytest.raises(CadillacError, match="give its --api-base"):
        egress.model_hosts([("mystery/model", None)], provider)
    with pytest.raises(CadillacError, match="not an http"):
        egress.model_hosts([("openai/x", "ftp://example.com")], provider)

    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(
        "[global]\nindex-url = https://mirror.example/simple\n"
        "extra-index-url = http://pkgs.local:3141/root/dev\nfind-links = /opt/wheels\n"
    )
    (home / ".npmrc").write_text("registry=https://npm.example.org/\n")
    found = egress.registry_hosts({"PIP_EXTRA_INDEX_URL": "https://more.example/s"}, home)
    assert {("mirror.example", 443), ("pkgs.local", 3141), ("npm.example.org", 443)} <= found
    assert {("more.example", 443), ("pypi.org", 443), ("registry.npmjs.org", 443)} <= found
    assert all(host != "/opt/wheels" for host, _ in found)


def test_installs_get_the_proxy_and_a_models_commands_do_not(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("no_proxy", "localhost")
    assert command_env(package_config="pip")["HTTPS_PROXY"] == "http://127.0.0.1:3128"
    assert command_env(package_config="npm")["no_proxy"] == "localhost"
    assert "HTTPS_PROXY" not in command_env() and "no_proxy" not in command_env()


def test_the_relay_points_every_proxy_variable_at_itself(tmp_path):
    with FakeOpenAI(lambda body: "relayed") as server:
        port = port_of(server)
        with egress.EgressGate(tmp_path / "g", {("127.0.0.1", port)}) as gate:
            environ = {egress.SOCKET_ENV: str(gate.path)}
            egress.use_relay(environ)
            proxy = environ["HTTP_PROXY"]
            assert all(environ[name] == proxy for name in egress.PROXY_ENV)
            assert environ["NO_PROXY"] == ""
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
            body = completion_request(port, absolute=False).split(b"\r\n\r\n", 1)[1]
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/chat/completions", data=body, method="POST"
            )
            request.add_header("content-type", "application/json")
            with opener.open(request, timeout=10) as answer:
                assert b"relayed" in answer.read()
    assert egress.use_relay({}) is None  # no gate named: nothing started, nothing set


def test_a_trial_starts_the_relay_only_when_given_a_gate():
    from orchestrator.improve.trial import LAUNCHER

    assert f"os.environ.get('{egress.SOCKET_ENV}') and " in LAUNCHER


def test_a_flood_of_connections_is_capped_and_the_gate_recovers(tmp_path):
    """A trial that opens connection after connection and never speaks gets at most
    MAX_CONNECTIONS threads of cadillac's; the next one is told 503 at once, and once they
    close the gate serves again."""
    with FakeOpenAI(lambda body: "still here") as server:
        port = port_of(server)
        with egress.EgressGate(tmp_path / "g", {("127.0.0.1", port)}) as gate:
            idle = []
            for _ in range(egress.MAX_CONNECTIONS):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(gate.path))
                idle.append(sock)
            refused = ask(gate, b"")  # told before it says anything
            assert refused.startswith(b"HTTP/1.1 503") and b"too many connections" in refused
            for sock in idle:
                sock.close()
            for _ in range(100):  # the gate sees each close and frees its slot
                try:
                    answer = ask(gate, completion_request(port, absolute=True))
                except ConnectionResetError:  # refused while the request was on its way
                    answer = b"HTTP/1.1 503"
                if not answer.startswith(b"HTTP/1.1 503"):
                    break
                time.sleep(0.05)
            assert answer.startswith(b"HTTP/1.0 200") and b"still here" in answer


def test_the_gates_socket_fits_under_a_long_temporary_folder(tmp_path, monkeypatch, request):
    """A TMPDIR of 150 characters (CI runners, pytest-xdist) makes a socket path bind()
    refuses: the gate's folder goes to /tmp instead, and the gate serves as before."""
    long = tmp_path / ("t" * 60) / ("m" * 60)
    long.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(long))
    assert len(str(long / "cadillac-egress-12345678" / "gate.sock")) > egress.MAX_SOCKET_PATH
    folder = egress.socket_folder()
    try:
        assert len(str(folder / egress.SOCKET_NAME)) <= egress.MAX_SOCKET_PATH
        assert folder.parent == Path("/tmp") and folder.stat().st_mode & 0o077 == 0
        with FakeOpenAI(lambda body: "short") as server:
            port = port_of(server)
            with egress.EgressGate(folder, {("127.0.0.1", port)}) as gate:
                assert b"short" in ask(gate, completion_request(port, absolute=True))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    short = tmp_path / "s"  # pytest's own folders can be long already: a short TMPDIR
    while len(str(short / "cadillac-egress-12345678" / "gate.sock")) > egress.MAX_SOCKET_PATH:
        short = Path(tempfile.mkdtemp(prefix="s", dir="/tmp"))
        request.addfinalizer(lambda short=short: shutil.rmtree(short, ignore_errors=True))
    short.mkdir(exist_ok=True)
    monkeypatch.setattr("tempfile.tempdir", str(short))
    nearby = egress.socket_folder()
    assert nearby.parent == short  # a short TMPDIR is used as it is
