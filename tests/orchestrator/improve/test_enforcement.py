"""What the improver may patch decides none of the rules: network, sandbox, git, memory.

The improve cycle patches the modules of its allow-list (``improve/proposals.py``) and
keeps a patch when the matrix score lifts; a patch that switched the sandbox off, gave a
command the network, ran git itself, wrote memory past the guard or put unfenced memory in
a prompt would be kept if it scored. So every module that is still patchable is read here
(its syntax tree, not its text) for the ways such a decision could be made, and each rule
is checked to find a planted violation, so none of them passes by finding nothing. (A
network grant of a patchable module's own is ``test_grant_out_of_reach``'s rule.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.improve.proposals import DEFAULT_ALLOW, NEVER

ROOT = Path(__file__).resolve().parents[3]

ENFORCING = (
    "orchestrator/loop/learning.py",  # memory admission: the guard, the sinks
    "orchestrator/loop/memory_view.py",  # what memory a prompt carries, fenced
    "orchestrator/loop/memory_tool.py",  # what a model may change in memory
    "orchestrator/loop/source.py",  # where an enhance build's project comes from, commits
    "orchestrator/loop/runs.py",  # the records the judge and the spend books read
    "phases/deps.py",  # the fresh environment before the network installs
    "orchestrator/sandbox/",  # bubblewrap, limits, installs, the git runner, egress
    "orchestrator/bench/",  # the judge
    "orchestrator/improve/",  # the cycle and its decision
    "memory/",  # the stores and the guard
)

PROCESS_MODULES = {"subprocess", "socket", "ctypes", "multiprocessing", "pty", "pexpect"}
"""Starting programs or opening connections: only the sandbox layer does that."""
OS_PROCESS_CALLS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "setuid"}
OS_PROCESS_PREFIXES = ("exec", "spawn", "posix_spawn")
SANDBOX_NAMES = {"ExecConfig", "Bubblewrap", "Unsandboxed", "executor_for", "egress"}
"""Making or choosing an executor: the user's configuration does, through the build config."""
MEMORY_STORES = {"MemoryStore", "PhaseBudgets", "Notebook", "SkillBook"}
"""Opening a store: ``learning.py`` (writes) and ``memory_view.py`` (what prompts read) do."""
PROMPT_MEMORY = {"format_for_prompt", "recall"}
STORE_READS = {"relevant", "match", "catalog", "all", "load"}
STORE_HOLDERS = ("store", "notebook", "skillbook", "history", "budgets")
"""Choosing and formatting memory for a prompt (or a tool's answer): ``memory_view.py`` does."""


def patchable() -> list[str]:
    out = []
    for folder in DEFAULT_ALLOW:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith(NEVER):
                out.append(name)
    return out


def violations(source: str) -> list[str]:
    """Each way ``source`` decides one of the rules, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names]
            modules = names if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in PROCESS_MODULES:
                    found.append(f"{line}: imports {module}")
                if module.startswith("orchestrator.sandbox.git"):
                    found.append(f"{line}: imports {module}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and (
                node.attr in OS_PROCESS_CALLS or node.attr.startswith(OS_PROCESS_PREFIXES)
            ):
                found.append(f"{line}: os.{node.attr}")
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called in SANDBOX_NAMES | MEMORY_STORES:
                found.append(f"{line}: calls {called}")
            holder = ast.unparse(func.value).lower() if isinstance(func, ast.Attribute) else ""
            if called in PROMPT_MEMORY or (
                called in STORE_READS and any(h in holder for h in STORE_HOLDERS)
            ):
                found.append(f"{line}: calls {called} (memory for a prompt)")
            for kw in node.keywords:
                if kw.arg == "update" and "sandbox" in ast.unparse(kw.value):
                    found.append(f"{line}: changes the sandbox setting")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                text = ast.unparse(target)
                if text.endswith((".sandbox", ".executor", ".network")) or "executor." in text:
                    found.append(f"{line}: assigns {text}")
        elif isinstance(node, ast.Constant) and node.value == "git":
            found.append(f"{line}: names the git program")
    return found


def test_the_modules_that_enforce_a_rule_are_never_patched():
    for name in ENFORCING:
        assert name.startswith(NEVER), f"{name} is patchable"
    assert patchable(), "nothing patchable was found: the allow-list moved"
    assert "orchestrator/loop/agent.py" in patchable()


@pytest.mark.parametrize("name", patchable())
def test_a_patchable_module_decides_no_rule(name):
    assert violations((ROOT / name).read_text(encoding="utf-8")) == []


PLANTED = {
    "import subprocess": "imports subprocess",
    "from socket import socket": "imports socket",
    "os.system('id')": "os.system",
    "os.execv('/bin/sh', [])": "os.execv",
    "config = ExecConfig(sandbox='none')": "calls ExecConfig",
    "c = cfg.model_copy(update={'sandbox': 'none'})": "changes the sandbox setting",
    "self.config.executor.sandbox = 'none'": "assigns self.config.executor.sandbox",
    "store = MemoryStore(path)": "calls MemoryStore",
    "tips = self.skillbook.match(task, tags)": "calls match",
    "text = format_for_prompt(lessons, 100)": "calls format_for_prompt",
    "hits = store.recall(task)": "calls recall",
    "argv = ['git', 'status']": "names the git program",
    "from orchestrator.sandbox.git import run_git": "imports orchestrator.sandbox.git",
}


@pytest.mark.parametrize("source", sorted(PLANTED))
def test_each_rule_finds_a_planted_violation(source):
    found = violations(source)
    assert any(PLANTED[source] in f for f in found), found


def test_reading_a_result_and_forwarding_no_network_pass():
    source = "r = run(cmd, network=False)\nx = result.exit_code\nm = re.match(p, s)\n"
    assert violations(source + "from memory import MemoryStore\n") == []
