"""The code check and the stacks of a change to an existing project (issue 24, item 5).

Each project here is a real git repository made into a build's worktree by
:func:`orchestrator.loop.source.prepare`, as ``cadillac enhance`` makes it; the scripted
"model" is the writes each test makes in the workspace, and the check runs in the
sandbox as the build loop runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from orchestrator.loop import source as sources
from orchestrator.sandbox.venvs import make_venv
from phases.base import PhaseContext, Plan
from phases.stacks import check_code, guide, stacks_of
from phases.stacks.python_change import configured_packages
from tests.support import phase_context

BROKEN = "def broken(:\n"
PYPROJECT = (
    '[project]\nname = "shop"\nversion = "1"\n\n'
    '[tool.setuptools.packages.find]\ninclude = ["shop*"]\n'
)
PROJECT = {
    "pyproject.toml": PYPROJECT,
    ".gitignore": "*_gen.py\nbuild/\n",
    "shop/__init__.py": "",
    "shop/cart.py": "def total(items):\n    return sum(items)\n",
    "shop/tests/__init__.py": "",
    "shop/tests/fixture_bad.py": BROKEN,  # a fixture of the package's own tests
    "tests/runner_apps/tests_syntax_error.py": BROKEN,  # Django's kind of fixture
    "tests/test_cart.py": "from shop.cart import total\n",
    "package.json": json.dumps({"devDependencies": {"eslint": "^8", "qunit": "^2"}}),
    "js_tests/tests.js": "QUnit.test('x', () => {});\n",
}


def git(repo: Path, *args: str) -> None:
    ident = ["-c", "user.name=u", "-c", "user.email=u@example.invalid"]
    subprocess.run(["git", "-C", str(repo), *ident, *args], check=True, capture_output=True)


def enhance(
    tmp_path: Path, cache: Path, files: dict[str, str] = PROJECT
) -> tuple[PhaseContext, Plan]:
    """The user's repository holding ``files``, made into a build's workspace with its
    ``.venv`` (as deps leaves it); its context as the agent makes it (``changed`` read
    from git), and a plan."""
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the user's project")
    run_dir = tmp_path / "run"
    ws = run_dir / "workspace"
    ws.mkdir(parents=True)
    source = sources.prepare(repo, ws, run_dir, "r1")
    assert make_venv(ws / ".venv", cache) is None
    ctx = phase_context(ws)
    ctx.changed = lambda: sources.touched(source, ws)
    plan = Plan(
        summary="add a discount",
        stack=["python"],
        files=["shop/cart.py", "shop/discount.py", "package.json", "tests/test_cart.py"],
        dependencies=[],
        test_command="python -m pytest -q",
        run_command="true",
    )
    return ctx, plan


def write(ctx: PhaseContext, name: str, text: str) -> None:
    path = ctx.workspace.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# ------------------------------------------------------------------------- what is checked
def test_a_broken_fixture_among_the_tests_is_not_the_changes_concern(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "shop/discount.py", "from shop.cart import total\n\nRATE = 0.1\n")
    write(ctx, "tests/runner_apps/also_bad.py", BROKEN)  # the model's own fixture: the
    # suite judges the tests' files (a test that imports it fails there)
    failed = check_code(ctx, plan)
    assert failed is None, failed and failed.for_model()


def test_a_new_project_still_compiles_every_module(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    ctx.changed = None  # no change to hold it to: all of the tree is checked, as before
    failed = check_code(ctx, plan)
    assert failed is not None and "compiling" in failed.summary


def test_the_changes_own_module_must_compile(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "shop/discount.py", BROKEN)
    failed = check_code(ctx, plan)
    assert failed is not None and "shop/discount.py" in failed.details


def test_a_changed_module_whose_import_does_not_resolve_fails(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "shop/discount.py", "from shop.cart import subtotal\n")
    failed = check_code(ctx, plan)
    assert failed is not None and "defines no subtotal" in failed.summary


def test_a_renamed_module_is_checked_under_its_new_name(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    git(ctx.workspace.root, "mv", "shop/cart.py", "shop/basket.py")
    write(ctx, "shop/basket.py", BROKEN)
    failed = check_code(ctx, plan)
    assert failed is not None and "shop/basket.py" in failed.details


def test_a_module_hidden_by_an_ignore_file_of_its_own_is_checked(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "extras/.gitignore", "*\n")  # ignores itself and all beside it
    write(ctx, "extras/hidden.py", BROKEN)
    failed = check_code(ctx, plan)
    assert failed is not None and "extras/hidden.py" in failed.details


def test_a_module_behind_a_folder_link_is_compiled_through_it(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "build/stash/impl.py", BROKEN)  # where the project's rules ignore it ...
    os.symlink("build/stash", ctx.workspace.root / "tools")  # ... reached as tools/impl.py
    failed = check_code(ctx, plan)
    assert failed is not None and "impl.py" in failed.details, failed


def test_a_module_the_projects_own_ignore_rules_hide_is_still_in_its_package(
    tmp_path, shared_cache
):
    ctx, plan = enhance(tmp_path, shared_cache)
    write(ctx, "shop/prices_gen.py", BROKEN)  # `*_gen.py` is ignored: git never sees it
    failed = check_code(ctx, plan)
    assert failed is not None and "shop/prices_gen.py" in failed.details


def test_the_configuration_names_the_packages(tmp_path, shared_cache):
    files = {
        "pyproject.toml": PYPROJECT,
        "shop/__init__.py": "",
        "shopping_list/__init__.py": "",
        "docs/conf.py": "",
    }
    ctx, _ = enhance(tmp_path, shared_cache, files)
    assert configured_packages(ctx.workspace.root) == ["shop", "shopping_list"]
    hatch = '[project]\nname = "x"\n[tool.hatch.build.targets.wheel]\npackages = ["src/x"]\n'
    write(ctx, "pyproject.toml", hatch)
    assert configured_packages(ctx.workspace.root) == ["src/x"]
    write(ctx, "pyproject.toml", '[project]\nname = "python-shop"\n')
    assert configured_packages(ctx.workspace.root) == ["shop"]
    write(ctx, "pyproject.toml", "[project\n")  # unreadable: nothing, never an exception
    assert configured_packages(ctx.workspace.root) == []
    write(ctx, "setup.cfg", "[metadata]\nname = shopping-list\n")
    assert configured_packages(ctx.workspace.root) == ["shopping_list"]


def test_a_configured_package_reached_through_a_link_is_not_listed_on_the_host(
    tmp_path, shared_cache
):
    ctx, _ = enhance(tmp_path, shared_cache)
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "pkg" / "__init__.py").write_text("")
    os.symlink(outside, ctx.workspace.root / "vendor")
    write(ctx, "pyproject.toml", '[tool.setuptools.packages.find]\nwhere = ["vendor"]\n')
    assert configured_packages(ctx.workspace.root) == []


# ------------------------------------------------------------------------- which stacks
def test_a_python_project_with_js_tooling_gets_no_node_checks(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    assert [(s.name, s.root) for s in stacks_of(ctx, plan)] == [("python", ".")]
    assert "Node" not in guide(ctx.workspace.root, plan, existing=True)


def test_the_plan_can_make_the_js_tooling_a_stack(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    plan.stack = ["python", "javascript"]
    assert [(s.name, s.root) for s in stacks_of(ctx, plan)] == [("python", "."), ("node", ".")]


def test_the_projects_manifests_choose_its_stack_when_the_plan_names_none(tmp_path, shared_cache):
    ctx, plan = enhance(tmp_path, shared_cache)
    plan.files, plan.stack = ["README.md"], []  # a plan that lists only what it changes
    assert [(s.name, s.root) for s in stacks_of(ctx, plan)] == [("python", ".")]
