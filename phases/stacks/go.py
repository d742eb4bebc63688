"""Go: ``go vet ./...`` then ``go build ./...`` in the folder holding ``go.mod``.

vet finds what compiles but is wrong (a format string that does not match its arguments,
an unreachable return, a copied lock); build compiles every package and command. Both run
offline in the sandbox, with the module cache and the build cache in the project
(:func:`orchestrator.sandbox.installs.project_env`), so a second check reuses the first's
work.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from phases.base import CheckResult, PhaseContext, Plan, run_step


@dataclass(frozen=True)
class GoStack:
    root: str = "."
    name: str = "go"

    guide: str = (
        "Go: declare the module in go.mod (standard library first; dependencies are "
        "downloaded by cadillac, and builds run offline). The code check runs `go vet ./...` "
        "then `go build ./...`; tests are `go test ./...` (a package without tests runs none)."
    )

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        cd = f"cd {shlex.quote(self.root)} && "
        return run_step(ctx, "go vet", cd + "go vet ./...", timeout_s=600) or run_step(
            ctx, "go build", cd + "go build ./...", timeout_s=600
        )
