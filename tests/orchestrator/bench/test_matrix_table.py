"""The ``matrix run`` table says which builds were tampered with or broken, not only
``results.json``.

A real ``cadillac matrix run`` over two tasks of the small matrix, built at once: in one
the program forges the scorer's output the moment it is imported (a perfect report line
on every descriptor, then exit 0); in the other it exits silently, so the hidden-check
runner used to print no result. Both now score 0 as ordinary builds whose checks all
failed: the judge never imports the project (the child that does dies at import, failing
every check it was asked) and reads only the result line it signed itself, so neither the
forged lines nor the early exit reach the verdict, and no row is flagged. (An honest
build's table, without flags, is ``test_matrix.py::test_matrix_run_command``: an honest
build takes three times as long as these.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.fakes.improve_policies import wordfreq

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
FORGER = "scripted:tests.orchestrator.bench.test_matrix_table:forger"
MARK = "(and keep the output short)"
FORGE = (
    "\nimport json as _j, os as _o\n"
    "_line = _j.dumps({'passed': 9, 'failed': 0, 'total': 9, 'failures': [],"
    " 'passed_checks': []}) + '\\n'\n"
    "for _fd in range(64):\n"
    "    try:\n        _o.write(_fd, _line.encode())\n    except OSError:\n        pass\n"
    "_o._exit(0)\n"
)
SILENT = "\nimport os as _o\n_o._exit(0)\n"


def forger(messages, tools):
    """The demo's wordfreq builder, whose program forges a score when the task's prompt
    carries MARK, and otherwise exits silently when imported."""
    answer = wordfreq.policy(messages, tools)
    tail = FORGE if MARK in json.dumps(messages) else SILENT
    for call in answer.get("tool_calls", []) if tools else []:
        if call["arguments"].get("content") == wordfreq.PROGRAM:
            call["arguments"] = {**call["arguments"], "content": wordfreq.PROGRAM + tail}
    return answer


def test_a_forged_report_and_an_early_exit_score_0_as_failed_checks(home, tmp_path, capsys):
    matrix = tmp_path / "matrix"
    for name in ("wf-a", "wf-b"):
        shutil.copytree(SMALL / name, matrix / name)
    toml = matrix / "wf-b" / "task.toml"
    toml.write_text(toml.read_text().replace('tests"\n', f'tests {MARK}"\n', 1))
    assert MARK in toml.read_text()

    args = ["matrix", "run", "--matrix", str(matrix), "--model", FORGER, "--no-learn"]
    assert main([*args, "--split", "train", "--jobs", "2"]) == 0
    out = capsys.readouterr()
    rows = {line.split()[1]: line for line in out.out.splitlines() if "wf-" in line[:8]}
    assert set(rows) == {"wf-a", "wf-b"}, out.out
    assert all(row.split("│")[-2].strip() == "-" for row in rows.values()), rows
    assert all(" 0.00 " in row for row in rows.values()), rows
    assert not [line for line in out.out.splitlines() if line.startswith(("tampered:", "broken:"))]
    assert "wf-a #1: score 0.00" in out.err and "wf-b #1: score 0.00" in out.err, out.err
    assert "TAMPERED" not in out.err and "BROKEN" not in out.err, out.err


BREAKER = "scripted:tests.orchestrator.bench.test_matrix_table:breaker"
BREAK = (
    "\nimport os as _o\ntry:\n    _o.symlink('/etc/hostname', 'planted-link')\n"
    "    if _o.path.isfile('requirements.txt'):\n"
    "        open('requirements.txt', 'w').write('evil-1.0.tar.gz\\n')\n"
    "except OSError:\n    pass\n"
)


def breaker(messages, tools):
    """The demo's wordfreq builder, whose program, when run in its folder, leaves a link
    there and names an archive in the build's requirements.txt."""
    answer = wordfreq.policy(messages, tools)
    for call in answer.get("tool_calls", []) if tools else []:
        if call["arguments"].get("content") == wordfreq.PROGRAM:
            call["arguments"] = {**call["arguments"], "content": wordfreq.PROGRAM + BREAK}
    return answer


def test_a_build_the_judge_cannot_set_up_is_flagged_broken_in_the_table(home, tmp_path, capsys):
    """A workspace whose requirements.txt names an archive cannot be set up: the row is flagged
    ``broken``, a line says why, results.json records the verdict, and the link the
    program left was not copied for the judge. (``tampered`` needs a signed report whose
    canaries came out wrong; with the runner out of the project's process no project can
    produce one, so no scripted build here can make that row.)"""
    matrix = tmp_path / "matrix"
    shutil.copytree(SMALL / "wf-a", matrix / "wf-a")
    args = ["matrix", "run", "--matrix", str(matrix), "--model", BREAKER, "--no-learn"]
    assert main([*args, "--split", "train"]) == 0
    out = capsys.readouterr()
    row = next(line for line in out.out.splitlines() if "wf-a" in line[:8])
    assert "broken" in row.split("│")[-2], out.out
    assert [line for line in out.out.splitlines() if line.startswith("broken:")], out.out
    results = json.loads(next(home.glob("**/results.json")).read_text())
    assert '"broken"' in json.dumps(results), results
    assert [p for p in home.glob("runs/*/workspace/planted-link") if p.is_symlink()]
    assert not [p for p in home.glob("runs/*/scoring/**/planted-link") if p.is_symlink()]
