"""React, Vite and TypeScript for real: installed by cadillac's own install step from the
npm registry on 127.0.0.1 (:mod:`tests.npm_registry`), then built and checked in the
sandbox as the build loop does it.

Nothing here reaches a registry: the packages were downloaded by ``make test``, and the
registry fixture fails (never skips) without them.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from phases import build, deps
from phases.base import PhaseContext
from phases.stacks import build_artifacts, stacks_of
from tests.npm_registry import package_json, pinned
from tests.support import phase_context

pytestmark = pytest.mark.e2e  # npm, vite and tsc, for real: left out of `make test-fast`

PAGE = {
    "package.json": json.dumps(package_json(type="module", scripts={"build": "vite build"})),
    "index.html": '<!doctype html>\n<html><body><div id="root"></div>\n'
    '<script type="module" src="/src/main.jsx"></script></body></html>\n',
    "vite.config.js": "import react from '@vitejs/plugin-react'\n\n"
    "export default { plugins: [react()] }\n",
    "src/main.jsx": "import { createRoot } from 'react-dom/client'\nimport App from './App.jsx'\n\n"
    "createRoot(document.getElementById('root')).render(<App />)\n",
    "src/App.jsx": "import Greeting from './Greeting.jsx'\n\n"
    'export default function App() {\n  return <Greeting name="world" />\n}\n',
    "src/Greeting.jsx": "export default function Greeting({ name }) {\n"
    "  return <h1>Hello, {name}</h1>\n}\n",
}
"""A React + Vite page whose ``App.jsx`` imports a component of its own."""

TS_LIBRARY = {
    "package.json": json.dumps(
        {
            "name": "sums",
            "private": True,
            "type": "module",
            "devDependencies": {n: pinned()[n] for n in ("typescript", "tsx")},
        }
    ),
    "tsconfig.json": json.dumps(
        {
            "compilerOptions": {
                "strict": True,
                "target": "es2022",
                "module": "nodenext",
                "noEmit": True,
            },
            "include": ["src"],
        }
    ),
    "src/sum.ts": "export function sum(values: number[]): number {\n"
    "  return values.reduce((a, b) => a + b, 0)\n}\n",
    "src/index.ts": "import { sum } from './sum.js'\n\n"
    "export const total: number = sum([1, 2, 3])\n",
}
"""A TypeScript library: ``index.ts`` uses ``sum.ts`` as its types say."""


def project(tmp_path: Path, files: dict[str, str], stack: list[str], cache: Path) -> PhaseContext:
    """A workspace with these files and a plan naming them."""
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    plan = {
        "summary": "a small project",
        "stack": stack,
        "files": sorted(files),
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    return phase_context(ws, cache)


def installed(ctx: PhaseContext) -> float:
    """Run cadillac's deps phase (its npm install from the registry); the seconds it took."""
    start = time.monotonic()
    result = deps.PHASE.check(ctx)
    assert result.passed, result.for_model()
    return time.monotonic() - start


# ------------------------------------------------------------------------- the registry
def test_cadillacs_install_takes_every_package_from_the_registry_on_loopback(
    tmp_path, shared_cache, npm_registry
):
    ctx = project(tmp_path, PAGE, ["react", "vite"], shared_cache)
    installed(ctx)
    root = ctx.workspace.root
    for name, version in pinned().items():
        got = json.loads((root / "node_modules" / name / "package.json").read_text())
        assert got["version"] == version
    assert (root / "node_modules/@esbuild/linux-x64/bin/esbuild").is_file()
    assert "react" in npm_registry.asked and "vite" in npm_registry.asked
    assert any(p.endswith(".tgz") for p in npm_registry.asked)
    lock = json.loads((root / "package-lock.json").read_text())
    resolved = [e["resolved"] for e in lock["packages"].values() if "resolved" in e]
    assert resolved and all(r.startswith(npm_registry.url) for r in resolved)
    # esbuild's install script never ran (--ignore-scripts): its binary runs all the same
    esbuild = json.loads((root / "node_modules/esbuild/package.json").read_text())["version"]
    ran = ctx.run("node_modules/.bin/esbuild --version")
    assert ran.ok and ran.output.strip().splitlines()[-1] == esbuild, ran.for_model()


# ------------------------------------------------------------------------- React + Vite
def test_a_page_importing_a_component_that_does_not_exist_fails_the_build_check(
    tmp_path, shared_cache, npm_registry
):
    bad = {**PAGE, "src/App.jsx": PAGE["src/App.jsx"].replace("./Greeting.jsx", "./Missing.jsx")}
    ctx = project(tmp_path / "bad", bad, ["react", "vite"], shared_cache)
    installed(ctx)
    result = build.PHASE.check(ctx)
    assert not result.passed and "npm run build" in result.summary, result.for_model()
    assert "Missing.jsx" in result.details
    twin = project(tmp_path / "good", PAGE, ["react", "vite"], shared_cache)
    installed(twin)
    result = build.PHASE.check(twin)
    assert result.passed, result.for_model()
    assert "web (.)" in result.summary


