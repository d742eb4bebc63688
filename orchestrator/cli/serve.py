"""``cadillac serve``: the dashboard over the home (:mod:`orchestrator.serve`)."""

from __future__ import annotations

import argparse

from orchestrator.cli.args import UsageError, command, number
from orchestrator.home import Home


def add_parsers(commands) -> None:
    p = command(
        commands,
        "serve",
        "a local web dashboard over the home: runs, builds, matrices, cycles, nights, memory",
        run=serve,
    )
    p.add_argument(
        "--port",
        type=number(int, lambda n: 0 <= n <= 65535, "must be a port number, 0 to 65535"),
        default=8765,
        help="the port to listen on (default 8765; 0 takes a free one)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: reach it from another machine "
        "through an SSH tunnel; every request needs the printed token either way)",
    )


def serve(args: argparse.Namespace) -> int:
    from orchestrator.serve.config import ServeConfig
    from orchestrator.serve.server import serve as run

    if not args.host.strip():
        raise UsageError("--host is empty: give an address such as 127.0.0.1")
    home = Home.resolve(getattr(args, "home", None)).check()
    try:
        run(home, ServeConfig(host=args.host, port=args.port))
    except KeyboardInterrupt:
        print("cadillac serve: stopped")
    return 0
