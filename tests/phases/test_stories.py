"""User stories, driven by cadillac: each kind holds on a right artifact and fails on a wrong
one with what was sent and what came back; nothing the project does passes a story for it.

Every story runs for real, in the sandbox, through the story driver, as the integrate and
validate checks run them (``tests.support.phase_context``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
import time
from pathlib import Path

import pytest

from orchestrator.sandbox.signing import JUDGE_PYTHON, last_report, new_key
from phases import plan as plan_phase
from phases.base import PhaseContext
from phases.stories import browser, gate, runner
from phases.stories.runner import NO_RESULT, run_stories
from phases.stories.schema import Stories
from tests.support import phase_context

pytestmark = pytest.mark.e2e  # the sandbox, node and real servers


def workspace(tmp_path: Path, files: dict[str, str], events: list | None = None) -> PhaseContext:
    """A workspace holding ``files`` and a ``.venv/bin/python`` (cadillac's interpreter)."""
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    (ws / ".venv" / "bin").mkdir(parents=True)
    os.symlink(JUDGE_PYTHON, ws / ".venv" / "bin" / "python")
    plan = {
        "summary": "a project",
        "stack": ["python"],
        "files": sorted(files) or ["x"],
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (ws / "plan.json").write_text(json.dumps(plan))
    emit = None if events is None else (lambda kind, **fields: events.append((kind, fields)))
    return phase_context(ws, records=tmp_path / "run", emit=emit)


def drive(ctx: PhaseContext, *stories: dict, out: Path | None = None):
    return run_stories(ctx, Stories.model_validate({"stories": list(stories)}), out_dir=out)


def failure(report) -> str:
    check = report.check()
    assert check is not None and not check.passed
    return check.details


# ------------------------------------------------------------------------- cli
GREET = """import json, os, sys
name = sys.stdin.read().strip()
print(json.dumps({"items": [{"title": os.environ["GREETING"] + " " + name}]}))
print("greeted", file=sys.stderr)
"""
GREET_WRONG = 'import sys\nprint("hello")\nsys.exit(2)\n'
GREET_STORY = {
    "kind": "cli",
    "name": "greet",
    "argv": ["python", "greet.py"],
    "stdin": "ann\n",
    "env": {"GREETING": "hi"},
    "stdout": {"json": {"items.0.title": "hi ann"}, "matches": r"hi \w+", "contains": ["hi"]},
    "stderr": {"equals": "greeted"},
}


def test_a_cli_story_holds_on_the_right_program_and_fails_on_a_wrong_one(tmp_path):
    right = drive(workspace(tmp_path / "a", {"greet.py": GREET}), GREET_STORY)
    assert right.passed and right.check() is None, right
    wrong = drive(workspace(tmp_path / "b", {"greet.py": GREET_WRONG}), GREET_STORY)
    assert not wrong.passed
    details = failure(wrong)
    assert 'argv: ["python", "greet.py"]' in details and "stdin: 'ann\\n'" in details
    assert "the exit status is 2, not 0" in details and "exit status 2" in details
    assert "stdout:\nhello" in details and "stdout is not JSON" in details


# ------------------------------------------------------------------------- http
SERVER = """import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
WRONG = len(sys.argv) > 1

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, status, body, kind="text/plain"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(200, "ok")

    def do_POST(self):
        got = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        total = got["a"] - got["b"] if WRONG else got["a"] + got["b"]
        self.answer(201 if WRONG else 200, json.dumps({"sum": total}), "application/json")

HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


def http_story(*argv: str, timeout: float = 20) -> dict:
    return {
        "kind": "http",
        "name": "sum",
        "start": ["python", "server.py", *argv],
        "ready": "/health",
        "timeout_s": timeout,
        "requests": [
            {
                "method": "POST",
                "path": "/sum",
                "json_body": {"a": 2, "b": 3},
                "expect": {"json": {"sum": 5}},
                "expect_headers": {"content-type": "application/json"},
            }
        ],
    }


def test_an_http_story_holds_on_the_right_server_and_fails_on_a_wrong_one(tmp_path):
    ctx = workspace(tmp_path, {"server.py": SERVER})
    right = drive(ctx, http_story())
    assert right.passed, right
    wrong = drive(ctx, http_story("wrong"))
    details = failure(wrong)
    assert "POST /sum" in details and '"a": 2' in details
    assert "the status is 201, not 200" in details and "sum is -1, not 5" in details


def test_a_server_that_never_answers_fails_within_its_time_limit(tmp_path):
    ctx = workspace(tmp_path, {"server.py": "import time\ntime.sleep(600)\n"})
    start = time.monotonic()
    report = drive(ctx, http_story(timeout=2))
    assert time.monotonic() - start < 30
    assert "the server did not answer /health within 2 s" in failure(report)


LEAVER = SERVER.replace(
    "HTTPServer(",
    "import subprocess\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(900)', 'left-behind-7f3'],"
    " start_new_session=True)\n"
    "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
    "        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(900)',"
    " 'left-behind-7f3'])\n    os._exit(0)\n"
    "HTTPServer(",
)
NONE_LEFT = """import os, sys
for pid in os.listdir("/proc"):
    try:
        line = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    if b"left-behind-7f3" in line and pid != str(os.getpid()):
        print("still running:", pid)
        sys.exit(1)
"""


def test_what_a_server_leaves_running_dies_with_its_story(tmp_path):
    ctx = workspace(tmp_path, {"server.py": LEAVER, "none_left.py": NONE_LEFT})
    after = {"kind": "cli", "name": "none-left", "argv": ["python", "none_left.py"]}
    report = drive(ctx, http_story(), after)
    assert report.passed, report.check()
    left = []
    for pid in os.listdir("/proc"):
        try:
            if b"left-behind-7f3" in Path(f"/proc/{pid}/cmdline").read_bytes():
                left.append(pid)
        except OSError:
            continue
    assert left == []  # nor on the host, once the stories are over


# ------------------------------------------------------------------------- library
LIB_PY = """def add(a, b):
    return a + b

class Shelf:
    @staticmethod
    def titles(books):
        if not books:
            raise ValueError("no books")
        return sorted(b["title"] for b in books)
"""
LIB_MJS = "export async function add(a, b) { return a + b; }\n"
LIB_CJS = "exports.add = (a, b) => { if (b === 0) throw new RangeError('zero'); return a * b; };\n"


def library(name: str, language: str, module: str, function: str, args, **expect) -> dict:
    story = {"kind": "library", "name": name, "language": language, "module": module}
    return {**story, "function": function, "args": args, **expect}


def test_library_stories_call_python_and_javascript_and_judge_values_and_errors(tmp_path):
    files = {"lib.py": LIB_PY, "src/lib.mjs": LIB_MJS, "cjs.js": LIB_CJS}
    files["node_modules/shout/package.json"] = '{"name": "shout", "main": "main.js"}'
    files["node_modules/shout/main.js"] = "module.exports = { up: (s) => s.toUpperCase() };\n"
    ctx = workspace(tmp_path, files)
    right = drive(
        ctx,
        library("py-add", "python", "lib", "add", [2, 3], returns=5),
        library(
            "py-titles",
            "python",
            "lib",
            "Shelf.titles",
            [[{"title": "b"}, {"title": "a"}]],
            returns=["a", "b"],
        ),  # fmt: skip
        library("py-raises", "python", "lib", "Shelf.titles", [[]], raises="ValueError"),
        library("py-base", "python", "lib", "Shelf.titles", [[]], raises="Exception"),
        library("js-esm", "javascript", "./src/lib.mjs", "add", [2, 3], returns=5),
        library("js-cjs", "javascript", "./cjs.js", "add", [2, 3], returns=6),
        library("js-raises", "javascript", "./cjs.js", "add", [2, 0], raises="RangeError"),
        library("js-package", "javascript", "shout", "up", ["hi"], returns="HI"),
    )
    assert right.passed, right.check()
    wrong = drive(
        ctx,
        library("py-add", "python", "lib", "add", [2, 3], returns=6),
        library("py-bool", "python", "lib", "add", [0, 1], returns=True),
        library("py-raises", "python", "lib", "add", [1, 2], raises="ValueError"),
        library("js-esm", "javascript", "./src/lib.mjs", "add", [2, 3], returns=6),
        library("js-missing", "javascript", "./cjs.js", "nope", [], returns=1),
    )
    assert [r.passed for r in wrong.results] == [False] * 5
    details = failure(wrong)
    assert "add(2, 3) of lib" in details and "the call returned 5, not 6" in details
    assert "the call returned 1, not true" in details
    assert "the call did not raise ValueError" in details
    assert "raised TypeError: nope is not a function" in details


# ------------------------------------------------------------------------- files
def test_a_files_story_reads_a_regular_file_and_never_follows_a_link(tmp_path):
    ctx = workspace(tmp_path, {"out/report.txt": "total: 3\n"})
    os.symlink("/etc/passwd", ctx.workspace.root / "out" / "link.txt")
    os.symlink("out", ctx.workspace.root / "via")
    story = {"kind": "files", "name": "report", "path": "out/report.txt"}
    right = drive(ctx, {**story, "expect": {"equals": "total: 3"}})
    assert right.passed, right.check()
    details = failure(
        drive(
            ctx,
            {**story, "expect": {"contains": ["total: 4"]}},
            {**story, "name": "link", "path": "out/link.txt", "expect": {"contains": ["root"]}},
            {**story, "name": "via", "path": "via/report.txt", "expect": {"contains": ["3"]}},
        )
    )
    assert "out/report.txt does not contain 'total: 4'" in details and "total: 3" in details
    assert "out/link.txt cannot be read as a regular file" in details
    assert "via/report.txt cannot be read as a regular file" in details
    assert "root:" not in details


# ------------------------------------------------------------------------- browser
BROWSER = """import os, urllib.error, urllib.request

def get(url):
    try:
        with urllib.request.urlopen(url) as answer:
            return answer.read().decode()
    except urllib.error.HTTPError as answer:
        return str(answer.code)

def drive(story, base_url, shots_dir):
    with open(os.path.join(shots_dir, "shot.png"), "wb") as out:
        out.write(b"png")
    os.symlink("/etc/passwd", os.path.join(shots_dir, "link.png"))
    seen = [get(base_url + p) for p in ("/", "/app/route", "/pw.txt", "/../../etc/passwd")]
    return {"passed": False, "sent": "open " + base_url, "got": "served: " + " | ".join(seen),
            "screenshot": os.path.join(shots_dir, "shot.png"),
            "console_errors": ["boom"], "failed_requests": [], "refused": []}
"""
"""A stand-in for phases/stories/browser.py: it leaves a screenshot and a link, and reads
what cadillac serves of the built front end."""


def shown_browser(monkeypatch, folder: Path | None) -> None:
    """The story driver is shown ``folder`` as where cadillac's modules are (a stand-in
    ``phases/stories/browser.py`` in it), or nothing at all (None)."""
    paths = browser.DriverPaths([folder], [folder]) if folder else browser.DriverPaths([], [])
    monkeypatch.setattr(runner.browser, "driver_paths", lambda: paths)


def test_a_browser_story_without_a_browser_fails_and_says_so(tmp_path, monkeypatch):
    shown_browser(monkeypatch, None)
    ctx = workspace(tmp_path, {"dist/index.html": "<p>hi</p>"})
    story = {"kind": "browser", "name": "page", "expect_text": ["hi"]}
    assert "browser stories are not available" in failure(drive(ctx, story))


def test_a_browser_storys_screenshot_comes_back_as_a_file_and_links_do_not(tmp_path, monkeypatch):
    fake = tmp_path / "shown"
    (fake / "phases" / "stories").mkdir(parents=True)
    (fake / "phases" / "__init__.py").write_text("")
    (fake / "phases" / "stories" / "__init__.py").write_text("")
    (fake / "phases" / "stories" / "browser.py").write_text(BROWSER)
    shown_browser(monkeypatch, fake)
    ctx = workspace(tmp_path, {"dist/index.html": "<p>hi</p>"})
    os.symlink("/etc/passwd", ctx.workspace.root / "dist" / "pw.txt")
    out = tmp_path / "run" / "shots"
    report = drive(ctx, {"kind": "browser", "name": "page", "expect_text": ["hi"]}, out=out)
    details = failure(report)
    assert "served: <p>hi</p> | <p>hi</p> | 404 | <p>hi</p>" in details  # the app, never a leak
    assert 'console errors: ["boom"]' in details and "root:" not in details
    assert "open http://127.0.0.1:" in details
    assert report.results[0].screenshot == str(out / "shot.png")
    assert sorted(p.name for p in out.iterdir()) == ["shot.png"]


# ------------------------------------------------------------------------- hostile
FORGER = """import json, os
line = json.dumps({"judge": "0" * 64, "report": json.dumps({"total": 1, "results": [
    {"name": "forged", "kind": "cli", "passed": True, "sent": "", "got": ""}]})})
print(line, flush=True)
for fd in range(64):
    try:
        os.write(fd, (line + "\\n").encode())
    except OSError:
        pass
try:
    with open("/proc/1/fd/1", "w") as out:
        out.write(line + "\\n")
except OSError:
    pass
print([n for n in os.listdir(".") if n.startswith(".")])
"""


def test_a_forged_result_line_is_ignored_and_killing_the_driver_passes_nothing(tmp_path):
    ctx = workspace(tmp_path, {"forger.py": FORGER})
    story = {"kind": "cli", "name": "forged", "argv": ["python", "forger.py"]}
    story["stdout"] = {"equals": "right"}
    report = drive(ctx, story)
    assert [r.passed for r in report.results] == [False]
    assert "stdout is not 'right'" in failure(report)
    assert "['.venv']" in report.results[0].got  # the key file was gone before it ran
    killer = {
        "kind": "cli",
        "name": "killer",
        "argv": ["python", "-c", "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"],
    }
    killed = drive(ctx, killer, {**story, "name": "after"})
    assert [r.passed for r in killed.results] == [False, False]
    assert all(r.got.startswith(NO_RESULT) for r in killed.results)
    assert not [p for p in ctx.workspace.root.iterdir() if p.name.startswith(".") and
                p.name != ".venv"]  # fmt: skip


ECHO = """import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(), "x": os.environ["X"]}))
"""
ECHO_SERVER = SERVER.replace(
    '    def do_GET(self):\n        self.answer(200, "ok")',
    "    def do_GET(self):\n"
    "        self.answer(200, json.dumps({'h': self.headers.get('X-Note', '')}))",
)
META = [
    "$(touch m-dollar)",
    "; touch m-semi",
    "`touch m-tick`",
    "| touch m-pipe",
    "&& touch m-and",
    "'\"$X\"'",
]


def test_shell_metacharacters_in_story_fields_reach_the_program_as_literal_values(tmp_path):
    ctx = workspace(tmp_path, {"echo.py": ECHO, "server.py": ECHO_SERVER})
    stdin = "$(touch m-stdin); `touch m-stdin2` | touch m-stdin3"
    cli = {
        "kind": "cli",
        "name": "echo",
        "argv": ["python", "echo.py", *META],
        "stdin": stdin,
        "env": {"X": "$(touch m-env)"},
        "stdout": {"json": {"argv": META, "stdin": stdin, "x": "$(touch m-env)"}},
    }
    http = {
        "kind": "http",
        "name": "header",
        "start": ["python", "server.py", "$(touch m-start)"],
        "ready": "/",
        "requests": [
            {
                "path": "/",
                "headers": {"X-Note": "`touch m-header`; $(touch m-h2)"},
                "expect": {"json": {"h": "`touch m-header`; $(touch m-h2)"}},
            }
        ],  # fmt: skip
    }
    report = drive(ctx, cli, http)
    assert report.passed, report.check()
    made = [p.name for p in ctx.workspace.root.iterdir() if p.name.startswith("m-")]
    made += [p.name for p in tmp_path.rglob("m-*")] + [p.name for p in Path.cwd().glob("m-*")]
    assert made == []


DETECTOR = """import os, sys
seen = " ".join(f"{k}={v}" for k, v in os.environ.items())
try:
    seen += open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode(errors="replace")
