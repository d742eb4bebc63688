"""cadillac's own installs beyond requirements.txt, run for real, and tried as a hostile project.

Each test runs the deps phase's own check (:func:`phases.deps.check`, which runs
:func:`orchestrator.sandbox.installs.install_steps` in the sandbox) on a small project
that needs no network: a ``package.json``, a ``Cargo.toml`` and a ``go.mod`` with no
dependencies, and a ``pyproject.toml`` whose build needs nothing but the setuptools of a
fresh virtual environment (installed editable with ``--no-index``). The hostile projects
carry install scripts, a ``build.rs``, a build backend that phones home, programs planted
in ``.venv/bin`` (first on the install's PATH), a ``pip`` package shadowing pip, their own
``.npmrc``/cargo/pip configuration, and options or URLs in their dependency lists. None
of that code may run while the network is on; the only host listener, on 127.0.0.1, must
see no connection.

These tests need node/npm, cargo and go: CI installs them (``.ci/run``) and fails rather
than skipping when it cannot.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import InstallError, install_steps
from phases import deps
from phases.base import load_plan
from tests.support import phase_context

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

MARK = "cadillac-ran-7c1d"


@pytest.fixture
def venv_cache(shared_cache) -> Path:
    """The run's cache of templates (making one costs seconds)."""
    return shared_cache


@pytest.fixture
def listener():
    """A host TCP listener on 127.0.0.1; ``reached()`` says whether anything connected."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)

        def reached() -> bool:
            try:
                sock.accept()[0].close()
            except BlockingIOError:
                return False
            return True

        yield sock.getsockname()[1], reached


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    plan = {
        "summary": "a small project",
        "stack": ["x"],
        "files": sorted(files),
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    return ws


def deps_check(ws: Path, cache: Path):
    """The deps phase's check, its commands run as the build loop runs them."""
    return deps.check(phase_context(ws, cache), load_plan(ws))


def marks(*folders: Path) -> list[str]:
    return [str(p) for f in folders for p in f.rglob(f"*{MARK}*")]


def test_the_toolchains_are_here():
    """The tests below are not skipped: without node, npm, cargo or go this fails."""
    for tool in ("node", "npm", "cargo", "go"):
        assert shutil.which(tool), (
            f"install {tool} (.ci/run: apt-get install nodejs npm cargo golang-go)"
        )


# ---------------------------------------------------------------------------- npm
def test_package_json_installs_and_no_install_script_runs(tmp_path, venv_cache):
    outside = tmp_path / "outside"
    outside.mkdir()
    dep = tmp_path / "dep"
    dep.mkdir()
    scripts = {
        name: f"touch {name}-{MARK}; touch {outside}/{name}-{MARK}"
        for name in ("preinstall", "install", "postinstall", "prepare")
    }
    (dep / "package.json").write_text(
        json.dumps({"name": "dep", "version": "1.0.0", "scripts": scripts})
    )
    subprocess.run(
        ["npm", "pack", "--silent", "--ignore-scripts"], cwd=dep, check=True, capture_output=True
    )
    ws = workspace(
        tmp_path,
        {
            "package.json": json.dumps(
                {
                    "name": "tiny",
                    "version": "1.0.0",
                    "scripts": scripts,
                }
            )
        },
    )
    # a file: dependency is refused now (registry_deps); a dependency's own scripts need
    # a registry on 127.0.0.1 to be tested again
    first = deps_check(ws, venv_cache)  # no lock file: npm install
    assert first.passed, first.for_model()
    assert (ws / "package-lock.json").is_file()
    again = deps_check(ws, venv_cache)  # with the lock file it made: npm ci
    assert again.passed, again.for_model()
    assert marks(ws, outside) == []  # the project's scripts did not run


