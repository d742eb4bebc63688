"""Rust: ``cargo build --offline --all-targets`` in the folder holding ``Cargo.toml``.

``--all-targets`` builds every binary, example and test too, so a binary nothing runs
still has to compile. Offline: the crates were fetched by cadillac's install
(:mod:`orchestrator.sandbox.installs`), and a ``build.rs`` runs here without the network.

The artifact is what a user runs: ``cargo build --offline``, its binaries in
``target/debug/`` (the package's own, named after it, when there is a ``src/main.rs``).
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.files import read_text, what_is
from orchestrator.sandbox.installs import InstallError, subfolder
from phases.base import CheckResult, PhaseContext, Plan, run_step
from phases.stacks.paths import in_root

TARGET = "target/debug"


def package_binary(workspace: Path, root: str) -> str:
    """The binary named after the package, when ``src/main.rs`` makes one; else ""."""
    try:
        folder = subfolder(workspace, root)
        if what_is(folder / "src/main.rs") is not None:
            return ""
        name = tomllib.loads(read_text(folder / "Cargo.toml")).get("package", {}).get("name")
    except (InstallError, OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return ""
    return name if isinstance(name, str) and name and "/" not in name else ""


@dataclass(frozen=True)
class RustStack:
    root: str = "."
    name: str = "rust"

    guide: str = (
        "Rust: declare the crate in Cargo.toml (crates.io dependencies only; cadillac fetches "
        "them, and builds run offline). The code check runs `cargo build --offline "
        "--all-targets`, so every binary, example and test must compile; tests are "
        "`cargo test --offline`. The program cadillac runs is target/debug/<package name>."
    )
    serves: str = f"the binaries cargo builds in {TARGET}/ (cargo build --offline); run as programs"

    def check_code(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        command = f"cd {shlex.quote(self.root)} && cargo build --offline --all-targets"
        return run_step(ctx, "cargo build", command, timeout_s=900)

    def artifact(self, ctx: PhaseContext, plan: Plan) -> CheckResult | None:
        command = f"cd {shlex.quote(self.root)} && cargo build --offline"
        return run_step(ctx, "building the program", command, timeout_s=900)

    def artifact_path(self, workspace: Path) -> str:
        binary = package_binary(workspace, self.root)
        return in_root(self.root, f"{TARGET}/{binary}" if binary else TARGET)