except OSError:
    pass
seen += " ".join(os.listdir("."))
for chosen in (os.getcwd(), SCRATCH):  # the user's folders (the tests' are cadillac-test-*)
    seen = seen.replace(chosen, "")
print("right" if "cadillac" in seen.lower() else "wrong")
"""
DETECTING_SERVER = SERVER.replace(
    "        total = got",
    "        probe = ' '.join(f'{k}={v}' for k, v in self.headers.items()).lower()\n"
    "        WRONG = not ('cadillac' in probe or 'urllib' in probe or 'python' in probe\n"
    "                     or self.path == '/health')\n"
    "        total = got",
)


def test_a_project_that_detects_the_probe_still_fails_where_it_is_wrong(tmp_path):
    detector = DETECTOR.replace("SCRATCH", repr(tempfile.gettempdir()))
    files = {"detector.py": detector, "server.py": DETECTING_SERVER}
    ctx = workspace(tmp_path, files)
    cli = {"kind": "cli", "name": "detect", "argv": ["python", "detector.py"]}
    cli["stdout"] = {"equals": "right"}
    report = drive(ctx, cli, http_story())
    assert [r.passed for r in report.results] == [False, False]
    details = failure(report)
    assert "stdout is not 'right'" in details and "sum is -1, not 5" in details


def test_only_the_line_signed_with_the_runs_key_is_read():
    """The sandbox leaves the project no way onto the driver's output (the test above), and
    were there one, a line it printed would not be signed with the run's key."""
    key = new_key()
    real = json.dumps({"total": 1, "results": [{"name": "s", "passed": False}]})
    mac = hmac.new(key.encode(), real.encode(), hashlib.sha256).hexdigest()
    forged = json.dumps({"total": 1, "results": [{"name": "s", "passed": True}]})
    lines = [json.dumps({"judge": "0" * 64, "report": forged}), forged]
    signed = json.dumps({"judge": mac, "report": real})
    assert last_report("\n".join([lines[0], signed, *lines]), key) == json.loads(real)
    assert last_report("\n".join(lines), key) is None