def test_a_project_npmrc_cannot_name_a_program_to_run(tmp_path, venv_cache, listener):
    port, reached = listener
    git = f"#!/bin/bash\ntouch {MARK}-git\nexec 3<>/dev/tcp/127.0.0.1/{port}\n"
    ws = workspace(
        tmp_path,
        {
            "package.json": json.dumps(
                {
                    "name": "tiny",
                    "version": "1.0.0",
                    "dependencies": {"x": "^1.0.0"},
                }
            ),
            ".npmrc": f"git={tmp_path}/ws/evil-git\nignore-scripts=false\n",
            "evil-git": git,
        },
    )
    (ws / "evil-git").chmod(0o755)
    result = deps_check(ws, venv_cache)
    assert not result.passed and ".npmrc" in result.summary, result.for_model()
    assert marks(ws) == [] and not reached()


# ---------------------------------------------------------------------------- cargo, go
CARGO = '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\nbuild = "build.rs"\n'


def test_cargo_fetch_runs_and_never_a_build_script(tmp_path, venv_cache, listener):
    port, reached = listener
    outside = tmp_path / "outside"
    outside.mkdir()
    build_rs = (
        "use std::io::Write;\nfn main() {\n"
        f'    let _ = std::fs::write("{MARK}-build", "");\n'
        f'    let _ = std::fs::write("{outside}/{MARK}-build", "");\n'
        f'    if let Ok(mut s) = std::net::TcpStream::connect("127.0.0.1:{port}") '
        '{ let _ = s.write_all(b"x"); }\n}\n'
    )
    ws = workspace(
        tmp_path, {"Cargo.toml": CARGO, "build.rs": build_rs, "src/main.rs": "fn main() {}\n"}
    )
    result = deps_check(ws, venv_cache)
    assert result.passed, result.for_model()
    assert (ws / "Cargo.lock").is_file() and not (ws / "target").exists()
    assert marks(ws, outside) == [] and not reached()


def test_go_mod_download_runs(tmp_path, venv_cache):
    ws = workspace(
        tmp_path,
        {
            "go.mod": "module example.com/tiny\n\ngo 1.19\n",
            "main.go": "package main\n\nfunc main() {}\n",
        },
    )
    result = deps_check(ws, venv_cache)
    assert result.passed, result.for_model()
    assert result.summary == "go.mod's modules downloaded"


def test_go_never_runs_a_version_control_program(tmp_path, venv_cache, monkeypatch):
    """A module the proxy does not serve (GOPROXY=direct) would be fetched by running git
    with the network on; go is told it may run none."""
    monkeypatch.setenv("GOPROXY", "direct")
    go_mod = "module example.com/tiny\n\ngo 1.19\n\nrequire example.invalid/x.git v1.0.0\n"
    ws = workspace(tmp_path, {"go.mod": go_mod, "main.go": "package main\n\nfunc main() {}\n"})
    result = deps_check(ws, venv_cache)
    assert not result.passed
    assert "git ls-remote" not in result.details and "GOVCS" in result.details, result.details


@pytest.mark.parametrize(
    "files, program",
    [
        ({"package.json": '{"name": "tiny", "version": "1.0.0"}'}, "npm"),
        ({"package.json": '{"name": "tiny", "version": "1.0.0"}'}, "node"),
        ({"Cargo.toml": CARGO.replace('build = "build.rs"\n', ""), "src/main.rs": ""}, "cargo"),
        ({"go.mod": "module example.com/tiny\n\ngo 1.19\n"}, "go"),
    ],
)
def test_a_program_planted_in_the_venv_never_runs_with_the_network(
    tmp_path, venv_cache, listener, files, program
):
    """``.venv/bin`` comes first on the PATH of a build's commands, and the model can write
    there: an install must find its programs on the host's PATH, not there."""
    port, reached = listener
    ws = workspace(tmp_path, files)
    assert deps_check(ws, venv_cache).passed  # makes .venv
    planted = ws / ".venv" / "bin" / program
    planted.write_text(f"#!/bin/bash\ntouch {MARK}-{program}\nexec 3<>/dev/tcp/127.0.0.1/{port}\n")
    planted.chmod(0o755)
    run_command(program, ws, ExecConfig(), path_prefix=[planted.parent])
    (ws / f"{MARK}-{program}").unlink()  # on the build's PATH, the planted program does run
    result = deps_check(ws, venv_cache)
    assert result.passed, result.for_model()
    assert marks(ws) == [] and not reached()


