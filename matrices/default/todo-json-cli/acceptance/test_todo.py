"""Hidden checks for todo-json-cli: the commands, the file, output formats and exit codes."""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.getcwd()


def _run(args, todo_file=None, env_file=None):
    env = {k: v for k, v in os.environ.items() if k != "TODO_FILE"}
    if env_file is not None:
        env["TODO_FILE"] = env_file
    prefix = [] if todo_file is None else ["--file", todo_file]
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "todo.py"), *prefix, *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env=env,
    )


def _ok(args, todo_file):
    proc = _run(args, todo_file)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    return proc.stdout.splitlines()


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _seed(folder):
    path = os.path.join(folder, "todo.json")
    assert _ok(["add", "  buy milk  ", "--tag", "home", "--tag", "shop"], path) == ["added 1"]
    assert _ok(["add", "write report", "--tag", "work"], path) == ["added 2"]
    assert _ok(["add", "call mum"], path) == ["added 3"]
    return path


def test_add_writes_the_specified_json_file():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        data = _read(path)
    assert data == {
        "next_id": 4,
        "items": [
            {"id": 1, "text": "buy milk", "done": False, "tags": ["home", "shop"]},
            {"id": 2, "text": "write report", "done": False, "tags": ["work"]},
            {"id": 3, "text": "call mum", "done": False, "tags": []},
        ],
    }


def test_list_prints_open_items_in_the_exact_format():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        lines = _ok(["list"], path)
    assert lines == ["1 [ ] buy milk #home #shop", "2 [ ] write report #work", "3 [ ] call mum"]


def test_done_and_list_filters():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        assert _ok(["done", "2"], path) == ["done 2"]
        assert _ok(["done", "2"], path) == ["done 2"]
        assert _read(path)["items"][1]["done"] is True
        assert _ok(["list"], path) == ["1 [ ] buy milk #home #shop", "3 [ ] call mum"]
        assert _ok(["list", "--done"], path) == ["2 [x] write report #work"]
        assert _ok(["list", "--all"], path) == [
            "1 [ ] buy milk #home #shop",
            "2 [x] write report #work",
            "3 [ ] call mum",
        ]


def test_list_tag_filter_combines_with_status_filters():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        _ok(["done", "2"], path)
        assert _ok(["list", "--all", "--tag", "work"], path) == ["2 [x] write report #work"]
        assert _ok(["list", "--done", "--tag", "home"], path) == []
        assert _ok(["list", "--tag", "work"], path) == []
        assert _ok(["list", "--tag", "shop"], path) == ["1 [ ] buy milk #home #shop"]


def test_remove_and_ids_are_never_reused():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        assert _ok(["remove", "3"], path) == ["removed 3"]
        assert _ok(["list", "--all"], path) == [
            "1 [ ] buy milk #home #shop",
            "2 [ ] write report #work",
        ]
        assert _ok(["add", "new one"], path) == ["added 4"]
        data = _read(path)
    assert data["next_id"] == 5
    assert [item["id"] for item in data["items"]] == [1, 2, 4]


def test_environment_variable_and_file_option_precedence():
    with tempfile.TemporaryDirectory() as folder:
        env_path = os.path.join(folder, "from-env.json")
        opt_path = os.path.join(folder, "from-option.json")
        proc = _run(["add", "via env"], env_file=env_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == ["added 1"]
        assert _read(env_path)["items"][0]["text"] == "via env"
        proc = _run(["add", "via option"], todo_file=opt_path, env_file=env_path)
        assert proc.returncode == 0, proc.stderr
        assert [i["text"] for i in _read(opt_path)["items"]] == ["via option"]
        assert [i["text"] for i in _read(env_path)["items"]] == ["via env"]
        proc = _run(["list"], env_file=env_path)
        assert proc.stdout.splitlines() == ["1 [ ] via env"]


def test_missing_item_exits_1_and_changes_nothing():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        with open(path, "rb") as handle:
            before = handle.read()
        for command in ("done", "remove"):
            proc = _run([command, "42"], path)
            assert proc.returncode == 1, (command, proc.returncode)
            assert proc.stdout == ""
            assert proc.stderr.strip() == "error: no item 42"
        with open(path, "rb") as handle:
            assert handle.read() == before


def test_usage_errors_exit_2():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        with open(path, "rb") as handle:
            before = handle.read()
        for args in (
            [],
            ["frobnicate"],
            ["done"],
            ["done", "abc"],
            ["remove", "1.5"],
            ["add"],
            ["add", "   "],
            ["list", "--all", "--done"],
        ):
            proc = _run(args, path)
            assert proc.returncode == 2, (args, proc.returncode)
            assert proc.stdout == "", args
            assert proc.stderr.strip(), args
        with open(path, "rb") as handle:
            assert handle.read() == before


def test_missing_file_lists_nothing_and_is_not_created():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "sub-none.json")
        proc = _run(["list", "--all"], path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
        assert not os.path.exists(path)
        proc = _run(["done", "1"], path)
        assert proc.returncode == 1
        assert not os.path.exists(path)


def test_writes_leave_no_temporary_files_behind():
    with tempfile.TemporaryDirectory() as folder:
        path = _seed(folder)
        _ok(["done", "1"], path)
        _ok(["remove", "2"], path)
        assert sorted(os.listdir(folder)) == ["todo.json"]
        assert _read(path)["next_id"] == 4


def test_invalid_json_file_is_an_error_and_stays_unchanged():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "todo.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("{not json")
        for args in (["list"], ["add", "x"]):
            proc = _run(args, path)
            assert proc.returncode == 1, (args, proc.returncode)
            assert proc.stdout == ""
            assert proc.stderr.lstrip().startswith("error:")
        with open(path, encoding="utf-8") as handle:
            assert handle.read() == "{not json"
