"""What an installed cadillac needs besides its modules is declared as package data.

Prompts (``phases/*.md``, the improver's prompt) and the report templates are read at run
time from beside the code; an install that left one out would fail only when a user hit
it. Every file of the packages that is not Python must match a package-data pattern of
the package that holds it.
"""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _data_files() -> list[Path]:
    out = []
    for package in ("orchestrator", "phases", "memory"):
        for path in (ROOT / package).rglob("*"):
            if (
                path.is_file()
                and path.suffix not in (".py", ".pyc")
                and "__pycache__" not in path.parts
            ):
                out.append(path.relative_to(ROOT))
    return sorted(out)


def _declared(path: Path, package_data: dict[str, list[str]]) -> bool:
    for package, patterns in package_data.items():
        base = Path(*package.split("."))
        if path.is_relative_to(base):
            rest = path.relative_to(base).as_posix()
            if any(fnmatch(rest, pattern) for pattern in patterns):
                return True
    return False


def test_every_data_file_of_the_packages_is_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_data = config["tool"]["setuptools"]["package-data"]
    files = _data_files()
    assert Path("orchestrator/improve/improver.md") in files
    assert Path("orchestrator/nightly/templates/report.html") in files
    missing = [str(p) for p in files if not _declared(p, package_data)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
    assert not _declared(Path("orchestrator/nightly/templates/x.html"), {"phases": ["*"]})