def test_an_interpreter_or_pth_file_planted_in_the_venv_never_runs_with_the_network(
    tmp_path, venv_cache, listener, monkeypatch
):
    """The model can write into .venv: a bin/python linked to its own script, or a .pth
    file in site-packages (run at every interpreter start), must not run during the
    networked install; the check makes the environment anew first."""
    port, reached = listener
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the real pip looks nowhere, and fails fast
    ws = workspace(tmp_path, {"requirements.txt": "no-such-package-cadillac==1.0\n"})
    deps_check(ws, venv_cache)  # makes .venv
    evil = ws / "evil.sh"
    evil.write_text(f"#!/bin/bash\ntouch {MARK}-python\nexec 3<>/dev/tcp/127.0.0.1/{port}\n")
    evil.chmod(0o755)
    python = ws / ".venv" / "bin" / "python"
    python.unlink()
    python.symlink_to("../../evil.sh")
    (site,) = (ws / ".venv" / "lib").glob("python*/site-packages")
    hook = f"import pathlib; pathlib.Path('{ws}/{MARK}-pth').touch()\n"
    (site / "zz-cadillac.pth").write_text(hook)
    result = deps_check(ws, venv_cache)
    assert not result.passed and "no-such-package-cadillac" in result.details, result.details
    assert marks(ws) == [] and not reached()  # the real pip ran, and only it
    assert not (ws / ".venv" / "bin" / "python").resolve().is_relative_to(ws.resolve())


@pytest.mark.parametrize(
    "name, text",
    [
        (".cargo/config.toml", '[source.crates-io]\nreplace-with = "x"\n'),
        (".venv/pip.conf", "[global]\nindex-url = http://127.0.0.1:9/simple\n"),
        (".npmrc", "registry=http://127.0.0.1:9/\n"),
    ],
)
def test_a_project_own_package_configuration_is_refused(tmp_path, name, text):
    ws = workspace(tmp_path, {"Cargo.toml": CARGO, "package.json": "{}", name: text})
    with pytest.raises(InstallError, match=name.replace(".", r"\.")):
        install_steps(ws, ["Cargo.toml", "package.json"])


# ---------------------------------------------------------------------------- pyproject
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
PROJECT = '\n[project]\nname = "tinypkg"\nversion = "0.1"\n'
BACKEND = """\
import base64, hashlib, os, pathlib, socket, zipfile
pathlib.Path("{mark}-backend").touch()
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"x")
except OSError:
    pass
NAME = "tinypkg-0.1"
def _record(files):
    rows = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{{name}},sha256={{digest}},{{len(data)}}")
    return "\\n".join(rows + [f"{{NAME}}.dist-info/RECORD,,"]) + "\\n"
def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    info = NAME + ".dist-info/"
    files = {{
        "tinypkg.pth": (os.getcwd() + "\\n").encode(),
        info + "METADATA": b"Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 0.1\\n",
        info + "WHEEL": b"Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }}
    wheel = NAME + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(info + "RECORD", _record(files))
    return wheel
build_wheel = build_editable
"""
"""A build backend of the project's own (PEP 660, no dependencies), which phones home."""


def test_a_pyproject_installs_offline_and_its_backend_reaches_nothing(
    tmp_path, venv_cache, listener
):
    port, reached = listener
    ws = workspace(
        tmp_path,
        {
            "pyproject.toml": PYPROJECT + PROJECT,
            "backend.py": BACKEND.format(mark=MARK, port=port),
            "tinypkg/__init__.py": "X = 41\n",
        },
    )
    (step,) = install_steps(ws, ["pyproject.toml"])
    assert not step.network  # nothing to fetch: only the offline editable install
    result = deps_check(ws, venv_cache)
    assert result.passed, result.for_model()
    assert (ws / f"{MARK}-backend").exists()  # the project's backend did run: offline
    assert not reached()
    used = run_command(
        f"{ws}/.venv/bin/python -c 'import tinypkg; print(tinypkg.X + 1)'", tmp_path, ExecConfig()
    )
    assert used.output == "42\n", used.output


