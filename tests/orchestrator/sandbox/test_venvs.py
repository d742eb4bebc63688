"""Project environments: a 16-file copy of a bare template, with pip and setuptools from a
read-only support environment, working as a full environment does, in the sandbox."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from orchestrator.sandbox import venvs
from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import PIP, project_env


def listing(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a digest of what it holds (links by their target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path.relative_to(folder))] = "-> " + str(path.readlink())
        elif path.is_file():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def wheel(folder: Path, name: str = "tinypkg") -> Path:
    """A pure-Python wheel made by hand: installing it needs no index and no build."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    target = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return target


def in_sandbox(ws: Path, command: str):
    return run_command(
        command, ws, ExecConfig(), path_prefix=[ws / ".venv" / "bin"], env=project_env(ws)
    )


@pytest.fixture
def ws(ws: Path, shared_cache: Path) -> Path:
    """A workspace with an environment made from the run's cache."""
    assert venvs.make_venv(ws / ".venv", shared_cache) is None
    return ws


def test_an_environment_is_a_few_files_and_its_pip_comes_from_the_support_folder(ws, shared_cache):
    files = [p for p in (ws / ".venv").rglob("*") if not p.is_dir()]
    assert len(files) < 40, len(files)  # a full one holds some 1,650
    site = venvs.support_site(shared_cache)
    assert site in venvs.support_dirs() and (site / "pip").is_dir()
    done = in_sandbox(ws, "python -m pip --version; pip --version; python -c 'import setuptools'")
    assert done.exit_code == 0, done.output
    assert done.output.count(f"from {site}/pip ") == 2, done.output
    assert (ws / ".venv" / "bin" / "pip").read_text().startswith(f"#!{ws}/.venv/bin/python")


def test_what_pip_installs_goes_into_the_environment_and_never_the_support_folder(ws, shared_cache):
    (site,) = [d for d in venvs.support_dirs() if d.is_relative_to(shared_cache)]
    before = listing(site)
    wheel(ws)
    done = in_sandbox(ws, f"{PIP} --no-index tinypkg-1.0-py3-none-any.whl")
    assert done.exit_code == 0, done.output
    own = ws / ".venv" / "lib"
    assert list(own.glob("python3*/site-packages/tinypkg/__init__.py"))
    check = in_sandbox(ws, "python -c 'import tinypkg; print(tinypkg.VALUE)'")
    assert check.output.strip() == "42"
    assert listing(site) == before


def test_a_command_cannot_write_into_the_support_folder(ws, shared_cache):
    """The one folder every project's pip comes from: read-only in every sandbox."""
    (site,) = [d for d in venvs.support_dirs() if d.is_relative_to(shared_cache)]
    before = listing(site)
    attacks = [
        f"echo 'import os; os.system(\"touch /tmp/pwned\")' > {site}/evil.pth",
        f"echo pwned >> {site}/pip/__init__.py",
        f"rm -rf {site}/setuptools",
        f"python -m pip install --no-index --target {site} tinypkg-1.0-py3-none-any.whl",
        "python -m pip uninstall -y pip",
    ]
    wheel(ws)
    for attack in attacks:
        done = in_sandbox(ws, attack)
        assert done.exit_code != 0 or "Not uninstalling" in done.output, (attack, done.output)
    assert listing(site) == before
    again = in_sandbox(ws, "python -m pip --version")
    assert again.exit_code == 0 and str(site) in again.output


def test_the_templates_are_made_once_and_never_left_half_made(tmp_path):
    cache = tmp_path / "cache"
    assert venvs.make_venv(tmp_path / "a", cache) is None
    made = sorted(p.name for p in cache.iterdir())
    assert [n for n in made if not n.endswith(".lock")] == [
        f"venv-bare-{venvs._tag()}",
        f"venv-support-{venvs._tag()}",
    ]
    stamp = {p: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert venvs.make_venv(tmp_path / "b", cache) is None
    assert {p: p.stat().st_mtime_ns for p in cache.iterdir()} == stamp  # copied, not made
    text = (tmp_path / "b" / "pyvenv.cfg").read_text()
    assert str(cache) not in text  # the copy names itself, not the template


def test_a_plan_install_command_that_repeats_cadillacs_install_is_not_run():
    from phases.deps import repeats_an_install

    req = ["requirements.txt"]
    for same in (
        "python -m pip install -r requirements.txt",
        "pip install -r requirements.txt",
        ".venv/bin/python -m pip install -q --requirement ./requirements.txt",
    ):
        assert repeats_an_install(same, req), same
    for other in (
        "python -m pip install -r requirements.txt && touch x",
        "python -m pip install -r requirements-dev.txt",
        "python -m pip install -e .",
        "pip install -r requirements.txt --index-url http://127.0.0.1:1/",
        "npm ci",
        "pip install -r 'unclosed",
    ):
        assert not repeats_an_install(other, req), other
    assert not repeats_an_install("pip install -r requirements.txt", ["pyproject.toml"])
