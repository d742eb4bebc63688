"""An npm registry on 127.0.0.1 for the tests that install React, Vite, TypeScript and tsx.

No test reaches a registry. ``make test`` runs this module (``python -m tests.npm_registry
.cache/test-npm``) once, as it runs ``pip download`` for the test wheels: npm resolves the
tree of ``tests/fixtures/test-npm.json`` (``--package-lock-only --ignore-scripts``: nothing
is installed, nothing runs), and the tarball of every locked package a linux-x64 install
takes (esbuild's and rollup's binaries among them) is fetched from its ``resolved`` URL (or,
when npm is set to leave that out, the registry's own place for it) and checked against the
lock's integrity. Other platforms' tarballs are left out; their lock entries are kept.

:func:`npm_server` serves the folder: a packument per package, built from its tarballs' own
``package.json`` (versions, dependencies, optional and peer ones, ``os``/``cpu``/``libc``,
``bin``, ``engines``), with ``dist.tarball`` on 127.0.0.1 and ``dist.integrity``/``shasum``
of the file served; and the tarballs. The other platforms' binaries are in the packuments
too, from the lock (:data:`OTHER_PLATFORMS`: their ``os``/``cpu`` and integrity), as on the
real registry, so npm skips them as it would there and the lock it writes lists them; their
tarballs are not held (a 404, never asked for).
:func:`npm_registry` points cadillac's installs at it the way a user points npm at their
own registry (``NPM_CONFIG_REGISTRY``, which the npm install step is given), with the
machine's own npm configuration switched off, so what installs is what it serves. Without
the download the fixture fails, never skips.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "tests" / "fixtures" / "test-npm.json"
CACHE = REPO / ".cache" / "test-npm"
PLATFORM = {"os": "linux", "cpu": "x64"}
OTHER_PLATFORMS = "other-platforms.json"
"""The lock's entries for the packages of other platforms (name -> version -> manifest and
integrity): their tarballs are not downloaded, but npm must see that they exist, or the
lock file it writes lacks them and a second install (``npm ci``) finds it out of sync."""
MANIFEST_KEYS = (
    "name",
    "version",
    "dependencies",
    "optionalDependencies",
    "peerDependencies",
    "peerDependenciesMeta",
    "os",
    "cpu",
    "libc",
    "bin",
    "engines",
)
"""What a packument's version entry carries over from the tarball's ``package.json``."""


def pinned() -> dict[str, str]:
    """The packages the tests install, by name, at the versions :data:`SPEC` pins."""
    spec = json.loads(SPEC.read_text())
    return {**spec.get("dependencies", {}), **spec.get("devDependencies", {})}


# ---------------------------------------------------------------------------- download
def _fits(entry: dict) -> bool:
    """Whether a lock entry installs on linux-x64 (either libc: the host's is checked by
    npm at install time)."""
    for key, want in PLATFORM.items():
        allowed = entry.get(key) or []
        refused = [a[1:] for a in allowed if a.startswith("!")]
        if want in refused or (len(refused) < len(allowed) and want not in allowed):
            return False
    return True


def _file_name(name: str, version: str) -> str:
    return f"{name.replace('/', '+')}-{version}.tgz"


def _url(registry: str, name: str, version: str) -> str:
    """Where ``registry`` keeps a package's tarball (a lock written with npm's
    ``omit-lockfile-registry-resolved`` names none)."""
    return f"{registry.rstrip('/')}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"


def _fetch(url: str, integrity: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
    algorithm, _, digest = integrity.partition("-")
    if base64.b64encode(hashlib.new(algorithm, body).digest()).decode() != digest:
        raise SystemExit(f"{url}: its integrity is not the lock's {integrity}")
    dest.write_bytes(body)


def download(dest: Path) -> int:
    """Resolve :data:`SPEC` with npm and download every linux-x64 tarball into ``dest``;
    how many tarballs it holds."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "package.json").write_text(SPEC.read_text())
        subprocess.run(
            [
                "npm",
                "install",
                "--package-lock-only",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
            ],
            cwd=work,
            check=True,
        )
        lock = json.loads((Path(work) / "package-lock.json").read_text())
    registry = subprocess.run(
        ["npm", "config", "get", "registry"], capture_output=True, text=True, check=True
    ).stdout.strip()
    wanted, elsewhere = {}, {}
    for path, entry in lock["packages"].items():
        if not path:
            continue
        name = entry.get("name") or path.rsplit("node_modules/", 1)[1]
        if not _fits(entry):
            kept = {k: entry[k] for k in MANIFEST_KEYS if k in entry}
            elsewhere.setdefault(name, {})[entry["version"]] = {**kept, "name": name}
            elsewhere[name][entry["version"]]["integrity"] = entry["integrity"]
            continue
        target = dest / _file_name(name, entry["version"])
        if not target.exists():
            wanted[target] = (
                entry.get("resolved") or _url(registry, name, entry["version"]),
                entry["integrity"],
            )
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: _fetch(*wanted[t], t), wanted))
    (dest / OTHER_PLATFORMS).write_text(json.dumps(elsewhere, indent=1, sort_keys=True))
    return len(list(dest.glob("*.tgz")))


