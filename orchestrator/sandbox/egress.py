"""What a sandbox may reach over the network: named hosts, through a gate outside it.

bubblewrap gives a sandbox either the host's whole network or none; it cannot filter by
host. An improve trial runs the improver's code (a model's) and, with a real provider,
must reach that provider, and its builds' dependency installs must reach the package
registries. So a trial gets no network at all, and one way out:

* outside the sandbox, in cadillac's own process, an **egress gate** (:class:`EgressGate`)
  listens on a Unix socket in a folder of its own, and speaks just enough HTTP proxy to
  open a connection to a host and port it was given (``CONNECT host:port`` for HTTPS; a
  plain ``http://`` request is sent on with its request line in origin form and
  ``Connection: close``), and to nothing else: a refusal is ``403`` and one line;
* it **checks what it forwards**, because one address often serves many names (a CDN's
  edge, a shared host) and the name the server acts on is the one inside the request: a
  plain request's ``Host`` must name the host and port it is sent to (else ``421``), and
  only its own body (``Content-Length`` bytes; ``Transfer-Encoding`` is refused) is sent
  on, so no second request rides behind it; a tunnel's first bytes must be a TLS
  ClientHello (read by :mod:`orchestrator.sandbox.tls_hello`) whose server name is the
  tunnel's host (none for an IP address) and which hides no other name (Encrypted
  ClientHello is refused), read *before* anything is connected or sent on; nothing after
  it goes up before the server's first answer is seen, and a second ClientHello (after a
  HelloRetryRequest) must name the same host; a refused tunnel gets TLS's
  ``unrecognized_name`` alert and the far host sees nothing (or, for a second hello,
  nothing of it);
* it **counts the bytes** it carries to and from each host (:meth:`EgressGate.traffic`),
  in cadillac's own process where the trial cannot change them: the spend books bound a
  trial's model use by them (:mod:`orchestrator.improve.spend`), and with a ``meter``
  the gate itself stops carrying traffic to the metered hosts once their bytes pass its
  cap (:attr:`EgressGate.cut` says why): a new connection to them is refused, and an
  open one may finish the request it is sending and get its answer, then what it sends
  next closes it; so an honest build's last call ends cleanly and the overrun is at most
  one request (CUT_GRACE bytes) and its answer per open connection;
* inside, before the trial's code is imported, a **relay** (:func:`start_relay`)
  listens on the sandbox's own loopback and carries each connection to the gate's socket,
  and ``HTTPS_PROXY``/``HTTP_PROXY`` name it, so litellm (httpx), pip, npm, cargo and go
  all go through it. The trial's code could replace the relay; it would still reach
  nothing but the gate.

Which hosts: each model endpoint's (its ``api_base``, else its provider's public API
host, :data:`PROVIDER_HOSTS`: a provider not named there needs ``--api-base``), and the
package registries builds install from (:func:`registry_hosts`: the public ones and
those pip's and npm's configuration name). Every decision is a line of the gate's log
(``egress.jsonl`` in the trial's folder): a refused host is what a hostile patch tried.
"""

from __future__ import annotations

import configparser
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from urllib.parse import urlsplit

from orchestrator.errors import CadillacError
from orchestrator.sandbox.files import append_file
from orchestrator.sandbox.tls_hello import (
    TLS_UNRECOGNIZED_NAME,
    hello_for,
    second_hello,
    server_first,
)

SOCKET_ENV = "CADILLAC_EGRESS_SOCKET"
"""Names the gate's socket inside a trial; the trial's launcher starts the relay on it."""
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
HEAD_CAP = 64 * 1024
CONNECT_TIMEOUT_S = 20.0
HEAD_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 64
"""Connections a gate carries at once; one more is refused with 503, so a trial that opens
thousands cannot make cadillac's own process start a thread for each."""

