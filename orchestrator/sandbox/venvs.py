"""Virtual environments cadillac makes for a project: a copy of a cached template.

A new environment costs 2-3 s of ``ensurepip``; a copy of a template made once per
interpreter (in the home's ``.cache/``) costs 0.1 s. The environment is made with the
Python running cadillac, so its interpreter is a link to that Python's own install, which
the sandbox binds read-only. The target must not exist: it is made here, by the host,
never through anything the model put in its place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock


def make_venv(target: Path, cache_dir: Path | None) -> str | None:
    """A virtual environment at ``target`` (which must not exist); None, or why it failed."""
    if cache_dir is None:
        done = subprocess.run(
            [sys.executable, "-m", "venv", str(target)], capture_output=True, text=True
        )
        return None if done.returncode == 0 else f"python -m venv failed: {done.stderr[-1500:]}"
    key = hashlib.blake2b(sys.executable.encode(), digest_size=4).hexdigest()
    template = cache_dir / f"venv-py{sys.version_info[0]}.{sys.version_info[1]}-{key}"
    template.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(template) + ".lock"):
        if not (template / "bin" / "python").exists():
            fresh = template.with_name(template.name + ".new")
            shutil.rmtree(fresh, ignore_errors=True)
            subprocess.run(
                [sys.executable, "-m", "venv", str(fresh)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            shutil.rmtree(template, ignore_errors=True)
            os.replace(fresh, template)
    shutil.copytree(template, target, symlinks=True)
    _repoint(target, template)
    return None


def _repoint(venv: Path, old: Path) -> None:
    """Make a copied venv's scripts name their own interpreter, not the template's."""
    for entry in [*(venv / "bin").iterdir(), venv / "pyvenv.cfg"]:
        if entry.is_symlink() or not entry.is_file():
            continue
        try:
            text = entry.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if str(old) in text:
            entry.write_text(text.replace(str(old), str(venv)), encoding="utf-8")
