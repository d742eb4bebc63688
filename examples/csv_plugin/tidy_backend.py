"""The example's build backend: setuptools', which leaves nothing in this folder.

``pip install examples/csv_plugin`` builds the wheel here, in the source folder, and
setuptools writes its scratch files beside the source: ``build/`` (not ignored under
``examples/``, so it would show in ``git status``) and ``*.egg-info/``. setuptools has no
setting that moves them, so each build hook here runs setuptools' own and then removes
what that run made (a ``build/`` or ``egg-info`` that was there before is left alone).
A copy of this example for a plugin of your own can keep it, or go back to
``build-backend = "setuptools.build_meta"`` in ``pyproject.toml``.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (every hook that is not wrapped below)

SCRATCH = ("build", "cadillac_csv_plugin.egg-info")
"""What setuptools writes into the source folder while it builds."""


def _tidy(hook):
    """``hook``, removing the scratch folders that its run made."""

    @functools.wraps(hook)
    def run(*args, **kwargs):
        made = [Path(name) for name in SCRATCH if not Path(name).exists()]
        try:
            return hook(*args, **kwargs)
        finally:
            for path in made:
                shutil.rmtree(path, ignore_errors=True)

    return run


build_wheel = _tidy(build_meta.build_wheel)
build_sdist = _tidy(build_meta.build_sdist)
prepare_metadata_for_build_wheel = _tidy(build_meta.prepare_metadata_for_build_wheel)
get_requires_for_build_wheel = _tidy(build_meta.get_requires_for_build_wheel)
get_requires_for_build_sdist = _tidy(build_meta.get_requires_for_build_sdist)