PROVIDER_HOSTS = {
    "openai": "api.openai.com",
    "text-completion-openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
    "mistral": "api.mistral.ai",
    "groq": "api.groq.com",
    "deepseek": "api.deepseek.com",
    "openrouter": "openrouter.ai",
    "together_ai": "api.together.xyz",
    "fireworks_ai": "api.fireworks.ai",
    "cohere": "api.cohere.ai",
    "cohere_chat": "api.cohere.ai",
    "xai": "api.x.ai",
    "perplexity": "api.perplexity.ai",
}
"""A provider's public API host, for a model given without ``--api-base``."""
REGISTRY_HOSTS = (
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "index.crates.io",
    "static.crates.io",
    "crates.io",
    "proxy.golang.org",
    "sum.golang.org",
)
"""The public registries cadillac's installs use by default (pip, npm, cargo, go)."""
PIP_CONFIG = (
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "~/.config/pip/pip.conf",
    "~/.pip/pip.conf",
)
NPM_CONFIG = ("/etc/npmrc", "/usr/etc/npmrc", "~/.npmrc")

Host = tuple[str, int]


def host_of(url: str) -> Host | None:
    """``(host, port)`` of an http(s) URL, the port by its scheme when not given."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


def model_hosts(endpoints: Iterable[tuple[str, str | None]], provider_of) -> set[Host]:
    """Where each ``(model, api_base)`` is reached; ``provider_of(model)`` names its
    provider. CadillacError for a model whose host cannot be told."""
    hosts: set[Host] = set()
    for model, api_base in endpoints:
        if api_base:
            found = host_of(api_base)
            if found is None:
                raise CadillacError(f"--api-base {api_base!r} is not an http(s) URL")
            hosts.add(found)
            continue
        name = PROVIDER_HOSTS.get(provider_of(model) or "")
        if name is None:
            raise CadillacError(
                f"cannot tell which host model {model} is served from, so an improve trial "
                "could not be let reach it: give its --api-base"
            )
        hosts.add((name, 443))
    return hosts


def registry_hosts(environ=None, home: Path | None = None) -> set[Host]:
    """The package registries builds may install from: the public ones, and the indexes
    pip's and npm's configuration (files and ``PIP_*``/``NPM_CONFIG_*``) names."""
    environ = os.environ if environ is None else environ
    home = Path(os.path.expanduser("~")) if home is None else home
    urls = [f"https://{name}/" for name in REGISTRY_HOSTS]
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "NPM_CONFIG_REGISTRY"):
        urls += environ.get(key, "").split()
    pip_files = [*PIP_CONFIG, environ.get("PIP_CONFIG_FILE", "")]
    for name in filter(None, pip_files):
        path = Path(name.replace("~", str(home), 1))
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeError):
            continue
        for section in parser.sections():
            for key in ("index-url", "extra-index-url", "find-links"):
                urls += parser.get(section, key, fallback="").split()
    for name in NPM_CONFIG:
        path = Path(name.replace("~", str(home), 1))
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeError):
            continue
        urls += [line.split("=", 1)[1] for line in lines if line.strip().startswith("registry=")]
    return {h for h in map(host_of, urls) if h is not None}


# ---------------------------------------------------------------------------- the gate
SOCKET_NAME = "gate.sock"
MAX_SOCKET_PATH = 107
"""The longest path a Unix socket may have on Linux (``sun_path`` holds 108 bytes)."""


def socket_folder() -> Path:
    """A new private folder for a gate's socket, whose path fits a Unix socket.

    In the temporary folder when its path is short enough, else in ``/tmp``: a TMPDIR of
    more than some 75 characters (a CI runner's, a test's) makes a path ``bind`` refuses.
    """
    for parent in dict.fromkeys([tempfile.gettempdir(), "/tmp"]):
        if (
            len(os.fsencode(Path(parent, "cadillac-egress-xxxxxxxx", SOCKET_NAME)))
            > MAX_SOCKET_PATH
        ):
            continue
        try:
            return Path(tempfile.mkdtemp(prefix="cadillac-egress-", dir=parent))
        except OSError:
            continue
    raise CadillacError(
        f"no folder for the egress gate's socket: TMPDIR ({tempfile.gettempdir()}) is too "
        f"long for a Unix socket and /tmp cannot be written; set a shorter TMPDIR"
    )


class EgressGate:
    """An HTTP proxy on a Unix socket that connects only to ``allowed`` (see the module
    docstring); a context manager. ``decisions`` and the ``log`` file say what was asked.

    ``meter``, when given, has ``hosts`` (those it meters) and ``over(up, down)``: why the
    bytes so far to and from them pass a cap ("" while they do not)."""

    def __init__(self, folder: Path, allowed: Iterable[Host], log: Path | None = None, meter=None):
        self.folder = Path(folder)
        self.path = self.folder / SOCKET_NAME
        self.allowed = {(h.lower(), int(p)) for h, p in allowed}
        self.log = log
        self.decisions: list[dict] = []
        self.log_refused = ""
        """Why a decision could not be logged (the log was made a link, a FIFO ...)."""
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._closing = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._bytes: dict[Host, list[int]] = {}
        self.meter = meter
        self.cut = ""
        """Why the gate stopped carrying traffic to the metered hosts ("" while it has not)."""

    def traffic(self) -> dict[Host, tuple[int, int]]:
        """Bytes sent to and received from each host so far: ``{(host, port): (up, down)}``,
        counted where the tunnel's or request's bytes cross the gate (TLS records, headers
        and all)."""
        with self._lock:
            return {host: (up, down) for host, (up, down) in self._bytes.items()}

    def _count(self, host: Host, up: int, down: int) -> None:
        """Count bytes carried; once the meter says the metered hosts passed its cap, the
        gate is ``cut`` (said once in the log)."""
        metered = self.meter is not None and host in self.meter.hosts
        with self._lock:
            counts = self._bytes.setdefault(host, [0, 0])
            counts[0] += up
            counts[1] += down
            if not metered or self.cut:
                return
            sums = [v for h, v in self._bytes.items() if h in self.meter.hosts]
            self.cut = self.meter.over(sum(v[0] for v in sums), sum(v[1] for v in sums))
        if self.cut:
            self._record(host[0], host[1], "cut", False, reason=self.cut)

    def _metered_and_cut(self, host: str, port: int) -> bool:
        return bool(self.cut) and (host.lower(), port) in self.meter.hosts

    def __enter__(self) -> EgressGate:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        os.chmod(self.path, 0o666)  # the sandbox's nobody connects to it
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, name="egress-gate", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        if self._server is not None:
            with suppress(OSError):
                self._server.shutdown(socket.SHUT_RDWR)
            self._server.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        assert self._server is not None
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self._slots.acquire(blocking=False):
                with suppress(OSError):
                    client.sendall(_answer(503, "egress gate: too many connections at once"))
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _allowed(self, host: str, port: int) -> bool:
        return (host.lower(), port) in self.allowed

    def _record(self, host: str, port: int, method: str, allowed: bool, **more) -> bool:
        """One decision: kept in ``decisions`` and appended to the log; returns ``allowed``."""
        record = {"ts": time.time(), "host": host, "port": port, "method": method}
        record.update(more)
        record["allowed"] = allowed
        with self._lock:
            self.decisions.append(record)
            if self.log is not None:  # in a folder the trial writes: never through a link
                try:
                    append_file(self.log, json.dumps(record) + "\n")
                except OSError as exc:
                    self.log_refused = self.log_refused or str(exc)
        return allowed

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(HEAD_TIMEOUT_S)
            head, rest = _read_head(client)
            line, _, fields = head.partition(b"\r\n")
            method, target, version = _request_line(line)
            if method == "CONNECT":
                host, _, port_text = target.rpartition(":")
                host, port = host.strip("[]"), _port(port_text)
                if not self._allowed(host, port):
                    self._record(host, port, method, False)
                    return _refuse(client, host, port)
                if self._metered_and_cut(host, port):
                    self._record(host, port, method, False, reason=self.cut)
                    return _refuse(client, host, port, self.cut)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                hello, pending, name, wrong = hello_for(client, rest, host)
                if wrong:
                    self._record(host, port, method, False, sni=name, reason=wrong)
                    with suppress(OSError):
                        client.sendall(TLS_UNRECOGNIZED_NAME)
                    return None
                self._record(host, port, method, True, sni=name)
                key = (host.lower(), port)
                upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
                upstream.sendall(hello)
                self._count(key, len(hello), 0)
                # nothing after the ClientHello goes up before the server's answer is
                # seen: after a HelloRetryRequest, the second ClientHello is checked too
                first, retry = server_first(upstream)
                client.sendall(first)
                self._count(key, 0, len(first))
                if retry:
                    hello, pending, again, wrong = second_hello(client, pending, host)
                    if wrong or again != name:
                        why = wrong or f"the second ClientHello names {again!r}, not {name!r}"
                        self._record(host, port, method, False, sni=again, reason=why)
                        with suppress(OSError):
                            client.sendall(TLS_UNRECOGNIZED_NAME)
                        return None
                    pending = hello + pending
                if pending:
                    upstream.sendall(pending)
                    self._count(key, len(pending), 0)
                body, answered = None, bool(first)
            else:
                found = host_of(target)
                if found is None or not target.startswith("http://"):
                    raise _BadRequest("only CONNECT and absolute http:// requests")
                host, port = found
                if not self._allowed(host, port):
                    self._record(host, port, method, False)
                    return _refuse(client, host, port)
                if self._metered_and_cut(host, port):
                    self._record(host, port, method, False, reason=self.cut)
                    return _refuse(client, host, port, self.cut)
                request, body = _forwarded(method, target, version, fields, host, port)
                if isinstance(request, _Misdirected):
                    self._record(host, port, method, False, reason=str(request))
                    with suppress(OSError):
                        client.sendall(_answer(421, f"egress gate: {request}"))
                    return None
                self._record(host, port, method, True)
                upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
                sent = request + rest[:body]
                upstream.sendall(sent)
                self._count((host, port), len(sent), 0)
                body -= len(rest[:body])
                answered = False
            client.settimeout(None)
            upstream.settimeout(None)
            key = (host.lower(), port)
            _splice(
                client,
                upstream,
                count=lambda up, down: self._count(key, up, down),
                up=body,
                halt=lambda: self._metered_and_cut(*key),
                answered=answered,
            )
        except _BadRequest as exc:
            with suppress(OSError):
                client.sendall(_answer(400, f"egress gate: {exc}"))
        except OSError as exc:
            with suppress(OSError):
                client.sendall(_answer(502, f"egress gate: {exc.strerror or exc}"))
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with suppress(OSError):
                        sock.close()
            self._slots.release()


class _BadRequest(Exception):
    pass


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise _BadRequest("the request ended before its headers did")
        data += chunk
        if len(data) > HEAD_CAP:
            raise _BadRequest("request headers over 64 KiB")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _request_line(line: bytes) -> tuple[str, str, str]:
    try:
        method, target, version = line.decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise _BadRequest("not an HTTP request line") from None
    return method.upper(), target, version


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise _BadRequest(f"bad port {text[:10]!r}")
    return int(text)


class _Misdirected(str):
    """Why a plain request names another host than the one it is sent to (``421``)."""


def _forwarded(
    method: str, target: str, version: str, fields: bytes, host: str, port: int
) -> tuple[bytes | _Misdirected, int]:
    """The request as the origin server takes it (its path, its own headers, one request)
    and how many body bytes follow it; a :class:`_Misdirected` when its ``Host`` names
    another host, _BadRequest when the gate cannot tell where it ends."""
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequest(f"not HTTP/1.x ({version[:16]!r})")
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept, names, length = [], [], 0
    for field in fields.split(b"\r\n"):
        if not field:
            continue
        name, colon, value = field.partition(b":")
        if not colon or not name or name != name.strip() or field[:1] in (b" ", b"\t"):
            raise _BadRequest("a header line that is not 'name: value'")
        lower, value = name.lower(), value.strip()
        if lower.startswith((b"proxy-", b"connection", b"keep-alive")):
            continue
        if lower == b"transfer-encoding":
            raise _BadRequest("a request body without Content-Length is not carried")
        if lower == b"content-length":
            if b"content-length" in names or not value.isdigit():
                raise _BadRequest("one Content-Length, a number, is needed")
            length = int(value)
        if lower == b"host":
            if b"host" in names:
                raise _BadRequest("more than one Host header")
            if not _names_target(value, host, port):
                shown = value.decode("ascii", "replace")[:80]
                return _Misdirected(f"Host {shown!r} is not {host}:{port}, where it is sent"), 0
        names.append(lower)
        kept.append(field)
    if b"host" not in names:
        kept.insert(0, f"Host: {_authority(host, port)}".encode("ascii"))
    lines = [f"{method} {path} {version}".encode("ascii"), *kept, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n", length


def _authority(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == 80 else f"{shown}:{port}"


def _names_target(value: bytes, host: str, port: int) -> bool:
    """Whether a Host header's value names ``host:port`` (the port may be left out for 80)."""
    try:
        text = value.decode("ascii").lower()
    except UnicodeDecodeError:
        return False
    return text in {_authority(host, port), f"{_authority(host, 80)}:{port}"}


