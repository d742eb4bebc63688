"""Artifacts: each stack builds what a user runs, as they would build it, in the sandbox.

Go and Rust build their programs for real (``.ci/run`` installs the toolchains, so none of
these skips); the web front end's page is built in ``test_stacks_web.py``, from the npm
registry on 127.0.0.1.
"""

from __future__ import annotations

import json

import pytest

from phases.stacks import build_artifacts, stacks_of
from tests.phases.test_stacks import project

pytestmark = pytest.mark.e2e  # go and cargo, for real: left out of `make test-fast`

GREET = {
    "go.mod": "module example.com/greet/v2\n\ngo 1.19\n",
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello, greet")\n}\n',
}


def test_a_go_main_package_is_built_to_bin_named_after_its_module(tmp_path):
    ctx = project(tmp_path, GREET, stack=["go"])
    [go] = stacks_of(ctx, ctx.plan())
    assert go.artifact_path(ctx.workspace.root) == ""  # not built yet
    assert build_artifacts(ctx, ctx.plan()) is None
    assert go.artifact_path(ctx.workspace.root) == "bin/greet"  # the /v2 is no name
    ran = ctx.run("bin/greet")
    assert ran.ok and ran.output.strip() == "hello, greet", ran.for_model()
    assert "bin/NAME" in go.serves


def test_a_go_module_without_a_main_package_builds_its_packages_and_keeps_no_program(tmp_path):
    files = {
        "go.mod": "module example.com/words\n\ngo 1.19\n",
        "words.go": "package words\n\nfunc Count(s string) int {\n\treturn len(s)\n}\n",
    }
    ctx = project(tmp_path / "lib", files, stack=["go"])
    assert build_artifacts(ctx, ctx.plan()) is None
    [go] = stacks_of(ctx, ctx.plan())
    assert go.artifact_path(ctx.workspace.root) == ""
    assert not (ctx.workspace.root / "bin").exists()
    broken = {**files, "words.go": files["words.go"].replace("len(s)", "size(s)")}
    ctx = project(tmp_path / "broken", broken, stack=["go"])
    failed = build_artifacts(ctx, ctx.plan())
    assert failed is not None and not failed.passed and "go build" in failed.summary
    assert "undefined: size" in failed.details


def test_a_go_program_that_does_not_compile_is_no_artifact(tmp_path):
    files = {**GREET, "main.go": GREET["main.go"].replace("fmt.Println", "fmt.Printline")}
    ctx = project(tmp_path, files, stack=["go"])
    failed = build_artifacts(ctx, ctx.plan())
    assert failed is not None and "building the program" in failed.summary, failed
    assert "Printline" in failed.details
    assert not (ctx.workspace.root / "bin/greet").exists()


def test_a_rust_crate_is_built_with_cargo_and_its_binary_runs(tmp_path):
    files = {
        "Cargo.toml": '[package]\nname = "tally"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/main.rs": 'fn main() {\n    println!("tally {}", 2 + 3);\n}\n',
    }
    ctx = project(tmp_path, files, stack=["rust"])
    assert build_artifacts(ctx, ctx.plan()) is None
    [rust] = stacks_of(ctx, ctx.plan())
    assert rust.artifact_path(ctx.workspace.root) == "target/debug/tally"
    ran = ctx.run("target/debug/tally")
    assert ran.ok and ran.output.strip() == "tally 5", ran.for_model()
    assert "target/debug/" in rust.serves


def test_python_and_node_code_is_run_as_it_is(tmp_path):
    files = {"app.py": "print(1)\n", "tool/package.json": json.dumps({"name": "t"})}
    files["tool/index.js"] = "console.log(1)\n"
    ctx = project(tmp_path, files, stack=["python", "node"])
    before = sorted(p for p in ctx.workspace.root.rglob("*"))
    found = stacks_of(ctx, ctx.plan())
    assert [(s.name, s.root) for s in found] == [("python", "."), ("node", "tool")]
    assert all(s.artifact(ctx, ctx.plan()) is None for s in found)
    assert build_artifacts(ctx, ctx.plan()) is None
    assert [s.artifact_path(ctx.workspace.root) for s in found] == ["", ""]
    assert sorted(p for p in ctx.workspace.root.rglob("*")) == before


def test_a_node_package_with_a_build_script_is_built(tmp_path):
    """A TypeScript package's users import what ``tsc`` wrote: its build script runs, and
    one that fails fails the artifact (here, with no compiler needed: a plain script)."""
    manifest = {"name": "t", "scripts": {"build": "mkdir -p dist && cp index.js dist/"}}
    files = {"package.json": json.dumps(manifest), "index.js": "export const one = 1;\n"}
    ctx = project(tmp_path, files, stack=["node"])
    assert build_artifacts(ctx, ctx.plan()) is None
    assert (ctx.workspace.root / "dist" / "index.js").is_file()
    manifest["scripts"]["build"] = "exit 3"
    (ctx.workspace.root / "package.json").write_text(json.dumps(manifest))
    failed = build_artifacts(ctx, ctx.plan())
    assert failed is not None and "the package's build" in failed.summary, failed
