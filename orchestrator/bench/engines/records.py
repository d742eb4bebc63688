"""A remote build's records, carried back and written into the home by the coordinator.

A build on another machine ran in a home of its own; what the home here needs of it —
its run folder's records (task, summary, events, the model's log, its scoring's results)
— comes back as bytes by relative path. The node runs cadillac's code, not the model's,
but the names come off the network and out of a folder the build's commands could write
beside, so they are checked like any other input: a run id of cadillac's shape, relative
names of plain parts, regular files only, bounded sizes; the workspace and the scored
copy of the project (the model's files, and their installs) never come back.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from orchestrator.loop.runs import BUILD_ID
from orchestrator.sandbox.files import read_regular, replace_file

LEFT_ON_THE_NODE = ("workspace", "scoring/project", "suite-run")
"""Folders of a run that stay on the node: the model's files and what ran in them."""
MAX_FILE_BYTES = 20 * 1024**2
MAX_TOTAL_BYTES = 100 * 1024**2
_PART = re.compile(r"[A-Za-z0-9._-]{1,128}")


def collect(run_dir: Path) -> dict[str, bytes]:
    """The records of the run folder ``run_dir`` (on the node), by relative path: regular
    files only, never through a link, within the size bounds (a larger file is cut off
    and says so in ``records-left-out.txt``)."""
    files: dict[str, bytes] = {}
    left: list[str] = []
    total = 0
    for folder, dirs, names in os.walk(run_dir, followlinks=False):
        rel_dir = Path(folder).relative_to(run_dir)
        dirs[:] = sorted(d for d in dirs if (rel_dir / d).as_posix() not in LEFT_ON_THE_NODE)
        for name in sorted(names):
            rel = (rel_dir / name).as_posix()
            path = Path(folder) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or not good_name(rel):
                left.append(f"{rel}: not a regular file with a plain name")
                continue
            if st.st_size > MAX_FILE_BYTES or total + st.st_size > MAX_TOTAL_BYTES:
                left.append(f"{rel}: {st.st_size} bytes, over the bound")
                continue
            try:
                data = read_regular(path)
            except OSError:  # it became a link or went away meanwhile
                continue
            files[rel] = data
            total += len(data)
    if left:
        files["records-left-out.txt"] = ("\n".join(left) + "\n").encode()
    return files


def good_name(rel: str) -> bool:
    parts = rel.split("/")
    return all(_PART.fullmatch(p) and p not in (".", "..") for p in parts) and len(parts) <= 6


def write_records(runs_dir: Path, run_id: str, files: dict[str, bytes]) -> None:
    """Write a remote build's records into ``runs_dir/run_id`` (see the module docstring);
    what fails the checks is not written."""
    if not BUILD_ID.fullmatch(run_id):
        return
    root = runs_dir / run_id
    total = 0
    for rel, data in files.items():
        if not isinstance(rel, str) or not isinstance(data, bytes) or not good_name(rel):
            continue
        if any(rel == f or rel.startswith(f + "/") for f in LEFT_ON_THE_NODE):
            continue
        total += len(data)
        if len(data) > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
            continue
        try:
            replace_file(_folder(root, rel.split("/")[:-1]) / rel.rsplit("/", 1)[-1], data)
        except OSError:  # a part of the way is a link: not written
            continue


def _folder(root: Path, parts: list[str]) -> Path:
    """``root``/``parts``, made part by part; OSError when any part is a link."""
    here = root
    for part in ["", *parts]:
        here = here / part if part else here
        if here.is_symlink():
            raise OSError(f"{here} is a link")
        here.mkdir(exist_ok=True)
    return here
