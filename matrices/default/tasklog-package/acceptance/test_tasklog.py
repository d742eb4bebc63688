"""Hidden checks for tasklog-package: the entry point, the commands and the packaging."""

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile

import tasklog
from tasklog import cli

ROOT = os.getcwd()


def _main(db, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--db", db, *args])
    return code, out.getvalue(), err.getvalue()


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
        return handle.read()


def test_pyproject_declares_the_script():
    text = _pyproject()
    try:
        import tomllib
    except ImportError:  # Python < 3.11: read the table by hand
        assert re.search(r"^\[project\.scripts\]", text, re.M)
        assert re.search(r"""^tasklog\s*=\s*["']tasklog\.cli:main["']""", text, re.M)
        assert re.search(r"""^name\s*=\s*["']tasklog["']""", text, re.M)
        return
    project = tomllib.loads(text)["project"]
    assert project["name"] == "tasklog"
    assert project["version"] == "0.1.0"
    assert project["scripts"]["tasklog"] == "tasklog.cli:main"


def test_package_version():
    assert tasklog.__version__ == "0.1.0"


def test_add_and_list():
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "tasks.json")
        assert _main(db, "list") == (0, "no tasks\n", "")
        assert _main(db, "add", "buy", "milk") == (0, "added 1: buy milk\n", "")
        assert _main(db, "add", "write report") == (0, "added 2: write report\n", "")
        code, out, _ = _main(db, "list")
        assert code == 0
        assert out.splitlines() == ["[ ] 1 buy milk", "[ ] 2 write report"]


def test_done_and_pending_filter():
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "tasks.json")
        for text in ("one", "two", "three"):
            _main(db, "add", text)
        assert _main(db, "done", "2") == (0, "done 2\n", "")
        assert _main(db, "list")[1].splitlines() == ["[ ] 1 one", "[x] 2 two", "[ ] 3 three"]
        assert _main(db, "list", "--pending")[1].splitlines() == ["[ ] 1 one", "[ ] 3 three"]


def test_remove_never_reuses_ids():
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "tasks.json")
        _main(db, "add", "first")
        _main(db, "add", "second")
        assert _main(db, "remove", "2") == (0, "removed 2\n", "")
        assert _main(db, "add", "third") == (0, "added 3: third\n", "")
        assert _main(db, "list")[1].splitlines() == ["[ ] 1 first", "[ ] 3 third"]


def test_unknown_id_is_an_error():
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "tasks.json")
        _main(db, "add", "only")
        for command in ("done", "remove"):
            code, out, err = _main(db, command, "7")
            assert code == 1 and out == ""
            assert err.strip() == "error: no task 7"


def test_env_default_and_python_dash_m():
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "env-tasks.json")
        env = dict(os.environ, TASKLOG_DB=db)
        for args in (["add", "from", "env"], ["list"]):
            proc = subprocess.run(
                [sys.executable, "-m", "tasklog", *args],
                capture_output=True,
                text=True,
                timeout=30,
                cwd=ROOT,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == ["[ ] 1 from env"]
        assert os.path.exists(db)
