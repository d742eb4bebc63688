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
    docstring); a context manager. ``decisions`` and the ``log`` file say what was asked."""

    def __init__(self, folder: Path, allowed: Iterable[Host], log: Path | None = None):
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

    def _decide(self, host: str, port: int, method: str) -> bool:
        allowed = (host.lower(), port) in self.allowed
        record = {"ts": time.time(), "host": host, "port": port, "method": method}
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
                if not self._decide(host, port, method):
                    return _refuse(client, host, port)
                upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                found = host_of(target)
                if found is None or not target.startswith("http://"):
                    raise _BadRequest("only CONNECT and absolute http:// requests")
                host, port = found
                if not self._decide(host, port, method):
                    return _refuse(client, host, port)
                upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
                upstream.sendall(_origin_form(method, target, version, fields) + rest)
            client.settimeout(None)
            upstream.settimeout(None)
            _splice(client, upstream)
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


def _origin_form(method: str, target: str, version: str, fields: bytes) -> bytes:
    """The request as the origin server takes it: its path, its own headers, one request."""
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [
        f
        for f in fields.split(b"\r\n")
        if f and not f.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))
    ]
    lines = [f"{method} {path} {version}".encode("ascii"), *kept, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _refuse(client: socket.socket, host: str, port: int) -> None:
    with suppress(OSError):
        client.sendall(_answer(403, f"egress gate: {host}:{port} is not an allowed host"))


def _answer(status: int, text: str) -> bytes:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Busy"}[status]
    body = (text + "\n").encode("utf-8", "replace")
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode("ascii") + body


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both directions have ended."""

    def pump(src: socket.socket, dst: socket.socket) -> None:
        with suppress(OSError):
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        with suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
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
