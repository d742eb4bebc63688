"""The egress gate checks what it forwards: the name inside a request is the host it is
sent to. A plain request's ``Host`` and a tunnel's TLS server name (SNI) are what a shared
edge (a CDN, a virtual host) acts on, so a trial allowed one host could otherwise reach
every other site served from the same address."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from contextlib import suppress

import pytest

from orchestrator.sandbox import egress, tls_hello
from tests.fakes.openai_server import FakeOpenAI
from tests.orchestrator.sandbox.test_egress import ask, completion_request, port_of


def client_hello(name: str | None) -> bytes:
    """The bytes of a real TLS ClientHello for ``name`` (none for an IP address or None),
    from Python's own TLS stack, without a network."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def with_extension(hello: bytes, kind: int, data: bytes) -> bytes:
    """``hello`` with one more extension at the end, its lengths made right."""
    body = bytearray(hello[9:])
    at = 2 + 32
    at += 1 + body[at]
    at += 2 + int.from_bytes(body[at : at + 2], "big")
    at += 1 + body[at]
    size = int.from_bytes(body[at : at + 2], "big")
    body[at : at + 2] = (size + 4 + len(data)).to_bytes(2, "big")
    body += kind.to_bytes(2, "big") + len(data).to_bytes(2, "big") + data
    handshake = b"\x01" + len(body).to_bytes(3, "big") + bytes(body)
    return hello[:3] + len(handshake).to_bytes(2, "big") + handshake


class Listener:
    """A TCP listener on 127.0.0.1 standing for an allowed host: keeps what each
    connection sent it until it ended or ``quiet_s`` passed without a byte."""

    def __init__(self, quiet_s: float = 5.0):
        self.quiet_s = quiet_s
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.settimeout(self.quiet_s)
            data = b""
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            self.received.append(data)
            conn.close()

    def close(self):
        self.server.close()


