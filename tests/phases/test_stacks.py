"""Stack profiles: the plan chooses them, and each checks its code with its own toolchain.

Every check runs for real, in the sandbox, as the build loop runs it: go, cargo and node
are installed by CI (``.ci/run``), so none of these tests skips.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.sandbox import policy
from orchestrator.sandbox.executor import ExecConfig
from orchestrator.sandbox.installs import project_env
from orchestrator.sandbox.venvs import make_venv
from phases import build, scaffold
from phases.base import PhaseContext, load_plan
from phases.stacks import ran_tests, stacks_of
from phases.stacks.python import imports_resolve
from tests.support import phase_context

pytestmark = pytest.mark.e2e  # go, cargo and node, for real: left out of `make test-fast`


def project(
    tmp_path: Path, files: dict[str, str], stack=("x",), test="true", cache: Path | None = None
) -> PhaseContext:
    """A workspace with these files and a plan naming them; with ``cache``, its ``.venv``
    (the deps phase makes one in a Python build)."""
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    plan = {
        "summary": "a small project",
        "stack": list(stack),
        "files": sorted(files),
        "dependencies": [],
        "test_command": test,
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    if cache is not None:
        assert make_venv(ws / ".venv", cache) is None
    return phase_context(ws)


def names(ctx: PhaseContext) -> list[tuple[str, str]]:
    return [(s.name, s.root) for s in stacks_of(ctx, ctx.plan())]


# ------------------------------------------------------------------------- choosing
def test_the_plans_files_choose_the_profiles(tmp_path):
    full = {
        "app.py": "",
        "requirements.txt": "flask\n",
        "frontend/package.json": json.dumps({"dependencies": {"react": "^18"}}),
        "frontend/src/App.jsx": "",
    }
    assert names(project(tmp_path / "a", full)) == [("python", "."), ("web", "frontend")]
    go = {"go.mod": "module example.com/x\n\ngo 1.19\n", "main.go": "package main\n"}
    assert names(project(tmp_path / "b", go, stack=["go"])) == [("go", ".")]
    node = {"package.json": json.dumps({"name": "x"}), "index.js": ""}
    assert names(project(tmp_path / "c", node, stack=["node"])) == [("node", ".")]
    rust = {"Cargo.toml": "[package]\nname = 'x'\n", "src/main.rs": ""}
    assert names(project(tmp_path / "d", rust)) == [("rust", ".")]


def test_no_python_check_runs_on_a_go_project(tmp_path):
    ctx = project(tmp_path, {"go.mod": "module example.com/x\n", "broken.py": "def (:\n"})
    plan = load_plan(ctx.workspace.root).model_copy(update={"files": ["go.mod"]})  # stray .py
    assert [s.name for s in stacks_of(ctx, plan)] == ["go"]


# ------------------------------------------------------------------------- python
BROKEN_CLI = {
    "app/__init__.py": "",
    "app/store.py": "def load():\n    return []\n",
    "app/cli.py": "from app.store import load_items\n\ndef main():\n    return load_items()\n",
    "tests/__init__.py": "",
    "tests/test_store.py": "import unittest\nfrom app.store import load\n\n"
    "class T(unittest.TestCase):\n    def test_load(self):\n        self.assertEqual(load(), [])\n",
}


def test_an_import_of_a_name_the_sibling_lacks_fails_the_build_check(tmp_path, shared_cache):
    test = "python -m unittest discover -s tests -t ."
    ctx = project(tmp_path / "bad", BROKEN_CLI, stack=["python"], test=test, cache=shared_cache)
    result = build.PHASE.check(ctx)
    assert not result.passed
    assert "app/cli.py line 1: `from app.store import load_items`" in result.summary
    assert "app/store.py defines no load_items" in result.summary
    twin = {**BROKEN_CLI, "app/cli.py": BROKEN_CLI["app/cli.py"].replace("load_items", "load")}
    ctx = project(tmp_path / "good", twin, stack=["python"], test=test, cache=shared_cache)
    result = build.PHASE.check(ctx)
    assert result.passed, result.for_model()


def test_imports_resolve_across_layouts_and_take_dynamic_modules_at_their_word(tmp_path):
    files = {
        "src/pkg/__init__.py": "from .core import run as run\n__all__ = ['run']\n",
        "src/pkg/core.py": "import os\ntry:\n    import fast\nexcept ImportError:\n"
        "    fast = None\nif os.name:\n    def run():\n        pass\nelse:\n    run = None\n",
        "src/pkg/lazy.py": "def __getattr__(name):\n    return name\n",
        "src/pkg/ns/leaf.py": "VALUE = 1\n",  # a namespace package
        "src/pkg/use.py": "from . import core\nfrom .lazy import anything\nfrom .ns import leaf\n"
        "from .ns.leaf import VALUE\nimport pkg.ns.leaf\ntry:\n    from pkg.missing import x\n"
        "except ImportError:\n    x = None\n",
    }
    root = tmp_path / "p"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert imports_resolve(root, sorted(files)) is None
    (root / "src/pkg/bad.py").write_text("from .core import walk\nimport pkg.nothing\n")
    failed = imports_resolve(root, sorted([*files, "src/pkg/bad.py"]))
    assert failed is not None and not failed.passed
    assert "src/pkg/bad.py line 1: `from .core import walk`: src/pkg/core.py defines no walk" in (
        failed.details
    )
    assert "src/pkg/bad.py line 2: `import pkg.nothing`: no module pkg.nothing" in failed.details


# ------------------------------------------------------------------------- go, rust, node
GO_VET = {
    "go.mod": "module example.com/greet\n\ngo 1.19\n",
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Printf("%d\\n", "x")\n}\n',
}


def test_a_go_vet_error_fails_the_build_check_and_its_twin_passes(tmp_path):
    ctx = project(tmp_path / "bad", GO_VET, stack=["go"])
    result = build.PHASE.check(ctx)
    assert not result.passed and "go vet" in result.summary, result.for_model()
    assert "Printf format %d has arg" in result.details
    twin = {**GO_VET, "main.go": GO_VET["main.go"].replace('"%d\\n", "x"', '"%s\\n", "x"')}
    result = build.PHASE.check(project(tmp_path / "good", twin, stack=["go"]))
    assert result.passed, result.for_model()
    assert "go (.)" in result.summary


RUST = {
    "Cargo.toml": '[package]\nname = "tool"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/main.rs": 'fn main() {\n    println!("hi");\n}\n',
    "src/bin/extra.rs": 'fn main() {\n    let x: u32 = "no";\n}\n',  # nothing runs it
}


def test_a_rust_binary_nothing_runs_must_still_build(tmp_path):
    ctx = project(tmp_path / "bad", RUST, stack=["rust"])
    result = build.PHASE.check(ctx)
    assert not result.passed and "cargo build" in result.summary
    assert "mismatched types" in result.details
    twin = {**RUST, "src/bin/extra.rs": 'fn main() {\n    let _x: &str = "yes";\n}\n'}
    result = build.PHASE.check(project(tmp_path / "good", twin, stack=["rust"]))
    assert result.passed, result.for_model()


def test_javascript_that_does_not_parse_fails_and_typescript_needs_its_compiler(tmp_path):
    files = {"package.json": json.dumps({"name": "x"}), "index.js": "const = ;\n"}
    result = build.PHASE.check(project(tmp_path / "js", files, stack=["node"]))
    assert not result.passed and "node --check" in result.summary
    assert "SyntaxError" in result.details
    ts = {"package.json": json.dumps({"name": "x"}), "tsconfig.json": "{}", "index.ts": ""}
    result = build.PHASE.check(project(tmp_path / "ts", ts, stack=["typescript"]))
    assert not result.passed and "add typescript to devDependencies" in result.summary


def test_a_front_end_without_a_build_script_fails(tmp_path, shared_cache):
    files = {
        "frontend/package.json": json.dumps({"dependencies": {"react": "^18"}}),
        "frontend/src/App.jsx": "",
        "app.py": "",
    }
    ctx = project(tmp_path, files, stack=["python", "react"], cache=shared_cache)
    result = build.PHASE.check(ctx)
    assert not result.passed and "frontend/package.json has no build script" in result.summary


def test_scaffold_compiles_python_only_in_a_python_project(tmp_path):
    go = {**GO_VET, "tools/gen.py": "def (:\n"}
    ctx = project(tmp_path / "go", go, stack=["go"])
    plan = ctx.plan().model_copy(update={"files": ["go.mod", "main.go"]})
    (ctx.workspace.root / "plan.json").write_text(plan.model_dump_json())
    assert scaffold.PHASE.check(ctx).passed
    py = project(tmp_path / "py", {"app.py": "def (:\n"}, stack=["python"])
    assert not scaffold.PHASE.check(py).passed


# ------------------------------------------------------------------------- 0 tests
@pytest.mark.parametrize(
    ("output", "ran"),
    [
        ("===== 3 passed in 0.10s =====", 3),
        ("==== 1 failed, 2 passed, 1 skipped in 1.2s ====", 3),
        ("===== 4 skipped in 0.01s =====", 0),
        ("===== no tests ran in 0.01s =====", 0),
        ("...\n----\nRan 0 tests in 0.000s\n\nNO TESTS RAN", 0),
        ("Ran 5 tests in 0.010s\n\nOK", 5),
        ("Tests:       2 passed, 2 total", 2),
        ("No tests found, exiting with code 0", 0),
        ("the program's own output", None),
    ],
)
def test_test_counts_are_read_from_runners_summaries(output, ran):
    assert ran_tests(output) == ran


def _real(tmp_path: Path, command: list[str], files: dict[str, str]) -> str:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    roots = policy.toolchain_roots(ExecConfig().toolchains)  # rustup's home, as a build has it
    env = {**os.environ, **project_env(tmp_path), **policy.toolchain_env(roots)}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    return done.stdout + done.stderr


def test_real_runners_that_ran_nothing_are_read_as_0(tmp_path):
    node = _real(tmp_path / "node", ["node", "--test"], {"package.json": "{}"})
    assert ran_tests(node) == 0, node
    go = _real(tmp_path / "go", ["go", "test", "./..."], GO_VET | {"main.go": "package main\n"})
    assert ran_tests(go) == 0, go
    cargo = _real(
        tmp_path / "cargo",
        ["cargo", "test", "--offline"],
        {"Cargo.toml": RUST["Cargo.toml"], "src/main.rs": "fn main() {}\n"},
    )
    assert ran_tests(cargo) == 0, cargo


def test_a_test_command_that_ran_no_test_fails_the_build_check(tmp_path, shared_cache):
    files = {"app.py": "X = 1\n", "tests/__init__.py": "", "tests/test_app.py": "import app\n"}
    test = "python -m unittest discover -s tests -t ."
    ctx = project(tmp_path, files, stack=["python"], test=test, cache=shared_cache)
    result = build.PHASE.check(ctx)
    assert not result.passed and "ran 0 tests" in result.summary, result.for_model()


def test_the_phases_are_told_the_plans_stacks_not_pythons(tmp_path):
    from orchestrator.loop.prompt import opening
    from phases import load_phases

    ctx = project(tmp_path / "go", GO_VET, stack=["go"])
    messages = opening(load_phases()["build"], "t", ctx.workspace, [], "prefix\n\n", "part")
    user = messages[1]["content"]
    assert "Go: declare the module in go.mod" in user and "go vet ./..." in user
    assert "Python:" not in user
    full = {
        "app.py": "",
        "requirements.txt": "",
        "frontend/package.json": json.dumps({"dependencies": {"react": "^18"}}),
    }
    ctx = project(tmp_path / "full", full, stack=["python", "react"])
    user = opening(load_phases()["build"], "t", ctx.workspace, [], "p\n\n", "x")[1]["content"]
    assert "- Python:" in user and "`npm run build`" in user and "(in frontend/)" in user


# ------------------------------------------------------------------------- hostile
def test_a_rust_build_script_cannot_reach_the_network(tmp_path):
    """The build check runs build.rs, offline: a listener on the host hears nothing."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        build_rs = (
            "use std::net::TcpStream;\nfn main() {\n"
            f'    let reached = TcpStream::connect("127.0.0.1:{port}").is_ok();\n'
            '    println!("cargo:warning=reached={}", reached);\n}\n'
        )
        files = {**RUST, "build.rs": build_rs, "src/bin/extra.rs": "fn main() {}\n"}
        result = build.PHASE.check(project(tmp_path, files, stack=["rust"]))
        assert result.passed, result.for_model()
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected


def test_a_go_test_that_leaves_a_process_running_leaves_nothing(tmp_path):
    mark = f"cadillac-left-{os.getpid()}-{id(tmp_path)}"
    files = {
        "go.mod": "module example.com/leave\n\ngo 1.19\n",
        "main.go": "package main\n\nfunc main() {}\n",
        "main_test.go": 'package main\n\nimport (\n\t"os"\n\t"os/exec"\n\t"testing"\n'
        '\t"time"\n)\n\nfunc TestLeaves(t *testing.T) {\n'
        f'\tcmd := exec.Command("bash", "-c", "exec -a {mark} sleep 300")\n'
        "\tif err := cmd.Start(); err != nil {\n\t\tt.Fatal(err)\n\t}\n"
        "\ttime.Sleep(500 * time.Millisecond)\n"
        "\tif cmd.ProcessState == nil {\n"  # still running: say so for the test to see
        '\t\tos.WriteFile("started", []byte("yes"), 0o644)\n\t}\n}\n',
    }
    ctx = project(tmp_path, files, stack=["go"], test="go test ./...")
    result = build.PHASE.check(ctx)
    assert result.passed, result.for_model()
    assert (ctx.workspace.root / "started").read_text() == "yes"  # it did leave one behind
    left = [
        p.name for p in Path("/proc").iterdir() if p.name.isdigit() and mark.encode() in _cmdline(p)
    ]
    assert left == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_a_module_too_deep_or_too_big_for_the_host_is_taken_at_its_word(tmp_path):
    """The import check parses the model's files on the host: a file nested deeper than the
    parser goes, or of many megabytes, must not crash or exhaust it."""
    from phases.stacks.python import MAX_MODULE_BYTES

    root = tmp_path / "p"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/deep.py").write_text("x = " + "-" * 200_000 + "1\n")  # MemoryError in ast
    big = "from pkg.nowhere import thing\n" + "#" * MAX_MODULE_BYTES + "\n"
    (root / "pkg/big.py").write_text(big)
    (root / "pkg/use.py").write_text("from pkg.deep import x\nfrom pkg.big import y\n")
    files = ["pkg/__init__.py", "pkg/big.py", "pkg/deep.py", "pkg/use.py"]
    assert imports_resolve(root, files) is None


def test_the_host_reads_no_manifest_through_a_folder_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "package.json").write_text(json.dumps({"dependencies": {"react": "^18"}}))
    ctx = project(tmp_path / "p", {"app.py": ""}, stack=["python"])
    (ctx.workspace.root / "ui").symlink_to(outside)
    plan = ctx.plan().model_copy(update={"files": ["app.py", "ui/package.json"]})
    assert [(s.name, s.root) for s in stacks_of(ctx, plan)] == [("python", "."), ("node", "ui")]


def test_a_plans_paths_keep_their_dot_folders(tmp_path):
    files = {"./go.mod": "module example.com/a\n", ".tools/go.mod": "module example.com/b\n"}
    ctx = project(tmp_path, files, stack=["go"])
    assert names(ctx) == [("go", "."), ("go", ".tools")]
