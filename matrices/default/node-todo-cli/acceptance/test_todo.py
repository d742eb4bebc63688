"""Hidden checks for node-todo-cli: `node todo.js` run with argv, a list file and its env."""

import json
import os
import subprocess
import tempfile

ROOT = os.getcwd()
TODO = os.path.join(ROOT, "todo.js")


def _run(args, store, cwd=None, env=None):
    """`node todo.js ARGS` with TODO_FILE=store (no TODO_FILE when store is None)."""
    environment = {k: v for k, v in os.environ.items() if k != "TODO_FILE"}
    if store is not None:
        environment["TODO_FILE"] = store
    environment.update(env or {})
    return subprocess.run(
        ["node", TODO, *args],
        cwd=cwd or ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=15,
    )


def _ok(args, store):
    proc = _run(args, store)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    return proc.stdout


def _read(store):
    with open(store, encoding="utf-8") as handle:
        return json.load(handle)


def _fresh():
    folder = tempfile.mkdtemp()
    return os.path.join(folder, "list.json")


def test_add_numbers_items_and_writes_the_file():
    store = _fresh()
    assert _ok(["add", "buy", "milk"], store) == "added 1: buy milk\n"
    assert _ok(["add", "  call   mum "], store) == "added 2: call   mum\n"
    assert _read(store) == [
        {"id": 1, "text": "buy milk", "done": False},
        {"id": 2, "text": "call   mum", "done": False},
    ]


def test_list_shows_pending_items_and_all_with_a_flag():
    store = _fresh()
    for text in ("one", "two", "three"):
        _ok(["add", text], store)
    assert _ok(["done", "2"], store) == "done 2: two\n"
    assert _ok(["list"], store) == "[ ] 1 one\n[ ] 3 three\n"
    assert _ok(["list", "--all"], store) == "[ ] 1 one\n[x] 2 two\n[ ] 3 three\n"
    assert _ok(["done", "2"], store) == "done 2: two\n"


def test_a_missing_file_is_an_empty_list_and_reading_writes_nothing():
    store = _fresh()
    assert _ok(["list"], store) == ""
    assert _ok(["list", "--all"], store) == ""
    assert not os.path.exists(store)


def test_remove_and_clear_and_ids_follow_the_largest():
    store = _fresh()
    for text in ("a", "b", "c", "d"):
        _ok(["add", text], store)
    assert _ok(["remove", "4"], store) == "removed 4: d\n"
    assert _ok(["add", "e"], store) == "added 4: e\n"
    _ok(["done", "1"], store)
    _ok(["done", "3"], store)
    assert _ok(["clear"], store) == "cleared 2\n"
    assert [item["id"] for item in _read(store)] == [2, 4]
    assert _ok(["clear"], store) == "cleared 0\n"


def test_the_default_file_is_todo_json_in_the_current_folder():
    with tempfile.TemporaryDirectory() as folder:
        proc = _run(["add", "here"], None, cwd=folder)
        assert proc.returncode == 0, proc.stderr
        with open(os.path.join(folder, "todo.json"), encoding="utf-8") as handle:
            assert json.load(handle) == [{"id": 1, "text": "here", "done": False}]


def test_an_unknown_item_exits_1_and_changes_nothing():
    store = _fresh()
    _ok(["add", "keep"], store)
    with open(store, "rb") as handle:
        before = handle.read()
    for command in ("done", "remove"):
        proc = _run([command, "7"], store)
        assert proc.returncode == 1, command
        assert proc.stdout == ""
        assert proc.stderr.strip() == "error: no item 7"
    with open(store, "rb") as handle:
        assert handle.read() == before


def test_a_broken_list_file_exits_1_and_is_left_alone():
    for content in ("{not json", '{"id": 1}', '[{"id": "x", "text": 3}]'):
        store = _fresh()
        with open(store, "w", encoding="utf-8") as handle:
            handle.write(content)
        proc = _run(["add", "x"], store)
        assert proc.returncode == 1, content
        assert proc.stdout == "" and proc.stderr.startswith("error: "), content
        with open(store, encoding="utf-8") as handle:
            assert handle.read() == content


def test_usage_errors_exit_2():
    store = _fresh()
    _ok(["add", "x"], store)
    bad = [[], ["fly"], ["add"], ["add", "  "], ["done"], ["done", "x"], ["done", "0"],
           ["done", "-1"], ["remove", "1.5"], ["done", "1", "2"], ["list", "--none"],
           ["clear", "now"]]  # fmt: skip
    for args in bad:
        proc = _run(args, store)
        assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
        assert proc.stdout == "" and proc.stderr.strip(), args
    assert _read(store) == [{"id": 1, "text": "x", "done": False}]