def tunnel(gate: egress.EgressGate, target: str, data: bytes) -> bytes:
    """CONNECT ``target``, send ``data`` once the tunnel is up, and all that comes back."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(gate.path))
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        answer = sock.recv(len(b"HTTP/1.1 200 Connection established\r\n\r\n"))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_plain_request_naming_another_host_is_refused_and_reaches_nothing(tmp_path):
    """A trial asks the allowed plain-HTTP host for ``Host: other.example``: refused with
    421, and the allowed host (standing for a shared edge) never sees the request."""
    with FakeOpenAI(lambda body: "answered") as server:
        port = port_of(server)
        allowed = {("127.0.0.1", port)}
        with egress.EgressGate(tmp_path / "g", allowed, log=tmp_path / "egress.jsonl") as gate:
            request = completion_request(port, absolute=True)
            other = ask(
                gate, request.replace(f"Host: 127.0.0.1:{port}".encode(), b"Host: other.example")
            )
            twice = ask(gate, request.replace(b"\r\n\r\n", b"\r\nHost: other.example\r\n\r\n", 1))
            folded = ask(
                gate, request.replace(b"\r\ncontent-type", b"\r\n other.example\r\ncontent-type")
            )
            chunked = ask(
                gate, request.replace(b"content-length", b"transfer-encoding: chunked\r\nx")
            )
            bare = ask(gate, request.replace(f"Host: 127.0.0.1:{port}\r\n".encode(), b""))
            assert len(server.requests) == 1  # only the one without a Host got through
            assert server.headers[0]["Host"] == f"127.0.0.1:{port}"  # the gate named it
    assert other.startswith(b"HTTP/1.1 421") and b"'other.example' is not 127.0.0.1" in other
    assert twice.startswith(b"HTTP/1.1 400") and b"more than one Host" in twice
    assert folded.startswith(b"HTTP/1.1 400") and chunked.startswith(b"HTTP/1.1 400")
    assert bare.startswith(b"HTTP/1.0 200") and b"answered" in bare
    logged = [json.loads(x) for x in (tmp_path / "egress.jsonl").read_text().splitlines()]
    assert logged[0]["allowed"] is False and "other.example" in logged[0]["reason"]


def test_a_second_request_behind_the_body_never_reaches_the_host(tmp_path):
    """What follows a request's ``Content-Length`` bytes (a second request, for another
    site of the same edge) is dropped: the allowed host reads exactly one request."""
    listener = Listener(quiet_s=0.5)  # the client waits for an answer: it never closes
    try:
        allowed = {("127.0.0.1", listener.port)}
        with egress.EgressGate(tmp_path / "g", allowed) as gate:
            smuggled = b"GET /secret HTTP/1.1\r\nHost: other.example\r\n\r\n"
            request = f"POST http://127.0.0.1:{listener.port}/v1 HTTP/1.1\r\n"
            request += f"Host: 127.0.0.1:{listener.port}\r\ncontent-length: 5\r\n\r\nhello"
            ask(gate, request.encode() + smuggled)
    finally:
        listener.close()
    (got,) = listener.received
    assert got.endswith(b"\r\nConnection: close\r\n\r\nhello"), got
    assert b"other.example" not in got and b"/secret" not in got


def test_a_tunnel_whose_client_hello_names_another_host_is_refused(tmp_path):
    """CONNECT to the allowed host with a ClientHello for ``other.example``: the gate
    reads the hello before it connects anywhere, answers TLS's unrecognized_name alert,
    and the allowed host receives nothing; the right name goes through byte for byte."""
    listener = Listener(quiet_s=0.3)  # it never answers: the gate waits for its first bytes
    try:
        allowed = {("localhost", listener.port), ("127.0.0.1", listener.port)}
        log = tmp_path / "egress.jsonl"
        with egress.EgressGate(tmp_path / "g", allowed, log=log) as gate:
            wrong = tunnel(gate, f"localhost:{listener.port}", client_hello("other.example"))
            nameless = tunnel(gate, f"localhost:{listener.port}", client_hello(None))
            to_ip = tunnel(gate, f"127.0.0.1:{listener.port}", client_hello("other.example"))
            plain = tunnel(gate, f"localhost:{listener.port}", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert listener.received == []
            right = client_hello("LocalHost")
            tunnel(gate, f"localhost:{listener.port}", right)
            ip_hello = client_hello("127.0.0.1")  # an IP address gets no server name
            tunnel(gate, f"127.0.0.1:{listener.port}", ip_hello)
            traffic = gate.traffic()
    finally:
        listener.close()
    for refused in (wrong, nameless, to_ip, plain):
        assert (
            refused == b"HTTP/1.1 200 Connection established\r\n\r\n" + egress.TLS_UNRECOGNIZED_NAME
        )
    assert listener.received == [right, ip_hello]  # a refused tunnel connected nowhere
    assert traffic[("localhost", listener.port)] == (len(right), 0)
    decisions = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(d["allowed"], d.get("sni")) for d in decisions] == [
        (False, "other.example"),
        (False, None),
        (False, "other.example"),
        (False, None),
        (True, "localhost"),
        (True, None),
    ]
    assert "names 'other.example', not localhost" in decisions[0]["reason"]
    assert decisions[3]["reason"].startswith("not TLS")


def test_the_client_hello_parser_reads_one_name_and_refuses_hidden_ones():
    hello = client_hello("api.example.com")
    assert tls_hello.client_hello_name(hello) == "api.example.com"
    assert tls_hello.client_hello_name(client_hello(None)) is None
    # the handshake split over two records, as a large ClientHello may be
    handshake = hello[5:]
    split = b"".join(
        b"\x16\x03\x01" + len(part).to_bytes(2, "big") + part
        for part in (handshake[:100], handshake[100:])
    )
    assert tls_hello.client_hello_name(split) == "api.example.com"
    with pytest.raises(tls_hello.Incomplete):
        tls_hello.client_hello_name(split[:-1])
    ech = with_extension(hello, 0xFE0D, b"\x00" * 40)
    with pytest.raises(tls_hello.NotHello, match="Encrypted ClientHello"):
        tls_hello.client_hello_name(ech)
    two = b"\x00\x0b\x00\x09other.com"
    with pytest.raises(tls_hello.NotHello, match="twice"):
        tls_hello.client_hello_name(with_extension(hello, 0, len(two).to_bytes(2, "big") + two))
    with pytest.raises(tls_hello.NotHello, match="no TLS"):
        tls_hello.client_hello_name(b"GET / HTTP/1.1\r\n")


def test_the_gate_counts_the_bytes_each_way_per_host(tmp_path):
    with FakeOpenAI(lambda body: "counted") as server:
        port = port_of(server)
        with egress.EgressGate(tmp_path / "g", {("127.0.0.1", port)}) as gate:
            answer = ask(gate, completion_request(port, absolute=True))
            ask(gate, completion_request(port + 1, absolute=True))  # refused: no bytes
            traffic = gate.traffic()
    up, down = traffic[("127.0.0.1", port)]
    assert down == len(answer) and up > len(completion_request(port, absolute=True)) // 2
    assert ("127.0.0.1", port + 1) not in traffic


class Meter:
    """Cuts once more than ``limit`` bytes have gone either way to ``hosts``."""

    def __init__(self, hosts, limit):
        self.hosts, self.limit = hosts, limit

    def over(self, up, down):
        return "over the test's cap" if up + down > self.limit else ""


def test_a_cut_gate_lets_the_request_in_flight_be_answered_then_ends_the_tunnel(tmp_path):
    """Once the meter cuts, an open tunnel (a kept-alive connection to the model) gets
    the answer to what it sent, and the next bytes it sends close it unsent; a new
    tunnel is refused with the reason."""
    upstream = socket.create_server(("127.0.0.1", 0))
    port = upstream.getsockname()[1]
    got = []

    def serve():
        conn, _ = upstream.accept()
        with conn:
            got.append(conn.recv(65536))  # the hello
            conn.sendall(b"A" * 3000)  # its answer passes the cap
            conn.settimeout(2)
            try:
                got.append(conn.recv(65536))  # what follows the cut: nothing
            except OSError:
                got.append(b"timeout")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    hello = client_hello("localhost")
    meter = Meter({("localhost", port)}, len(hello) + 1000)
    with egress.EgressGate(tmp_path / "g", {("localhost", port)}, meter=meter) as gate:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(gate.path))
            sock.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            assert sock.recv(39).startswith(b"HTTP/1.1 200")
            sock.sendall(hello)
            answer = b""
            while len(answer) < 3000:
                answer += sock.recv(65536)
            for _ in range(200):  # the gate counts a chunk just after it sent it on
                if gate.cut:
                    break
                time.sleep(0.01)
            assert gate.cut == "over the test's cap"
            sock.sendall(b"\x17\x03\x03\x00\x05next!")  # the next request: the tunnel ends
            assert sock.recv(65536) == b""
        refused = ask(gate, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    server.join(10)  # the upstream side hears the tunnel end on its own time
    upstream.close()
    assert answer == b"A" * 3000 and got == [hello, b""]
    assert refused.startswith(b"HTTP/1.1 403") and b"over the test's cap" in refused


HELLO_RETRY = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
"""RFC 8446, 4.1.3: the random of a HelloRetryRequest (SHA-256 of "HelloRetryRequest")."""


def server_hello(retry: bool) -> bytes:
    """The start of a TLS ServerHello: a HelloRetryRequest when ``retry``."""
    random = HELLO_RETRY if retry else bytes(range(32))
    body = b"\x03\x03" + random + b"\x00\x13\x01\x00"
    handshake = b"\x02" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + len(handshake).to_bytes(2, "big") + handshake


CCS = b"\x14\x03\x03\x00\x01\x01"


@pytest.mark.parametrize("early", [False, True], ids=["in-turn", "sent-ahead"])
def test_a_second_client_hello_after_a_retry_must_name_the_same_host(tmp_path, early):
    """A server's HelloRetryRequest makes the client send a second ClientHello: one that
    names another host is refused like a first one, whether sent in turn or ahead with
    the first (the gate sends nothing past the first ClientHello before the server has
    answered); the same name goes through."""
    upstream = socket.create_server(("127.0.0.1", 0))
    port = upstream.getsockname()[1]
    seen: list[bytes] = []
    first, wrong, right = (client_hello(n) for n in ("localhost", "other.example", "localhost"))

    def serve():
        for _ in range(2):
            conn, _ = upstream.accept()
            with conn:
                conn.settimeout(2)
                seen.append(conn.recv(65536))
                conn.sendall(server_hello(retry=True))
                got = b""
                try:
                    while chunk := conn.recv(65536):
                        got += chunk
                except OSError:
                    pass
                seen.append(got)

    threading.Thread(target=serve, daemon=True).start()

    def retried(second: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(gate.path))
            sock.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
            answer = sock.recv(39)
            sock.sendall(first + (CCS + second if early else b""))
            answer += sock.recv(len(server_hello(True)))
            if not early:
                sock.sendall(CCS + second)
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                answer += chunk
        return answer

    with egress.EgressGate(tmp_path / "g", {("localhost", port)}) as gate:
        refused = retried(wrong)
        passed = retried(right)
    upstream.close()
    assert refused.endswith(server_hello(True) + egress.TLS_UNRECOGNIZED_NAME)
    assert seen == [first, b"", first, CCS + right]  # nothing of the wrong one went up
    assert not passed.endswith(egress.TLS_UNRECOGNIZED_NAME)
    (refusal,) = [d for d in gate.decisions if not d["allowed"]]
    assert refusal["sni"] == "other.example" and "after a HelloRetryRequest" in refusal["reason"]


def test_a_real_tls_client_completes_its_handshake_through_the_gate(tmp_path):
    """Python's TLS client, through the gate to a TLS server on 127.0.0.1 known as
    ``localhost``: the handshake the gate read into completes and the answer comes back,
    the counts include it; the same client naming another host gets the gate's alert."""
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        with suppress(OSError):
            conn, _ = listener.accept()
            with server_side.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"hello over TLS: " + tls.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    client_side = ssl.create_default_context(cafile=str(cert))

    def through(name: str) -> bytes:
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.settimeout(10)
        raw.connect(str(gate.path))
        raw.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
        assert raw.recv(39).startswith(b"HTTP/1.1 200")
        with client_side.wrap_socket(raw, server_hostname=name) as tls:
            tls.sendall(b"ping")
            return tls.recv(100)

    with egress.EgressGate(tmp_path / "g", {("localhost", port)}) as gate:
        with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
            through("other.example")
        assert through("localhost") == b"hello over TLS: ping"
        up, down = gate.traffic()[("localhost", port)]
    listener.close()
    assert up > 200 and down > 500  # the handshake and the records, both ways
