"""No module the improver may patch can give a command the network.

The network (with one install program's settings) is granted by an install step that
:func:`orchestrator.sandbox.installs.install_steps` issued, run through ``run_command(...,
install=step)``. A patch kept for its score could still try the ways around that: pass a
``network=`` or ``package_config=`` keyword to an executor's ``run`` (or those names in a
``**`` mapping), or mint a step with the issuing helper or its registry. Each patchable
module's syntax tree is read for those; each rule is shown to find a planted violation,
so none passes by finding nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.improve.proposals import DEFAULT_ALLOW, NEVER

ROOT = Path(__file__).resolve().parents[3]
GRANT_KEYWORDS = {"network", "package_config"}
GRANT_NAMES = {"_issue", "_ISSUED", "check_issued"}
RECORD = "emit"


def patchable() -> list[str]:
    return [
        name
        for folder in DEFAULT_ALLOW
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not (name := path.relative_to(ROOT).as_posix()).startswith(NEVER)
    ]


def grants(source: str) -> list[str]:
    """Each place ``source`` grants the network itself, as ``line: what``."""
    found = []
    tree = ast.parse(source)
    records = {  # a record's fields (``self.emit("command", network=...)``) grant nothing
        id(k)
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == RECORD
        for k in call.keywords
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in GRANT_KEYWORDS:
            if id(node) not in records:
                found.append(f"{node.value.lineno}: keyword {node.arg}=")
        elif isinstance(node, ast.Constant) and node.value in GRANT_KEYWORDS:
            found.append(f"{node.lineno}: the name {node.value!r}")  # **{"network": True}
        elif isinstance(node, ast.Attribute) and node.attr in GRANT_NAMES:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in GRANT_NAMES:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in GRANT_NAMES:
            found.append(f"{getattr(node, 'lineno', 0)}: import {node.name}")
    return found


def test_there_are_patchable_modules_to_read():
    assert "orchestrator/loop/agent.py" in patchable()
    assert "phases/base.py" in patchable()
    assert "phases/deps.py" not in patchable()


@pytest.mark.parametrize("module", patchable())
def test_a_patchable_module_grants_no_network(module):
    assert grants((ROOT / module).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "planted",
    [
        "run_command(cmd, ws, cfg, network=True)",
        "executor_for(cfg).run(cmd, ws, package_config='pip')",
        "from orchestrator.sandbox.installs import _issue",
        "installs._ISSUED[id(step)] = step",
        "step = _issue(InstallStep('x', 'curl x', True, 'pip'))",
        "run_command(cmd, ws, cfg, **{'network': True})",
        "kw = dict(package_config='pip')",
    ],
)
def test_the_rule_finds_a_planted_grant(planted):
    assert grants(planted) != []


def test_a_records_network_field_is_not_a_grant():
    assert grants('self.emit("command", network=bool(install and install.network))') == []
