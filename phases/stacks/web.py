"""A web front end (React, Vite, and their kind): its build is its check.

``npm run build`` bundles the page, so an import of a component that does not exist, a
JSX syntax error or a type error (Vite projects in TypeScript run ``tsc`` in their build
script) fails here, where nothing else would look. A front end with no ``build`` script
fails the check, and the message says to add one. The project's own bundler is what runs
(``node_modules``, installed by cadillac's install), offline.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import read_regular
from orchestrator.sandbox.installs import InstallError, subfolder
from phases.base import CheckResult, PhaseContext, Plan, run_step
from phases.stacks.node import type_check

WEB_PACKAGES = frozenset({"react", "react-dom", "vite", "@vitejs/plugin-react", "vue", "svelte"})


def manifest(workspace: Path, root: str) -> dict:
    """``root``'s ``package.json`` as a dict; {} when it is missing, not a regular file, not
    JSON, or below a folder that is a link (the host follows no link the model made)."""
    try:
        folder = subfolder(workspace, root)
        data = json.loads(read_regular(folder / "package.json"))
    except (InstallError, ValueError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


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
        "and the page must bundle. Test with a runner such as vitest, in package.json."
    )

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        scripts = manifest(ctx.workspace.root, self.root).get("scripts")
        if not isinstance(scripts, dict) or not isinstance(scripts.get("build"), str):
            return CheckResult(
                passed=False,
                summary=f"{self.root}/package.json has no build script: add one that "
                'bundles the page ("build": "vite build")',
            )
        failed = type_check(ctx, self.root)
        command = f"cd {shlex.quote(self.root)} && npm run build --silent"
        return failed or run_step(ctx, "the front end's build", command, timeout_s=600)
