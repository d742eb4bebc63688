"""A web front end (React, Vite, and their kind): its build is its check, and its artifact.

``npm run build`` bundles the page, so an import of a component that does not exist, a
JSX syntax error or a type error (Vite projects in TypeScript run ``tsc`` in their build
script) fails here, where nothing else would look. A front end with no ``build`` script
fails the check, and the message says to add one. The project's own bundler is what runs
(``node_modules``, installed by cadillac's install), offline.

The artifact is the built page: ``npm run build`` again, before the stories, and its
output folder ``dist/`` (Vite's default) must then hold an ``index.html``, the page
cadillac serves as static files for the browser stories. A build that puts it elsewhere
fails, and the message says where it must go.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, run_step
from phases.stacks.node import type_check
from phases.stacks.paths import in_root, manifest

OUT_DIR = "dist"
"""Where the build puts the page (Vite's default ``outDir``)."""
WEB_PACKAGES = frozenset({"react", "react-dom", "vite", "@vitejs/plugin-react", "vue", "svelte"})


def is_web(workspace: Path, root: str) -> bool:
    """Whether ``root``'s ``package.json`` is a front end's (it depends on one of
    :data:`WEB_PACKAGES`)."""
    data = manifest(workspace, root)
    names: set[str] = set()
    for key in ("dependencies", "devDependencies"):
        if isinstance(data.get(key), dict):
            names |= set(data[key])
    return bool(names & WEB_PACKAGES)


@dataclass(frozen=True)
class WebStack:
    root: str = "."
    name: str = "web"

    guide: str = (
        "Web front end: package.json with a build script (`vite build`) and its "
        "dependencies; the code check runs `npm run build`, so every import must resolve "
        "and the page must bundle into dist/ (index.html), which cadillac serves. Test "
        "with a runner such as vitest, in package.json."
    )

    serves: str = (
        f"the built page in {OUT_DIR}/ (index.html and its assets), served as static files"
    )

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        return self._no_build_script(ctx) or type_check(ctx, self.root) or self._build(ctx)

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        failed = self._no_build_script(ctx) or self._build(ctx)
        if failed is not None:
            return failed
        page = self.artifact_path(ctx.workspace.root) + "/index.html"
        if what_is(ctx.workspace.root / page) is not None:
            return CheckResult(
                passed=False,
                summary=f"`npm run build` made no {page}: build the page into {OUT_DIR}/ "
                f"(Vite's default outDir), which cadillac serves",
            )
        return None

    def artifact_path(self, workspace: Path) -> str:
        return in_root(self.root, OUT_DIR)

    def _no_build_script(self, ctx: PhaseContext) -> CheckResult | None:
        scripts = manifest(ctx.workspace.root, self.root).get("scripts")
        if isinstance(scripts, dict) and isinstance(scripts.get("build"), str):
            return None
        return CheckResult(
            passed=False,
            summary=f"{self.root}/package.json has no build script: add one that "
            'bundles the page ("build": "vite build")',
        )

    def _build(self, ctx: PhaseContext) -> CheckResult | None:
        command = f"cd {shlex.quote(self.root)} && npm run build --silent"
        return run_step(ctx, "the front end's build", command, timeout_s=600)
