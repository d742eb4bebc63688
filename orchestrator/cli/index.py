"""``cadillac index``: the code index of a tree, for people as for the model's tool.

``cadillac index PATH`` indexes a tree (incrementally; ``--full`` rebuilds);
``cadillac index search QUERY`` and ``cadillac index show SYMBOL`` answer from the index
of ``--path`` (the current folder by default), refreshing it first as the ``knowledge``
tool does. What is decided here: the index of a user's tree lives in the cadillac home,
``index/<folder name>-<hash of its path>/``, never inside the tree (a home inside the tree,
as the current folder is by default, is refused, as ``enhance`` does); the history of
changes is read from git only for a tree that is a repository's top and not inside the
home's runs (a user's own, never a model's workspace, whose git configuration the model
could have written).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from orchestrator.cli import output
from orchestrator.cli.args import command, positive
from orchestrator.cli.config import utf8
from orchestrator.errors import CadillacError
from orchestrator.home import Home

ACTIONS = ("search", "show")


def add_parsers(commands) -> None:
    p = command(
        commands,
        "index",
        "the code index of a tree: index PATH, index search QUERY, index show SYMBOL",
        run=index_command,
    )
    p.add_argument("target", metavar="PATH|search|show", help="a tree to index, or an action")
    p.add_argument("query", nargs="?", metavar="QUERY", help="search: the words; show: a name")
    p.add_argument("--path", metavar="PATH", help="the tree to search (default: here)")
    p.add_argument("--full", action="store_true", help="rebuild instead of reusing what holds")
    p.add_argument("--limit", type=positive, default=10, metavar="N", help="search results")
    p.add_argument("--json", action="store_true", help="print JSON")


def index_folder(home: Home, tree: Path) -> Path:
    """Where the index of ``tree`` lives in the home."""
    key = hashlib.blake2b(str(tree).encode("utf-8", "surrogateescape"), digest_size=4)
    return home.root / "index" / f"{tree.name or 'root'}-{key.hexdigest()}"


def _tree(text: str | None, what: str) -> Path:
    path = Path(utf8(text, what) if text else ".").expanduser()
    if not path.is_dir():
        raise CadillacError(f"{path} is not a folder: give the tree to index")
    return path.resolve()


def _refresh(home: Home, tree: Path, full: bool = False, progress=None):
    from orchestrator.index import IndexConfig, build_index
    from orchestrator.loop.source import repository_of

    folder = index_folder(home, tree)
    if folder.resolve().is_relative_to(tree):
        raise CadillacError(
            f"the cadillac home {home.root} is inside {tree}, so the index would be written "
            "into the tree: give --home (or CADILLAC_HOME) a folder outside it"
        )
    home.check(write=True)
    made_here = tree.is_relative_to(home.runs_dir.resolve())  # a build's workspace: a model's
    history = tree if not made_here and repository_of(tree) is not None else None
    return build_index(
        tree,
        folder,
        full=full,
        config=IndexConfig(history=history),
        progress=progress,
    )


def index_command(args: argparse.Namespace) -> int:
    home = Home.resolve(getattr(args, "home", None))
    if args.target not in ACTIONS:
        if args.query is not None:
            raise CadillacError(
                f"unexpected {args.query!r}: 'cadillac index PATH' takes one folder "
                "(to search, 'cadillac index search QUERY --path PATH')"
            )
        return _index(home, _tree(args.target, "PATH"), args)
    query = utf8(args.query or "", "the query").strip()
    if not query:
        noun = "words to search for" if args.target == "search" else "a symbol name"
        raise CadillacError(f"index {args.target} needs {noun}")
    tree = _tree(args.path, "--path")
    _refresh(home, tree)
    from orchestrator.index import CodeIndex

    idx = CodeIndex.load(index_folder(home, tree))
    if args.target == "search":
        return _search(idx, query, args)
    return _show(idx, query, args, tree)


def _index(home: Home, tree: Path, args: argparse.Namespace) -> int:
    with output.err().status(f"indexing {tree}") as status:

        def progress(walked: int, parsed: int) -> None:
            status.update(f"indexing {tree}: {walked:,} file(s) so far, {parsed:,} parsed")

        report = _refresh(home, tree, full=args.full, progress=progress)
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    languages = ", ".join(f"{name} {count}" for name, count in report.languages.items())
    output.out().print(
        f"indexed {tree}: {report.files} file(s), {report.symbols} symbol(s) "
        f"({languages or 'no source files'}) in {report.seconds:.2f} s; "
        f"{report.parsed} parsed, {report.reused} reused, {report.removed} removed\n"
        f"index: {report.out}"
    )
    if report.skipped:
        shown = "; ".join(report.skipped[:5])
        more = f" (and {len(report.skipped) - 5} more)" if len(report.skipped) > 5 else ""
        output.err().print(f"skipped: {shown}{more}")
    return 0


def _search(idx, query: str, args: argparse.Namespace) -> int:
    hits = idx.search(query, limit=args.limit)
    if args.json:
        print(json.dumps([hit.model_dump(mode="json") for hit in hits], indent=2))
        return 0
    table = output.table(f"{len(hits)} match(es) for {query!r}", ("where", "kind", "what"))
    for hit in hits:
        record = hit.record
        if hit.kind == "symbol":
            name = f"{record.parent}.{record.name}" if record.parent else record.name
            what = f"{name} {record.signature}" + (f" — {record.doc}" if record.doc else "")
            table.add_row(f"{record.path}:{record.start_line}", record.kind, what[:120])
        else:
            table.add_row(record.path, "file", f"{record.language}, {record.lines} lines")
    output.out().print(table)
    return 0


def _show(idx, name: str, args: argparse.Namespace, tree: Path) -> int:
    found = idx.symbol(name)
    if not found:
        raise CadillacError(f"no symbol named {name!r} in the index of {tree}")
    if args.json:
        print(json.dumps([s.model_dump(mode="json") for s in found], indent=2))
        return 0
    for symbol in found:
        owner = f"{symbol.parent}." if symbol.parent else ""
        output.out().print(
            f"{symbol.path}:{symbol.start_line}-{symbol.end_line} {symbol.kind} "
            f"{owner}{symbol.name}\n  {symbol.signature}"
            + (f"\n  {symbol.doc}" if symbol.doc else "")
        )
    return 0
