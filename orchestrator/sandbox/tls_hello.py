"""The first bytes of a TLS connection, read by the egress gate before it forwards them.

The server name a TLS client asks for (SNI, in its ClientHello) is what a shared edge (a
CDN, a virtual host) routes on, so the gate must read it to know where a tunnel really
goes: :func:`hello_for` reads a tunnel's ClientHello from the client and says why it is
refused, :func:`server_first` reads the server's first answer and tells a
HelloRetryRequest, after which :func:`second_hello` reads and checks the client's second
ClientHello. The parser reads the record layer (a ClientHello may span records) and the
extensions; more than one name, a name of another type, and extensions that hide the
name (Encrypted ClientHello, the older encrypted SNI) are refused.
"""

from __future__ import annotations

import ipaddress
import socket

TLS_UNRECOGNIZED_NAME = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70])
"""A fatal TLS alert, ``unrecognized_name``: what a tunnel to the wrong name is told."""
HELLO_CAP = 64 * 1024
HIDDEN_NAMES = {0xFE0D: "Encrypted ClientHello", 0xFFCE: "encrypted SNI"}
"""ClientHello extensions that carry another server name the gate cannot read."""


class NotHello(Exception):
    pass


def hello_for(
    client: socket.socket, data: bytes, host: str
) -> tuple[bytes, bytes, str | None, str]:
    """Read a tunnel's ClientHello (``data`` is what came with the CONNECT): its bytes,
    the bytes read after it, the server name it gives, and why it is refused ("" when it
    is not)."""
    name: str | None = None
    while True:
        try:
            name, end = _parse_hello(data)
            break
        except Incomplete:
            if len(data) > HELLO_CAP:
                return data, b"", None, "a ClientHello over 64 KiB"
            try:
                chunk = client.recv(16384)
            except OSError:
                chunk = b""
            if not chunk:
                return data, b"", None, "the tunnel ended before its TLS ClientHello did"
            data += chunk
        except NotHello as exc:
            return data, b"", None, f"not TLS: {exc}"
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = False
    hello, rest = data[:end], data[end:]
    if name is None and not literal:
        return hello, rest, None, f"the ClientHello names no server; it must name {host}"
    if name is not None and name != host.lower().rstrip("."):
        return hello, rest, name, f"the ClientHello names {name!r}, not {host}"
    return hello, rest, name, ""


HELLO_RETRY = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
"""The ``random`` of a TLS 1.3 HelloRetryRequest: the server asks for a second ClientHello."""


def server_first(upstream: socket.socket) -> tuple[bytes, bool]:
    """The server's first bytes (at least the start of its ServerHello) and whether they
    are a HelloRetryRequest, after which the client sends a second ClientHello."""
    data = b""
    while len(data) < 5 + 4 + 2 + 32:
        chunk = upstream.recv(16384)
        if not chunk:
            break
        data += chunk
    retry = data[:1] == b"\x16" and data[5:6] == b"\x02" and data[11:43] == HELLO_RETRY
    return data, retry


def second_hello(
    client: socket.socket, data: bytes, host: str
) -> tuple[bytes, bytes, str | None, str]:
    """The client's answer to a HelloRetryRequest: its change_cipher_spec records, if any,
    then a second ClientHello, checked like the first (:func:`hello_for`)."""
    prefix = b""
    while True:
        while len(data) < 5 or (data[:1] == b"\x14" and len(data) < 5 + _size(data)):
            chunk = client.recv(16384)
            if not chunk or len(prefix) + len(data) > HELLO_CAP:
                return prefix + data, b"", None, "the tunnel ended before its second ClientHello"
            data += chunk
        if data[:1] != b"\x14":
            break
        prefix, data = prefix + data[: 5 + _size(data)], data[5 + _size(data) :]
    hello, rest, name, wrong = hello_for(client, data, host)
    return prefix + hello, rest, name, wrong and f"after a HelloRetryRequest, {wrong}"


def _size(record: bytes) -> int:
    return int.from_bytes(record[3:5], "big")


class Incomplete(Exception):
    pass


def client_hello_name(data: bytes) -> str | None:
    """The server name (SNI) of the TLS ClientHello at the start of ``data``, lower case,
    or None when it names none. Incomplete when more bytes are needed; NotHello when
    the bytes are no ClientHello, give more than one name, or hide one (ECH)."""
    return _parse_hello(data)[0]


def _parse_hello(data: bytes) -> tuple[str | None, int]:
    """:func:`client_hello_name`, and where the records holding the ClientHello end."""
    handshake = b""
    at = 0
    while len(handshake) < 4 or len(handshake) < 4 + int.from_bytes(handshake[1:4], "big"):
        if len(data) > at and data[at] != 0x16:
            raise NotHello("the first bytes are no TLS handshake record")
        if len(data) < at + 5:
            raise Incomplete
        kind, major, size = data[at], data[at + 1], int.from_bytes(data[at + 3 : at + 5], "big")
        if kind != 0x16 or major != 3 or not 0 < size <= 16384 + 2048:
            raise NotHello("the first bytes are no TLS handshake record")
        if len(data) < at + 5 + size:
            raise Incomplete
        handshake += data[at + 5 : at + 5 + size]
        at += 5 + size
        if handshake[:1] != b"\x01":
            raise NotHello("the first handshake message is no ClientHello")
        if len(handshake) >= 4 and int.from_bytes(handshake[1:4], "big") > HELLO_CAP:
            raise NotHello("a ClientHello over 64 KiB")
    if len(handshake) != 4 + int.from_bytes(handshake[1:4], "big"):
        raise NotHello("another handshake message shares the ClientHello's record")
    body = _Reader(handshake[4:])
    body.take(2 + 32)  # version, random
    body.take(body.number(1))  # session id
    body.take(body.number(2))  # cipher suites
    body.take(body.number(1))  # compression methods
    if body.left() == 0:
        return None, at  # no extensions at all
    extensions = _Reader(body.take(body.number(2)))
    seen: set[int] = set()
    name = None
    while extensions.left():
        kind, data_ = extensions.number(2), extensions.take(extensions.number(2))
        if kind in seen:
            raise NotHello(f"extension {kind} twice")
        seen.add(kind)
        if kind in HIDDEN_NAMES:
            raise NotHello(f"{HIDDEN_NAMES[kind]} hides the server's name")
        if kind == 0:
            name = _server_name(_Reader(data_))
    return name, at


def _server_name(ext: _Reader) -> str:
    names = _Reader(ext.take(ext.number(2)))
    found = []
    while names.left():
        kind, value = names.number(1), names.take(names.number(2))
        if kind != 0:
            raise NotHello(f"a server name of type {kind}")
        try:
            found.append(value.decode("ascii").lower().rstrip("."))
        except UnicodeDecodeError:
            raise NotHello("a server name that is not ASCII") from None
    if len(found) != 1 or not found[0]:
        raise NotHello("the server_name extension must hold exactly one name")
    return found[0]


class _Reader:
    """Reads a TLS structure front to back; NotHello when it ends early."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def left(self) -> int:
        return len(self.data) - self.at

    def take(self, n: int) -> bytes:
        if n > self.left():
            raise NotHello("a ClientHello cut short")
        self.at += n
        return self.data[self.at - n : self.at]

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")