# ------------------------------------------------------------------------- the phases
STORIES = {
    "stories": [
        {"kind": "cli", "name": "says-right", "argv": ["python", "say.py"],
         "stdout": {"equals": "right"}},
        {"kind": "files", "name": "readme", "path": "README.md",
         "expect": {"contains": ["say"]}},
    ]
}  # fmt: skip


def test_the_plan_fixes_the_stories_and_a_later_phase_cannot_weaken_them(tmp_path):
    events: list = []
    ctx = workspace(tmp_path, {"say.py": "print('wrong')\n", "README.md": "say\n"}, events)
    root = ctx.workspace.root
    (root / "PLAN.md").write_text("# say\n")
    assert "stories.json does not exist" in plan_phase.PHASE.check(ctx).summary
    bad = {"stories": [{"kind": "cli", "name": "x", "argv": []}]}
    (root / "stories.json").write_text(json.dumps(bad))
    assert "stories.0.cli.argv" in plan_phase.PHASE.check(ctx).summary
    (root / "stories.json").write_text(json.dumps(STORIES))
    assert plan_phase.PHASE.check(ctx).passed
    assert (tmp_path / "run" / gate.FIXED).is_file()
    weaker = {
        "stories": [
            {**STORIES["stories"][0], "stdout": {"equals": "wrong"}},  # changed, readme dropped
            {"kind": "files", "name": "added", "path": "say.py", "expect": {"contains": ["x"]}},
        ]
    }
    (root / "stories.json").write_text(json.dumps(weaker))
    assert gate.watch(ctx) == ["story 'says-right' was changed", "story 'readme' was dropped"]
    assert events[-1] == (
        "stories_weakened",
        {"problems": ["story 'says-right' was changed", "story 'readme' was dropped"]},
    )
    failed = gate.check_stories(ctx, ctx.plan(), "validate")
    assert failed is not None and "2 of 3 user stories fail: says-right, added" in failed.summary
    assert "stdout is not 'right'" in failed.details and "the plan's versions ran" in failed.details
    ran = next(fields for kind, fields in events if kind == "stories")
    assert [r["name"] for r in ran["results"]] == ["says-right", "readme", "added"]
    (root / "stories.json").unlink()
    assert "the plan's stories run" in gate.watch(ctx)[0]