def test_a_pip_package_in_the_project_is_not_run_in_place_of_pip(
    tmp_path, venv_cache, listener, monkeypatch
):
    port, reached = listener
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the real pip looks nowhere, and fails fast
    fake = f"import pathlib\npathlib.Path('{MARK}-pip').touch()\nprint('fake pip')\n"
    ws = workspace(
        tmp_path,
        {
            "requirements.txt": "no-such-package-cadillac==1.0\n",
            "pip/__init__.py": "",
            "pip/__main__.py": fake,
        },
    )
    result = deps_check(ws, venv_cache)
    assert not result.passed and "no-such-package-cadillac" in result.details, result.details
    assert marks(ws) == [] and not reached()


@pytest.mark.parametrize(
    "where, entry",
    [
        ("dependencies", "--index-url=http://127.0.0.1:{port}/simple"),
        ("dependencies", "evil @ http://127.0.0.1:{port}/evil-1.0-py3-none-any.whl"),
        ("dependencies", "evil @ file:///etc/passwd"),
        ("requires", "-e ."),
        ("requires", "setuptools --extra-index-url http://127.0.0.1:{port}/"),
    ],
)
def test_options_smuggled_in_a_pyproject_are_refused(tmp_path, venv_cache, listener, where, entry):
    port, reached = listener
    item = json.dumps(entry.format(port=port))
    if where == "requires":
        pyproject = PYPROJECT.replace("requires = []", f"requires = [{item}]") + PROJECT
    else:
        pyproject = PYPROJECT + PROJECT + f"dependencies = [{item}]\n"
    ws = workspace(tmp_path, {"pyproject.toml": pyproject})
    result = deps_check(ws, venv_cache)
    assert not result.passed and "pyproject.toml" in result.summary, result.summary
    assert (
        "option" in result.summary
        or "URL" in result.summary
        or "not a requirement" in (result.summary)
    )
    assert not reached()


# ---------------------------------------------------------------------------- sub-folders
def test_a_full_stacks_front_end_installs_in_its_own_folder(tmp_path, venv_cache):
    ws = workspace(
        tmp_path,
        {
            "requirements.txt": "",
            "app.py": "",
            "frontend/package.json": json.dumps({"name": "front", "version": "1.0.0"}),
        },
    )
    result = deps_check(ws, venv_cache)
    assert result.passed, result.for_model()
    assert "frontend/package.json installed into frontend/node_modules" in result.summary
    assert (ws / "frontend" / "package-lock.json").is_file()  # npm ran there, not at the root
    assert not (ws / "package-lock.json").exists()


def test_a_dependency_folder_that_is_a_link_is_refused_unread(tmp_path, venv_cache):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "package.json").write_text('{"dependencies": {"x": "git+ssh://host/x"}}')
    ws = workspace(tmp_path, {"requirements.txt": "", "app.py": ""})
    (ws / "frontend").symlink_to(outside)
    plan = json.loads((ws / "plan.json").read_text())
    plan["files"].append("frontend/package.json")
    (ws / "plan.json").write_text(json.dumps(plan))
    result = deps_check(ws, venv_cache)
    assert not result.passed and "frontend is a symbolic link" in result.summary, result.summary
    (ws / "front").mkdir()
    with pytest.raises(InstallError, match="Python's dependency files are read at the"):
        install_steps(ws, ["requirements.txt"], folder="front")
    (ws / "front" / "package.json").write_text("{}")
    (ws / "front" / ".npmrc").write_text("registry=http://127.0.0.1:1/\n")
    with pytest.raises(InstallError, match=r"front/\.npmrc: cadillac installs"):
        install_steps(ws, ["package.json"], folder="front")
    with pytest.raises(InstallError, match="must be inside the workspace"):
        install_steps(ws, ["package.json"], folder="../outside")