def _refuse(client: socket.socket, host: str, port: int, why: str = "") -> None:
    text = f"{host}:{port}: {why}" if why else f"{host}:{port} is not an allowed host"
    with suppress(OSError):
        client.sendall(_answer(403, f"egress gate: {text}"))


def _answer(status: int, text: str) -> bytes:
    reason = {
        400: "Bad Request",
        403: "Forbidden",
        421: "Misdirected Request",
        502: "Bad Gateway",
        503: "Busy",
    }[status]
    body = (text + "\n").encode("utf-8", "replace")
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode("ascii") + body


CUT_GRACE = 256 * 1024
"""Bytes a connection may still send up once its gate is cut, to finish the request it is
sending: it gets the answer, and the next bytes it sends after that end it."""


class _Brake:
    """One connection's way up once the gate is cut: the request in flight (at most
    CUT_GRACE bytes more) may finish and be answered; the first bytes up after the answer
    began end the connection."""

    def __init__(self, halted, answered: bool = False):
        self.halted = halted
        self.down, self.down_at_cut, self.grace = 0, None, CUT_GRACE
        if answered and halted():  # cut while the server was answering: that was the last
            self.down_at_cut = -1

    def came_down(self, n: int) -> None:
        if self.down_at_cut is None and self.halted():
            self.down_at_cut = self.down
        self.down += n

    def may_go_up(self, n: int) -> bool:
        if not self.halted():
            return True
        if self.down_at_cut is None:
            self.down_at_cut = self.down
        self.grace -= n
        return self.grace >= 0 and self.down == self.down_at_cut


