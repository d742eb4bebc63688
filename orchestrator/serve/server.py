"""Run the dashboard: bind the socket, print the URL with its token, serve until Ctrl-C.

The socket is bound before uvicorn starts, so the printed URL names the port really taken
(``--port 0`` takes a free one) and a port in use is one error line, not a traceback from
inside the server. uvicorn's own logs stay at warning level: the terminal shows the URL and
whatever goes wrong, not a line per request. The memory is read once in a thread as the
server starts, so the memory page's first visit does not wait for a large memory to load.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.serve.config import ServeConfig


def bind(config: ServeConfig) -> socket.socket:
    """A listening socket on the configured address; CadillacError saying why not."""
    try:
        infos = socket.getaddrinfo(config.host, config.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise CadillacError(f"cannot serve on {config.host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CadillacError(
                f"port {config.port} on {config.host} is in use: give another with --port "
                "(0 takes a free one)"
            ) from None
        raise CadillacError(
            f"cannot serve on {config.host}:{config.port}: {exc.strerror}"
        ) from None
    sock.set_inheritable(True)
    return sock


def url_of(config: ServeConfig, port: int) -> str:
    host = f"[{config.host}]" if ":" in config.host else config.host
    return f"http://{host}:{port}/?token={config.token}"


def serve(home: Home, config: ServeConfig, said: Callable[[str], None] = print) -> None:
    """Serve ``home`` until interrupted."""
    import uvicorn

    from orchestrator.serve.app import make_app
    from orchestrator.serve.memory_reader import warm

    sock = bind(config)
    port = sock.getsockname()[1]
    app = make_app(home, config, port=port)
    threading.Thread(target=warm, args=(app.app.state,), daemon=True, name="warm").start()
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    )
    said(f"cadillac serve: {home.root} at {url_of(config, port)}")
    said("open that URL (it carries the access token); Ctrl-C stops the server")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
