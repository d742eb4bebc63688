"""Virtual environments cadillac makes for a project: a copy of a small cached template.

``python -m venv`` spends 2-3 s in ``ensurepip`` and writes some 1,650 files of pip and
setuptools into every environment; copying such an environment still costs a second or
more a build (twice: the build's and its scoring's), and 26 MB of disk. So a cache folder
(the home's ``.cache/``, or ``CADILLAC_CACHE_DIR`` shared by several homes) holds, per
interpreter:

* a **support** environment, made once with ``ensurepip``: its ``site-packages`` holds
  the pip and setuptools that interpreter ships, and nothing else;
* a **template** made ``--without-pip`` (16 files), which each new environment copies.

A new environment gets a ``.pth`` file that adds the support ``site-packages`` after its
own, and ``bin/pip`` scripts, so ``python -m pip`` and ``pip`` work in it as in any
environment; what it installs goes into its own ``site-packages``, which comes first on
``sys.path`` (a newer pip or setuptools installed there wins). The support folder is
never written after it is made: sandboxes see it read-only (:func:`support_dirs`, bound
by :mod:`orchestrator.sandbox.executor`), so nothing a build runs can plant code there.

The environments are made with the Python running cadillac, so their interpreter is a
link to that Python's own install, which the sandbox binds read-only too. The target
must not exist: it is made here, by the host, never through anything the model put in
its place. Without a cache folder an environment is made the plain way, pip included.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from filelock import FileLock

PTH_NAME = "_cadillac_support.pth"
PIP_SCRIPT = """#!{python}
import sys
from pip._internal.cli.main import main
sys.exit(main())
"""
_known: dict[Path, None] = {}
_known_lock = threading.Lock()


def _tag() -> str:
    key = hashlib.blake2b(sys.executable.encode(), digest_size=4).hexdigest()
    return f"py{sys.version_info[0]}.{sys.version_info[1]}-{key}"


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _made_once(path: Path, make_into) -> Path:
    """``path``, made by ``make_into(fresh)`` under a lock unless it is there already; a
    half-made one (Ctrl-C, SIGTERM) is never left under the final name."""
    with FileLock(str(path) + ".lock"):
        if not (path / "bin" / "python").exists():
            fresh = path.with_name(path.name + ".new")
            shutil.rmtree(fresh, ignore_errors=True)
            try:
                make_into(fresh)
                shutil.rmtree(path, ignore_errors=True)
                os.replace(fresh, path)
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
    return path


def _venv(*flags: str):
    def make(fresh: Path) -> None:
        argv = [sys.executable, "-m", "venv", *flags, str(fresh)]
        subprocess.run(argv, check=True, capture_output=True, timeout=300)

    return make


def support_site(cache_dir: Path) -> Path:
    """The read-only ``site-packages`` holding pip and setuptools for environments made
    from ``cache_dir`` (made on first use); sandboxes bind it from now on."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    support = _made_once(cache_dir / f"venv-support-{_tag()}", _venv())
    site = _site_packages(support)
    with _known_lock:
        _known[site] = None
    return site


def support_dirs() -> list[Path]:
    """The support folders this process made or used: each sandbox sees them read-only."""
    with _known_lock:
        return [path for path in _known if path.is_dir()]


def make_venv(target: Path, cache_dir: Path | None) -> str | None:
    """A virtual environment at ``target`` (which must not exist); None, or why it failed."""
    if cache_dir is None:
        done = subprocess.run(
            [sys.executable, "-m", "venv", str(target)], capture_output=True, text=True
        )
        return None if done.returncode == 0 else f"python -m venv failed: {done.stderr[-1500:]}"
    try:
        site = support_site(cache_dir)
        template = _made_once(cache_dir / f"venv-bare-{_tag()}", _venv("--without-pip"))
    except (OSError, subprocess.SubprocessError) as exc:
        return f"python -m venv failed: {exc}"[:1500]
    shutil.copytree(template, target, symlinks=True)
    _repoint(target, template)
    own_site = _site_packages(target)
    own_site.mkdir(parents=True, exist_ok=True)
    (own_site / PTH_NAME).write_text(f"import site; site.addsitedir({str(site)!r})\n")
    for name in ("pip", "pip3", f"pip{sys.version_info[0]}.{sys.version_info[1]}"):
        script = target / "bin" / name
        script.write_text(PIP_SCRIPT.format(python=target / "bin" / "python"))
        script.chmod(0o755)
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