def test_the_pages_artifact_is_its_built_dist_folder(tmp_path, shared_cache, npm_registry):
    ctx = project(tmp_path, PAGE, ["react", "vite"], shared_cache)
    installed(ctx)
    root = ctx.workspace.root
    assert build_artifacts(ctx, ctx.plan()) is None
    [web] = stacks_of(ctx, ctx.plan())
    assert web.artifact_path(root) == "dist" and "dist/" in web.serves
    page = (root / "dist/index.html").read_text()
    script = re.search(r'src="/(assets/[^"]+\.js)"', page)
    assert script is not None, page
    assert "Hello, " in (root / "dist" / script.group(1)).read_text()  # the bundle holds it
    (root / "vite.config.js").write_text(
        "import react from '@vitejs/plugin-react'\n\n"
        "export default { plugins: [react()], build: { outDir: 'out' } }\n"
    )
    shutil.rmtree(root / "dist")
    failed = build_artifacts(ctx, ctx.plan())
    assert failed is not None and not failed.passed
    assert "`npm run build` made no dist/index.html" in failed.summary


def test_a_full_stacks_front_end_is_built_in_its_folder(tmp_path, shared_cache, npm_registry):
    files = {f"frontend/{name}": text for name, text in PAGE.items()}
    files["app.py"] = "print('the back end')\n"
    ctx = project(tmp_path, files, ["python", "react"], shared_cache)
    installed(ctx)
    found = stacks_of(ctx, ctx.plan())
    assert [(s.name, s.root) for s in found] == [("python", "."), ("web", "frontend")]
    assert build_artifacts(ctx, ctx.plan()) is None
    assert found[1].artifact_path(ctx.workspace.root) == "frontend/dist"
    assert (ctx.workspace.root / "frontend/dist/index.html").is_file()


# ------------------------------------------------------------------------- TypeScript
def test_a_type_error_in_a_typescript_library_fails_tsc_and_its_twin_passes(
    tmp_path, shared_cache, npm_registry
):
    bad = {**TS_LIBRARY, "src/index.ts": TS_LIBRARY["src/index.ts"].replace("[1, 2, 3]", "'1'")}
    ctx = project(tmp_path / "bad", bad, ["typescript", "node"], shared_cache)
    installed(ctx)
    result = build.PHASE.check(ctx)
    assert not result.passed and "tsc --noEmit" in result.summary, result.for_model()
    assert "error TS2345" in result.details  # '"1"' is not assignable to number[]
    twin = project(tmp_path / "good", TS_LIBRARY, ["typescript", "node"], shared_cache)
    installed(twin)
    result = build.PHASE.check(twin)
    assert result.passed, result.for_model()


def test_tsx_runs_in_the_sandbox_wasm_memory_and_all(tmp_path, shared_cache, npm_registry):
    """tsx loads a WebAssembly module lexer: under the address-space limit the sandbox had
    (``ulimit -v``) node could not reserve its memory ("Cannot allocate Wasm memory"),
    printed 1 and exited 1; under the data limit it exits 0."""
    ctx = project(tmp_path, TS_LIBRARY, ["typescript", "node"], shared_cache)
    installed(ctx)
    ran = ctx.run('node --import tsx -e "console.log(1)"')
    assert ran.exit_code == 0 and ran.output.strip() == "1", ran.for_model()
    ran = ctx.run(
        "node --import tsx -e \"import('./src/index.ts').then(m => console.log(m.total))\""
    )
    assert ran.exit_code == 0 and ran.output.strip() == "6", ran.for_model()


def test_a_second_install_and_build_reuses_the_first_ones_lock(
    tmp_path, shared_cache, npm_registry, capsys
):
    """The first install writes package-lock.json (resolved on the registry the machine
    uses); the second is ``npm ci`` from it, and passes cadillac's lock check. The wall
    times of both, install and build, are printed (``pytest -s``)."""
    ctx = project(tmp_path, PAGE, ["react", "vite"], shared_cache)
    times = []
    for _ in range(2):
        install = installed(ctx)
        start = time.monotonic()
        result = build.PHASE.check(ctx)
        assert result.passed, result.for_model()
        times.append((install, time.monotonic() - start))
    lock = json.loads((ctx.workspace.root / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/vite"]["resolved"].startswith(npm_registry.url)
    with capsys.disabled():
        for n, (install, built) in enumerate(times, 1):
            print(f"\nweb install+build {n}: install {install:.1f}s, build check {built:.1f}s")