# ---------------------------------------------------------------------------- serving
def _manifest(tarball: Path) -> dict:
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            if re.fullmatch(r"[^/]+/package\.json", member.name):
                return json.load(archive.extractfile(member))
    raise AssertionError(f"{tarball.name} holds no package.json")


def tarballs(folder: Path = CACHE) -> dict[str, dict[str, tuple[Path, dict]]]:
    """Name -> version -> (tarball, its package.json) of every tarball in ``folder``."""
    found: dict[str, dict[str, tuple[Path, dict]]] = {}
    for path in sorted(folder.glob("*.tgz")):
        manifest = _manifest(path)
        found.setdefault(manifest["name"], {})[manifest["version"]] = (path, manifest)
    return found


def _semver(version: str) -> tuple:
    main, _, pre = version.partition("-")
    return tuple(int(n) for n in main.split(".")), pre == "", pre


def packument(
    name: str, versions: dict[str, tuple[Path, dict]], base: str, elsewhere: dict | None = None
) -> dict:
    """The registry document of ``name``: each version's manifest, its tarball's URL under
    ``base`` and the tarball's digests; and the versions for other platforms
    (``elsewhere``: their manifests and integrity from the lock, no tarball to fetch)."""
    entries = {}
    unscoped = name.rsplit("/", 1)[-1]
    for version, (path, manifest) in versions.items():
        entry = {k: manifest[k] for k in MANIFEST_KEYS if k in manifest}
        body = path.read_bytes()
        entry["dist"] = {
            "tarball": f"{base}{name}/-/{unscoped}-{version}.tgz",
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(body).digest()).decode(),
            "shasum": hashlib.sha1(body).hexdigest(),
        }
        entries[version] = entry
    for version, manifest in (elsewhere or {}).items():
        entry = {k: manifest[k] for k in MANIFEST_KEYS if k in manifest}
        tarball = f"{base}{name}/-/{unscoped}-{version}.tgz"
        entries[version] = {
            **entry,
            "dist": {"tarball": tarball, "integrity": manifest["integrity"]},
        }
    latest = max(entries, key=_semver)
    return {"name": name, "dist-tags": {"latest": latest}, "versions": entries}


class Registry(http.server.ThreadingHTTPServer):
    """The registry: its packuments (by name) and tarballs (by URL path); each path asked
    for is kept in :attr:`asked`."""

    daemon_threads = True

    def __init__(self, folder: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"
        self.asked: list[str] = []
        self.documents: dict[str, bytes] = {}
        self.files: dict[str, Path] = {}
        held = tarballs(folder)
        elsewhere = json.loads((folder / OTHER_PLATFORMS).read_text())
        for name in sorted({*held, *elsewhere}):
            versions = held.get(name, {})
            doc = packument(name, versions, self.url, elsewhere.get(name))
            self.documents[name] = json.dumps(doc).encode()
            for version, entry in doc["versions"].items():
                if version in versions:
                    path = unquote(entry["dist"]["tarball"].removeprefix(self.url))
                    self.files[path] = versions[version][0]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Registry

    def do_GET(self):
        path = unquote(self.path.split("?", 1)[0]).lstrip("/")
        self.server.asked.append(path)
        if path in self.server.files:
            body, kind = self.server.files[path].read_bytes(), "application/octet-stream"
        elif path in self.server.documents:
            body, kind = self.server.documents[path], "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def npm_server():
    """The registry, serving :data:`CACHE`; fails (never skips) when it was not downloaded."""
    held = tarballs() if CACHE.is_dir() else {}
    missing = [f"{n}@{v}" for n, v in pinned().items() if v not in held.get(n, {})]
    missing += [] if (CACHE / OTHER_PLATFORMS).is_file() else [OTHER_PLATFORMS]
    assert not missing, (
        f"{', '.join(missing)} not in {CACHE}: run make test (it downloads the test npm packages)"
    )
    server = Registry(CACHE)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def npm_registry(npm_server, monkeypatch) -> Registry:
    """npm's installs, cadillac's included, use the 127.0.0.1 registry and nothing else."""
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", npm_server.url)
    monkeypatch.setenv("NPM_CONFIG_USERCONFIG", "/dev/null")
    monkeypatch.setenv("NPM_CONFIG_GLOBALCONFIG", "/dev/null/npmrc")  # none: not /dev/null twice
    monkeypatch.setenv("NPM_CONFIG_UPDATE_NOTIFIER", "false")
    npm_server.asked.clear()
    return npm_server


def package_json(**extra) -> dict:
    """A ``package.json`` depending on the test packages at their pinned versions (as
    dependencies: a build installs its devDependencies too), with ``extra`` keys."""
    return {"name": "t", "private": True, "dependencies": pinned(), **extra}


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE
    print(f"{download(folder)} npm tarballs in {folder}")