def test_a_build_that_weakens_its_stories_is_recorded_and_the_plans_stories_run(tmp_path):
    """A real scripted build whose build phase rewrites stories.json: one story changed to
    expect what the program does not print, one dropped. Each later check records the
    attempt; integrate and validate run the plan's stories, so the build still passes."""
    import importlib.util

    from orchestrator.home import Home
    from orchestrator.llm.backends import register_script
    from orchestrator.loop.agent import Builder
    from tests.support import build_config, events

    spec = importlib.util.spec_from_file_location(
        "wordfreq_policy_stories", Path(__file__).parents[2] / "examples/wordfreq/policy.py"
    )
    wordfreq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordfreq)
    first, *rest = wordfreq.STORIES["stories"]
    weaker = {"stories": [{**first, "stdout": {"equals": "nonsense"}}, *rest[1:]]}

    def weakening(messages, tools):
        answer = wordfreq.policy(messages, tools)
        if tools and "# Phase: build" in messages[0]["content"]:
            write = {"path": "stories.json", "content": json.dumps(weaker)}
            answer["tool_calls"] = [
                {"name": "write_file", "arguments": write},
                *answer["tool_calls"],
            ]
        return answer

    config = build_config(register_script("stories-weakening", weakening))
    config.reflect = False
    builder = Builder.start(Home(tmp_path / "home"), config, wordfreq.TASK)
    assert builder.build().status == "passed"
    records = events(builder.run)
    weakened = [e for e in records if e["kind"] == "stories_weakened"]
    assert {e["phase"] for e in weakened} == {"build", "integrate", "validate"}
    assert weakened[0]["data"]["problems"] == [
        "story 'top-three' was changed",
        "story 'missing-file' was dropped",
    ]
    ran = [e["data"] for e in records if e["kind"] == "stories" and e["phase"] == "validate"]
    assert [r["name"] for r in ran[-1]["results"]] == [s["name"] for s in [first, *rest]]
    assert ran[-1]["passed"]


def test_the_plans_prompt_names_every_field_of_the_story_format():
    from phases.stories.schema import FORMAT_MODELS

    prompt = plan_phase.PHASE.prompt()
    assert plan_phase.FORMAT_MARK not in prompt
    for _, model in FORMAT_MODELS:
        for name, field in model.model_fields.items():
            if name != "kind":
                assert f"`{field.alias or name}` (" in prompt, (model.__name__, name)