def _splice(
    a: socket.socket,
    b: socket.socket,
    count=None,
    up: int | None = None,
    halt=None,
    answered: bool = False,
) -> None:
    """Copy bytes both ways until both directions have ended. ``count(up, down)`` is told
    of each chunk carried from ``a`` to ``b`` (up) and back; with ``up``, at most that many
    more bytes go from ``a`` to ``b`` and the rest ``a`` sends is dropped; once ``halt()``
    is true, ``a`` may finish the request it is sending and get its answer (:class:`_Brake`),
    and what it sends after that ends both ways (at once when the gate was cut while ``b``
    was ``answered`` before the splice)."""
    tell = count or (lambda up, down: None)
    brake = _Brake(halt or (lambda: False), answered)

    def pump(src: socket.socket, dst: socket.socket, forward: bool, left: int | None) -> None:
        try:
            while chunk := src.recv(65536):
                if left is not None:
                    chunk, left = chunk[:left], left - len(chunk[:left])
                if forward and not brake.may_go_up(len(chunk)):  # both ways end now
                    for sock in (a, b):
                        with suppress(OSError):
                            sock.shutdown(socket.SHUT_RDWR)
                    return
                if chunk:
                    dst.sendall(chunk)
                    tell(*((len(chunk), 0) if forward else (0, len(chunk))))
                if not forward:  # after tell: an answer that makes the cut is one after it
                    brake.came_down(len(chunk))
        except OSError:
            pass
        with suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=pump, args=(b, a, False, None), daemon=True)
    other.start()
    pump(a, b, True, up)
    other.join()


# ---------------------------------------------------------------------------- the relay
def start_relay(gate: str) -> int:
    """Inside a sandbox: listen on loopback and carry each connection to the gate's Unix
    socket; returns the port. Runs in daemon threads of the calling process."""
    server = socket.create_server(("127.0.0.1", 0))

    def carry(client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(gate)
            _splice(client, upstream)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def accept() -> None:
        while True:
            client, _ = server.accept()
            threading.Thread(target=carry, args=(client,), daemon=True).start()

    threading.Thread(target=accept, name="egress-relay", daemon=True).start()
    return server.getsockname()[1]


def use_relay(environ=os.environ) -> None:
    """When the gate's socket is named (:data:`SOCKET_ENV`), start the relay and point every
    proxy variable at it, so what this process and its children fetch goes through it."""
    gate = environ.get(SOCKET_ENV)
    if not gate:
        return
    url = f"http://127.0.0.1:{start_relay(gate)}"
    for name in PROXY_ENV:
        environ[name] = url
    environ["NO_PROXY"] = environ["no_proxy"] = ""
