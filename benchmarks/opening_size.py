"""How large each phase's opening is on a large repository, before and after the budget.

Issue 24 (item 8) measured 317,422 characters of file names in every phase's first
message on Django (about 87k input tokens a request). This makes a Django-sized tree
(by default the first ``--files`` files of this interpreter's site-packages, copied
into a temporary folder: real packages, nothing downloaded; or ``--tree`` to measure a
checkout of your own, read in place), indexes it, and prints, for each phase of an
enhance build on it, the characters and tokens of the opening (system and first user
message) with every file listed (before) and within
:data:`orchestrator.loop.prompt.OPENING_FILES_CHARS` (after). Tokens are litellm's
``token_counter`` for ``--model`` (its bundled tokenizer: no network).

    .venv/bin/python benchmarks/opening_size.py [--files 6800] [--tree PATH] [--model gpt-4o]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list

import litellm  # noqa: E402

from orchestrator.index import CodeIndex, build_index  # noqa: E402
from orchestrator.loop.prompt import OPENING_FILES_CHARS, opening, phase_part, stable_prefix  # noqa: E402
from orchestrator.sandbox.workspace import Workspace  # noqa: E402
from phases import PHASES, load_phases  # noqa: E402
from phases.base import read_prompt  # noqa: E402

TASK = "Add a per-request timeout to the HTTP client's retry of a failed connection"
PLAN = {
    "summary": "a timeout for the client's retries",
    "stack": ["python"],
    "files": ["httpx/_client.py", "httpx/_config.py", "tests/test_timeouts.py"],
    "dependencies": [],
    "test_command": "python -m pytest -q",
    "run_command": "true",
}


def copy_site_packages(target: Path, count: int) -> int:
    """The first ``count`` regular files of site-packages (sorted by path) into ``target``."""
    site = Path(sysconfig.get_paths()["purelib"])
    copied = 0
    for folder, dirs, names in os.walk(site):
        dirs[:] = sorted(
            d for d in dirs if d != "__pycache__" and not (Path(folder) / d).is_symlink()
        )
        for name in sorted(names):
            source = Path(folder) / name
            if copied >= count or source.is_symlink() or not source.is_file():
                continue
            dest = target / source.relative_to(site)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            copied += 1
    return copied


def tokens(model: str, messages: list[dict]) -> int:
    return litellm.token_counter(model=model, messages=messages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=6800)
    parser.add_argument("--tree", type=Path, help="measure this folder instead (read only)")
    parser.add_argument("--model", default="gpt-4o")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opening-size-") as scratch:
        scratch = Path(scratch)
        if args.tree is not None:
            tree = args.tree.resolve()
            if not tree.is_dir():
                print(f"opening_size: error: {tree} is not a folder", file=sys.stderr)
                return 2
        else:
            tree = scratch / "tree"
            copy_site_packages(tree, args.files)
            (tree / "plan.json").write_text(json.dumps(PLAN))
        started = time.perf_counter()
        build_index(tree, scratch / "index")
        index = CodeIndex.load(scratch / "index")
        indexed = time.perf_counter() - started
        workspace = Workspace(tree)
        files = workspace.files()
        names = sum(len(f) + 1 for f in files)
        print(f"tree: {tree} — {len(files):,} files, {names:,} characters of names")
        print(
            f"index: {len(index.files):,} files, {len(index.symbols):,} symbols in {indexed:.1f} s"
        )
        print(f"budget for the file part: {OPENING_FILES_CHARS:,} characters; tokens: {args.model}")
        print()
        print(
            f"{'phase':<10} {'chars before':>13} {'chars after':>12} {'tokens before':>14} "
            f"{'tokens after':>13}"
        )
        phases = load_phases()
        overview = "An overview of the project (knowledge digest):\n" + index.digest
        totals = [0, 0, 0, 0]
        for name in PHASES:
            part = phase_part(phases[name], read_prompt("enhance"), overview)
            row = []
            for chars in (10**9, OPENING_FILES_CHARS):  # before: every file listed
                messages = opening(
                    phases[name],
                    TASK,
                    workspace,
                    [],
                    stable_prefix(""),
                    part,
                    index=lambda: index,
                    existing=True,
                    files_chars=chars,
                )
                row.append((sum(len(m["content"]) for m in messages), tokens(args.model, messages)))
            (cb, tb), (ca, ta) = row
            for n, value in enumerate((cb, ca, tb, ta)):
                totals[n] += value
            print(f"{name:<10} {cb:>13,} {ca:>12,} {tb:>14,} {ta:>13,}")
        print(f"{'all':<10} {totals[0]:>13,} {totals[1]:>12,} {totals[2]:>14,} {totals[3]:>13,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
