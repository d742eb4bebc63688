"""``cadillac nightly`` and ``cadillac report``: the nightly improve run and its reports."""

from __future__ import annotations

import argparse
import webbrowser

from orchestrator.home import Home


def nightly(args: argparse.Namespace) -> int:
    from orchestrator.nightly import run_nightly

    home = Home.resolve(getattr(args, "home", None)).check(write=True)
    return run_nightly(home, args)


def report(args: argparse.Namespace) -> int:
    from orchestrator.report import rebuild_all

    home = Home.resolve(getattr(args, "home", None)).check()
    folders = rebuild_all(home)
    index = home.runs_dir / "index.html"
    for folder in folders:
        print(folder / "report.html")
    print(f"{len(folders)} nightly report(s); index: {index}")
    if args.open:
        webbrowser.open(index.as_uri())
    return 0


def schedule(args: argparse.Namespace) -> int:
    from orchestrator.schedule import handle

    args.nightly_args = [a for a in (args.nightly_args or []) if a != "--"]
    return handle(args)
