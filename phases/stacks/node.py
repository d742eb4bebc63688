"""Node (JavaScript or TypeScript): with a ``tsconfig.json``, ``tsc --noEmit`` type-checks.

The compiler is the project's own (``node_modules/.bin/tsc``, installed from its
``package.json`` by cadillac's install), never one fetched at check time. A TypeScript
project without it fails the check, and the message says to declare ``typescript``.
Plain JavaScript has no compile step: every ``.js``/``.mjs``/``.cjs`` file is parsed by
``node --check``, so a syntax error fails here rather than at run time.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import what_is
from phases.base import CheckResult, PhaseContext, Plan, run_step
from phases.stacks.paths import manifest

SCRIPTS = (".js", ".mjs", ".cjs")


def type_check(ctx: PhaseContext, root: str) -> CheckResult | None:
    """``tsc --noEmit`` in ``root`` when it has a ``tsconfig.json``; None otherwise."""
    folder = ctx.workspace.root / root
    if what_is(folder / "tsconfig.json") is not None:
        return None
    if what_is(folder / "node_modules/.bin/tsc") not in (None, "a symbolic link"):
        return CheckResult(
            passed=False,
            summary=f"{root}/tsconfig.json needs the TypeScript compiler: add typescript to "
            "devDependencies in package.json",
        )
    command = f"cd {shlex.quote(root)} && node_modules/.bin/tsc --noEmit -p ."
    return run_step(ctx, "type-checking", command, timeout_s=600)


@dataclass(frozen=True)
class NodeStack:
    root: str = "."
    name: str = "node"

    guide: str = (
        "Node: declare dependencies in package.json (registry versions only; cadillac runs "
        "npm with install scripts off). With TypeScript, add a tsconfig.json and typescript "
        "in devDependencies: the code check runs `tsc --noEmit`; every .js file must parse "
        "(`node --check`). Tests: `node --test`, or the runner package.json names."
    )

    serves: str = ""
    """Node code is run as it is (``node``, or ``tsx`` for TypeScript), or as its ``build``
    script leaves it (``tsc`` into ``dist/``)."""

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        """``npm run build`` when package.json has a build script (a TypeScript package
        compiled to what its users import); nothing to build otherwise."""
        scripts = manifest(ctx.workspace.root, self.root).get("scripts")
        if not (isinstance(scripts, dict) and isinstance(scripts.get("build"), str)):
            return None
        command = f"cd {shlex.quote(self.root)} && npm run build --silent"
        return run_step(ctx, "the package's build", command, timeout_s=600)

    def artifact_path(self, workspace: Path) -> str:
        return ""

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        failed = type_check(ctx, self.root)
        if failed is not None:
            return failed
        prefix = "" if self.root == "." else self.root.rstrip("/") + "/"
        scripts = [
            f[len(prefix) :]
            for f in plan.files
            if f.startswith(prefix) and f.endswith(SCRIPTS) and "node_modules/" not in f
        ]
        scripts = [s for s in scripts if what_is(ctx.workspace.root / self.root / s) is None]
        if not scripts:
            return None
        checks = " && ".join(f"node --check {shlex.quote(s)}" for s in scripts)
        return run_step(ctx, "node --check", f"cd {shlex.quote(self.root)} && {checks}")
