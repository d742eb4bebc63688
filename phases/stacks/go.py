"""Go: ``go vet ./...`` then ``go build ./...`` in the folder holding ``go.mod``.

vet finds what compiles but is wrong (a format string that does not match its arguments,
an unreachable return, a copied lock); build compiles every package and command. Both run
offline in the sandbox, with the module cache and the build cache in the project
(:func:`orchestrator.sandbox.installs.project_env`), so a second check reuses the first's
work.

The artifact is the program a user runs: when the module's root folder is a main package
(``go list`` says so, build tags and all), ``go build -o bin/NAME .``, NAME being the
module path's last element as go itself names a binary (``example.com/greet/v2`` makes
``greet``); otherwise ``go build ./...``, which builds every package and keeps nothing.
The name is read from ``go.mod`` on the host without following a link, and one that is
not a plain file name is refused.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import read_regular, what_is
from orchestrator.sandbox.installs import InstallError, subfolder
from phases.base import CheckResult, PhaseContext, Plan, run_step
from phases.stacks.paths import in_root

MODULE = re.compile(rb"^\s*module\s+\"?([^\s\"/]+(?:/[^\s\"/]+)*)\"?\s*(?://.*)?$", re.M)
MAJOR = re.compile(r"v[0-9]+")
BINARY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
MAX_GO_MOD_BYTES = 1_000_000


def binary_name(workspace: Path, root: str) -> str:
    """The name go gives the module's binary (its path's last element, a major version
    suffix skipped); "" when go.mod names no module, or one that is not a plain name."""
    try:
        text = read_regular(subfolder(workspace, root) / "go.mod", MAX_GO_MOD_BYTES)
    except (InstallError, OSError):
        return ""
    found = MODULE.search(text)
    if found is None:
        return ""
    parts = found.group(1).decode("utf-8", "replace").split("/")
    if len(parts) > 1 and MAJOR.fullmatch(parts[-1]):
        parts = parts[:-1]
    return parts[-1] if BINARY_NAME.fullmatch(parts[-1]) else ""


@dataclass(frozen=True)
class GoStack:
    root: str = "."
    name: str = "go"

    guide: str = (
        "Go: declare the module in go.mod (standard library first; dependencies are "
        "downloaded by cadillac, and builds run offline). The code check runs `go vet ./...` "
        "then `go build ./...`; tests are `go test ./...` (a package without tests runs none). "
        "A main package at the module's root is built to bin/NAME (NAME: the module path's "
        "last element), the program cadillac runs."
    )
    serves: str = (
        "bin/NAME, NAME the module path's last element, when the module's root is a main "
        "package (go build -o); run as a program"
    )

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        cd = f"cd {shlex.quote(self.root)} && "
        return run_step(ctx, "go vet", cd + "go vet ./...", timeout_s=600) or run_step(
            ctx, "go build", cd + "go build ./...", timeout_s=600
        )

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        cd = f"cd {shlex.quote(self.root)} && "
        if not self._main_at_root(ctx):
            return run_step(ctx, "go build", cd + "go build ./...", timeout_s=600)
        name = binary_name(ctx.workspace.root, self.root)
        if not name:
            return CheckResult(
                passed=False,
                summary=f"{in_root(self.root, 'go.mod')} names no module whose last element "
                "is a plain file name (module example.com/NAME): the binary is named by it",
            )
        command = cd + f"go build -o {shlex.quote('bin/' + name)} ."
        return run_step(ctx, "building the program", command, timeout_s=600)

    def artifact_path(self, workspace: Path) -> str:
        """``bin/NAME`` once :meth:`artifact` has built it; "" otherwise (a module with no
        main package at its root has no one program)."""
        name = binary_name(workspace, self.root)
        path = in_root(self.root, f"bin/{name}")
        return path if name and what_is(workspace / path) is None else ""

    def _main_at_root(self, ctx: PhaseContext) -> bool:
        command = f"cd {shlex.quote(self.root)} && go list -f '{{{{.Name}}}}' ."
        result = ctx.run(command, timeout_s=300)
        return result.ok and result.output.strip().splitlines()[-1:] == ["main"]
