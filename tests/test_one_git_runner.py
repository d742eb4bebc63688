"""One git runner: no module but ``orchestrator/sandbox/git.py`` starts git.

Every other module's git goes through it, so the safety flags, the scrubbed environment
and the guard against nested repositories cannot be skipped by a module that builds its
own command line (``build/`` and ``phases/`` are patched by the improve cycle; the runner
sits in the sandbox layer, which is never patched). Checked on the source: a list or tuple
whose first item is ``"git"``, or a string starting ``"git "`` handed to a call that starts
a process (``Literal["git", ...]`` is a type, not a command).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "orchestrator" / "sandbox" / "git.py"
STARTERS = {"run", "Popen", "call", "check_call", "check_output", "system", "popen", "execvp"}


def git_starts(source: str) -> list[int]:
    """The lines of ``source`` that start git themselves."""
    tree = ast.parse(source)
    types = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # Literal[...]
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple) and node.elts and id(node) not in types:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                lines.append(node.lineno)
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            for arg in node.args if name in STARTERS else []:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("git "):
                    lines.append(node.lineno)
    return sorted(lines)


def test_no_module_but_the_sandbox_runner_starts_git():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in ("orchestrator", "phases", "memory")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != RUNNER
        for line in git_starts(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"git started outside orchestrator/sandbox/git.py: {', '.join(found)}"


def test_the_check_finds_a_planted_git_command():
    planted = 'import os\nsubprocess.run(["git", "-C", "x", "status"])\nos.system("git log")\n'
    assert git_starts(planted) == [2, 3]
    assert git_starts(RUNNER.read_text(encoding="utf-8"))  # the runner itself does
