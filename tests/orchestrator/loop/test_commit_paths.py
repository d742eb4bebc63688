"""What a phase's commit takes: each path by name, the project's ignore rules kept, and what
cadillac's own commands left out (orchestrator/loop/products.py)."""

from __future__ import annotations

from orchestrator.loop import source as sources
from orchestrator.loop.products import Products


def test_odd_names_ignored_folders_and_cadillacs_leftovers(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".gitignore").write_text(".venv/\nnode_modules\n")
    (project / "keep.py").write_text("x = 1\n")
    run = tmp_path / "run"
    (run / "workspace").mkdir(parents=True)
    ws = run / "workspace"
    source = sources.prepare(project, ws, run, "r1")
    products = Products(ws, run, sources.NOT_THE_CHANGE)
    (ws / ".venv").mkdir()
    (ws / ".venv" / "x").write_text("env")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "y.js").write_text("module")
    with products.watch():  # as cadillac's install would
        (ws / "package-lock.json").write_text("{}")
        (ws / "keep.py").write_text("x = 2\n")  # a tracked file an install rewrote
    odd = ["a name with spaces.py", ":(glob)*.py", "new\nline.py", "-rf.py", "ünï.py"]
    for name in odd:
        (ws / name).write_text("pass\n")
    head, left = sources.commit(source, ws, "phase", products=products.of)
    assert sorted(left) == ["keep.py", "package-lock.json"]
    changed = sources.changed_files(source, ws)
    assert sorted(changed) == sorted(odd)  # each by name, no pathspec magic read into one
    assert head != source.base
    # the model writes keep.py with its tools: it is the model's change from then on
    (ws / "keep.py").write_text("x = 3\n")
    products.claim("./keep.py")
    _, left = sources.commit(source, ws, "phase 2", products=products.of)
    assert left == ["package-lock.json"]
    assert "keep.py" in sources.changed_files(source, ws)
