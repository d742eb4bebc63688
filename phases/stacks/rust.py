"""Rust: ``cargo build --offline --all-targets`` in the folder holding ``Cargo.toml``.

``--all-targets`` builds every binary, example and test too, so a binary nothing runs
still has to compile. Offline: the crates were fetched by cadillac's install
(:mod:`orchestrator.sandbox.installs`), and a ``build.rs`` runs here without the network.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from phases.base import CheckResult, PhaseContext, Plan, run_step


@dataclass(frozen=True)
class RustStack:
    root: str = "."
    name: str = "rust"

    guide: str = (
        "Rust: declare the crate in Cargo.toml (crates.io dependencies only; cadillac fetches "
        "them, and builds run offline). The code check runs `cargo build --offline "
        "--all-targets`, so every binary, example and test must compile; tests are "
        "`cargo test --offline`."
    )

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        command = f"cd {shlex.quote(self.root)} && cargo build --offline --all-targets"
        return run_step(ctx, "cargo build", command, timeout_s=900)
