"""User stories under attack: a project (and its plan's stories) written to end, cut, hang or
escape the story driver, through paths the stories' own tests do not try.

Each runs for real, in the sandbox, through the story driver (``tests.support``), as the
integrate and validate checks run them; the host's own reading of ``stories.json`` runs
as the plan's check runs it.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from pydantic import ValidationError

from orchestrator.bench import scoring
from orchestrator.sandbox.executor import ExecConfig
from orchestrator.sandbox.signing import JUDGE_PYTHON
from phases.stacks import build_artifacts
from phases.stories import gate
from phases.stories.schema import BrowserStory, LibraryStory
from tests.phases.test_stacks import project
from tests.phases.test_stories import drive, failure, workspace

pytestmark = pytest.mark.e2e  # the sandbox and real programs


# ------------------------------------------------------------------------- the result line
WRITE_OTHERS_STDOUT = """import os
wrote = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    for fd in ("1", "2"):
        try:
            out = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY)
        except OSError:
            continue
        os.write(out, b'{"judge": "0", "report": "{}"}\\n')
        wrote.append(pid)
print("wrote to", wrote if wrote else "nothing")
"""


def test_a_program_cannot_write_into_the_drivers_or_the_sandboxs_output(tmp_path):
    """/proc/<driver>/fd/1 (and bwrap's) is refused: the driver is not dumpable, and the
    sandbox's init is not the project's."""
    ctx = workspace(tmp_path, {"w.py": WRITE_OTHERS_STDOUT})
    story = {"kind": "cli", "name": "w", "argv": ["python", "w.py"]}
    report = drive(ctx, {**story, "stdout": {"equals": "wrote to nothing"}})
    assert report.passed, report


# ------------------------------------------------------------------------- story fields
def test_a_pattern_that_backtracks_without_end_fails_its_story_in_seconds(tmp_path):
    """``matches: "(a+)+$"`` on a long run of a's: the pattern stops after PATTERN_S, the
    story fails saying so, and the next story still runs."""
    ctx = workspace(tmp_path, {"a.py": "print('a' * 64 + 'b')"})
    cli = {"kind": "cli", "argv": ["python", "a.py"], "timeout_s": 5}
    start = time.monotonic()
    report = drive(
        ctx,
        {**cli, "name": "slow", "stdout": {"matches": "(a+)+$"}},
        {**cli, "name": "fine", "stdout": {"contains": ["ab"]}},
    )
    assert time.monotonic() - start < 25
    slow, fine = report.results
    assert not slow.passed and "'(a+)+$' searched stdout past 5 s" in slow.got, slow
    assert fine.passed, fine


def test_a_stories_json_over_the_limit_is_refused_without_reading_it_all(tmp_path):
    """A 5 MB expected text (valid JSON, valid stories) is refused by its size, and a sparse
    file of gigabytes is never read into the host's memory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    huge = {"kind": "files", "name": "f", "path": "a", "expect": {"equals": "x" * 5 * 2**20}}
    (ws / "stories.json").write_text(json.dumps({"stories": [huge]}))
    with pytest.raises(gate.StoriesError, match="stories.json is over 4 MB"):
        gate.load_stories(ws)
    with open(ws / "stories.json", "wb") as handle:
        handle.truncate(8 * 2**30)
    with pytest.raises(gate.StoriesError, match="stories.json is over 4 MB"):
        gate.load_stories(ws)


def test_stories_json_through_a_link_or_a_fifo_is_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "elsewhere.json").write_text('{"stories": []}')
    (ws / "stories.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(gate.StoriesError, match="symbolic link; it must be a regular file"):
        gate.load_stories(ws)
    (ws / "stories.json").unlink()
    os.mkfifo(ws / "stories.json")
    with pytest.raises(gate.StoriesError, match="it must be a regular file"):
        gate.load_stories(ws)


@pytest.mark.parametrize("function", ["__import__('os').system", "a;b", "constructor()"])
def test_a_library_function_name_that_is_code_is_refused(function):
    with pytest.raises(ValidationError):
        LibraryStory(name="x", language="python", module="m", function=function)


# ------------------------------------------------------------------------- files
def test_a_files_story_on_a_fifo_fails_at_once_and_never_waits_for_a_writer(tmp_path):
    ctx = workspace(tmp_path, {})
    os.mkfifo(ctx.workspace.root / "pipe")
    start = time.monotonic()
    report = drive(ctx, {"kind": "files", "name": "f", "path": "pipe", "expect": {}})
    assert time.monotonic() - start < 10
    assert "pipe cannot be read as a regular file" in failure(report)


# ------------------------------------------------------------------------- library
BIG_ANSWER = "def rows():\n    return ['x' * 100] * 2000\n"


def test_a_library_call_whose_answer_is_more_than_a_pipe_holds_is_read(tmp_path):
    """200 KB of JSON back: the driver reads the answer while the child writes it (the
    child never waits on a full pipe until the call's time limit)."""
    ctx = workspace(tmp_path, {"big.py": BIG_ANSWER})
    start = time.monotonic()
    report = drive(
        ctx,
        {
            "kind": "library",
            "name": "rows",
            "language": "python",
            "module": "big",
            "function": "rows",
            "returns": ["x" * 100] * 2000,
        },
    )
    assert report.passed, report.results[0].got[:300]
    assert time.monotonic() - start < 20


# ------------------------------------------------------------------------- browser
@pytest.mark.parametrize("serve", ["/proc/self", "../elsewhere", "dist/../../x"])
def test_a_served_folder_outside_the_workspace_is_refused_by_the_schema(serve):
    with pytest.raises(ValidationError, match="must be a path inside the workspace"):
        BrowserStory(name="b", expect_text=["x"], serve=serve)


def test_a_served_folder_reached_through_a_link_is_not_served(tmp_path):
    """``serve: "app/dist"`` where ``app`` is a link (here to a folder of the workspace, as
    one to anywhere the sandbox shows): the driver walks every part without following a
    link, so it serves nothing."""
    ctx = workspace(tmp_path, {"real/dist/index.html": "<p>through a link</p>"})
    (ctx.workspace.root / "app").symlink_to("real")
    story = {"kind": "browser", "name": "b", "serve": "app/dist", "expect_text": ["a link"]}
    report = drive(ctx, story)
    assert "app/dist is not a built folder" in failure(report)


# ------------------------------------------------------------------------- output
FLOOD = "import sys\nchunk = b'x' * 2**20\nwhile True:\n    sys.stdout.buffer.write(chunk)\n"


def test_a_program_that_prints_without_end_fails_its_story_and_the_next_still_runs(tmp_path):
    """Gigabytes on stdout: the driver keeps the first READ_BYTES and reads the rest away
    (a library call's output too: the same Drain), so its memory never fills; the story
    fails for its time limit, saying so, and the next one holds."""
    ctx = workspace(tmp_path, {"flood.py": FLOOD})
    flood = {"kind": "cli", "name": "flood", "argv": ["python", "flood.py"], "timeout_s": 5}
    fine = {"kind": "cli", "name": "fine", "argv": ["python", "-c", "print(1)"]}
    report = drive(ctx, flood, fine)
    flooded, held = report.results
    assert not flooded.passed and "the program ran past 5 s" in flooded.got, flooded.got[:300]
    assert "xxxx" in flooded.got and "chars cut" in flooded.got
    assert held.passed, held


# ------------------------------------------------------------------------- http
DRIP = """import os, time
from http.server import BaseHTTPRequestHandler, HTTPServer

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        if self.path == "/health":
            self.wfile.write(b"x" * 1000000)
            return
        while True:  # an answer that never ends, a byte at a time: no read ever times out
            self.wfile.write(b"x")
            self.wfile.flush()
            time.sleep(0.3)

HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


def test_a_server_that_drips_its_answer_fails_its_story_within_its_time_limit(tmp_path):
    """Every read gets a byte before it times out, for ever: the story still ends at its
    time limit (for all its requests), and the next story runs."""
    ctx = workspace(tmp_path, {"drip.py": DRIP})
    drip = {
        "kind": "http",
        "name": "drip",
        "start": ["python", "drip.py"],
        "ready": "/health",
        "timeout_s": 3,
        "requests": [{"path": "/a"}, {"path": "/b"}, {"path": "/c"}],
    }
    fine = {"kind": "cli", "name": "fine", "argv": ["python", "-c", "print(1)"]}
    start = time.monotonic()
    dripped, held = drive(ctx, drip, fine).results
    assert time.monotonic() - start < 20
    assert not dripped.passed and "GET /a: no answer" in dripped.got, dripped.got[:300]
    assert held.passed, held


# ------------------------------------------------------------------------- installs
def test_a_frontend_folder_that_is_a_link_is_not_installed_by_the_judge(tmp_path):
    """The plan lists ``frontend/package.json`` and ``frontend`` is a link (to a folder the
    model filled elsewhere): the judge's set-up refuses it before any install runs."""
    project = tmp_path / "project"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "package.json").write_text('{"dependencies": {"left-pad": "1"}}')
    project.mkdir()
    (project / "frontend").symlink_to(tmp_path / "elsewhere")
    (project / "requirements.txt").write_text("")
    plan = {
        "summary": "a full stack",
        "stack": ["python", "web"],
        "files": ["requirements.txt", "frontend/package.json"],
        "dependencies": [],
        "test_command": "true",
        "run_command": "true",
    }
    (project / "plan.json").write_text(json.dumps(plan))
    why = scoring._set_up(project, ExecConfig(), None)
    assert why == (
        "the project cannot be set up: frontend is a symbolic link; it must be a real folder"
    )


# ------------------------------------------------------------------------- the verdict file
def test_the_signed_line_of_many_stories_is_read_though_the_output_cap_cuts_it(tmp_path):
    """20 stories whose output is long: the signed line (> 20 KB, ExecConfig's output cap)
    is cut in the command's output, and read whole from the driver's result file."""
    ctx = workspace(tmp_path, {"p.py": "print('a line of output ' * 200)\n"})
    stories = [{"kind": "cli", "name": f"s{i}", "argv": ["python", "p.py"]} for i in range(20)]
    report = drive(ctx, *stories)
    assert report.passed, report.results[0].got[:300]
    assert len(report.results) == 20


PLANT = """import json, os, sys
settings = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")[-2].decode()
result = json.load(open(settings))["result"]
forged = json.dumps({"judge": "0" * 64, "report": json.dumps({"total": 1, "results": [
    {"name": "plant", "kind": "cli", "passed": True, "sent": "", "got": "forged"}]})})
if sys.argv[1] == "file":
    open(result, "w").write(forged + "\\n")
    os.chmod(result, 0o444)
else:
    os.mkdir(result)
    open(os.path.join(result, "x"), "w").write(forged)
print("planted", result)
sys.exit(1)
"""


@pytest.mark.parametrize("how", ["file", "folder"])
def test_a_result_file_the_project_plants_first_passes_nothing(tmp_path, how):
    """The project reads the result file's path (settings.json, named in the driver's
    command line) and plants a forged verdict there first: the driver removes it (or,
    when it cannot, the printed line is read), and the story fails as it should."""
    ctx = workspace(tmp_path, {"plant.py": PLANT})
    report = drive(ctx, {"kind": "cli", "name": "plant", "argv": ["python", "plant.py", how]})
    (result,) = report.results
    assert not result.passed and "the exit status is 1, not 0" in result.got, result.got
    assert "planted /" in result.got


# ------------------------------------------------------------------------- deep values
def test_a_stories_json_nested_past_the_parsers_limit_is_refused_in_one_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    story = '{"kind": "library", "name": "x", "language": "python", "module": "m", '
    (tmp_path / "stories.json").write_text(
        '{"stories": [' + story + f'"function": "f", "returns": {deep}}}]}}'
    )
    with pytest.raises(gate.StoriesError, match="recursion limit exceeded"):
        gate.load_stories(tmp_path)


DEEP = "import sys\nprint('[' * 100000 + ']' * 100000)\n"
DEEP_LIB = "def f():\n    v = []\n    for _ in range(100000):\n        v = [v]\n    return v\n"


def test_output_nested_past_pythons_limit_fails_its_story_and_the_next_still_runs(tmp_path):
    """A program's JSON (or a library call's answer) 100 000 lists deep: json.loads raises
    RecursionError in the driver; the story fails, and the run goes on."""
    ctx = workspace(tmp_path, {"deep.py": DEEP, "deeplib.py": DEEP_LIB})
    cli = {
        "kind": "cli",
        "name": "deep",
        "argv": ["python", "deep.py"],
        "stdout": {"json": {"0": 1}},
    }
    lib = {"kind": "library", "name": "lib", "language": "python", "module": "deeplib"}
    fine = {"kind": "cli", "name": "fine", "argv": ["python", "-c", "print(1)"]}
    deep, library, held = drive(ctx, cli, {**lib, "function": "f", "returns": 1}, fine).results
    assert not deep.passed and not library.passed, (deep.got[:300], library.got[:300])
    assert held.passed, held


# ------------------------------------------------------------------------- screenshots
FILL_SHOTS = """import json, os
settings = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")[-2].decode()
out = json.load(open(settings))["out"]
with open(os.path.join(out, "junk.bin"), "wb") as handle:
    handle.write(b"x" * 2**20)
open(os.path.join(out, "page.png"), "w").write("not a screenshot of cadillac's")
print("filled", out)
"""


def test_what_the_project_writes_in_the_screenshot_folder_is_not_copied_to_the_host(
    tmp_path,
):
    """The screenshot folder is the sandbox's to write, and its path is in settings.json:
    the host keeps only the screenshots the signed report names (none here), never the
    project's files (up to copy_tree's 500 MB a run, before)."""
    ctx = workspace(tmp_path, {"fill.py": FILL_SHOTS})
    out = tmp_path / "run" / "stories" / "integrate"
    report = drive(ctx, {"kind": "cli", "name": "fill", "argv": ["python", "fill.py"]}, out=out)
    assert report.passed and "filled /" in report.results[0].got, report.results[0].got
    assert report.results[0].screenshot is None
    assert sorted(p.name for p in out.iterdir()) == []


def test_a_browser_storys_own_screenshot_still_comes_back(tmp_path):
    """The screenshot the signed report names is kept (in the real browser, served by the
    driver), and nothing else of the folder."""
    ctx = workspace(tmp_path, {"dist/index.html": "<p>hi there</p>"})
    out = tmp_path / "run" / "shots"
    report = drive(ctx, {"kind": "browser", "name": "page", "expect_text": ["hi there"]}, out=out)
    assert report.passed, report.results[0].got[:500]
    assert report.results[0].screenshot == str(out / "page.png")
    assert (out / "page.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in out.iterdir()) == ["page.png"]


# ------------------------------------------------------------------------- artifacts
REACHING = {
    "go.mod": "module example.com/reach\n\ngo 1.19\n\nrequire (\n\texample.com/dep v0.0.0\n"
    "\tgolang.org/x/text v0.3.0\n)\n\nreplace example.com/dep => ../outside\n",
    "main.go": 'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/dep"\n\t_ "golang.org/x/text"\n'
    ")\n\nfunc main() {\n\tfmt.Println(dep.Secret)\n}\n",
}


def test_a_go_build_reaching_outside_the_workspace_or_to_the_network_builds_nothing(tmp_path):
    """go.mod replaces a module with a folder beside the workspace (the sandbox does not
    show it) and requires one that is not downloaded (the build runs offline): the build
    fails at once, and no program is kept."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "go.mod").write_text("module example.com/dep\n\ngo 1.19\n")
    (outside / "dep.go").write_text('package dep\n\nconst Secret = "from outside"\n')
    ctx = project(tmp_path, REACHING, stack=["go"])
    start = time.monotonic()
    failed = build_artifacts(ctx, ctx.plan())
    assert failed is not None and not failed.passed, failed
    assert time.monotonic() - start < 60
    assert not (ctx.workspace.root / "bin" / "reach").exists()
    assert "replacement directory ../outside does not exist" in failed.details
    assert "network is unreachable" in failed.details


BUILD_JS = """const fs = require("fs"), net = require("net");
let secret = "unreadable";
try { secret = fs.readFileSync(process.argv[2], "utf8"); } catch (e) {}
const socket = net.connect({ host: "1.1.1.1", port: 80, timeout: 3000 });
const done = (network) => {
  socket.destroy();
  fs.mkdirSync("dist", { recursive: true });
  fs.writeFileSync("dist/index.html", `secret: ${secret}; network: ${network}`);
};
socket.on("connect", () => done("reached"));
socket.on("error", () => done("unreachable"));
socket.on("timeout", () => done("unreachable"));
"""


def test_a_front_end_build_script_reads_nothing_beside_the_workspace_and_no_network(tmp_path):
    """``npm run build`` is the project's own code: what it can reach is the sandbox's
    (a file beside the workspace is not there, the network is not)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the host's")
    package = {"name": "page", "private": True, "scripts": {"build": f"node build.js {secret}"}}
    files = {"frontend/package.json": json.dumps(package), "frontend/build.js": BUILD_JS}
    ctx = project(tmp_path, files, stack=["web"])
    assert build_artifacts(ctx, ctx.plan()) is None
    page = (ctx.workspace.root / "frontend" / "dist" / "index.html").read_text()
    assert page == "secret: unreadable; network: unreachable"


# ------------------------------------------------------------------------- the chain to the driver
FAKE_BASH = """#!{python} -I
import hashlib, hmac, json, os, re, shlex, subprocess, sys
keys = [n for n in os.listdir(".") if re.fullmatch(r"\\.[0-9a-f]{{16}}", n)]
key = open(keys[0]).read() if keys else ""
subprocess.run(["/bin/bash", *sys.argv[1:]])  # the real command: the driver runs
settings = shlex.split(sys.argv[-1])[-1] if len(sys.argv) > 2 else ""
if key and settings.endswith("settings.json"):
    report = json.dumps({{"total": 1, "results": [
        {{"name": "x", "kind": "cli", "passed": True, "sent": "", "got": "forged"}}]}})
    mac = hmac.new(key.encode(), report.encode(), hashlib.sha256).hexdigest()
    line = json.dumps({{"judge": mac, "report": report}})
    print(line, flush=True)
    result = json.load(open(settings))["result"]
    with open(result, "w") as handle:
        handle.write(line + "\\n")
"""


def test_a_bash_the_project_plants_on_the_path_never_runs_before_the_driver(tmp_path):
    """``.venv/bin`` (the project's to write) is first on the sandbox's PATH: a ``bash``
    planted there, were it the one the sandbox starts, would read the key file before the
    driver takes it and sign a forged verdict. The sandbox starts the host's own bash."""
    ctx = workspace(tmp_path, {"x.py": "import sys\nsys.exit(1)\n"})
    fake = ctx.workspace.root / ".venv" / "bin" / "bash"
    fake.write_text(FAKE_BASH.format(python=JUDGE_PYTHON))
    fake.chmod(0o755)
    report = drive(ctx, {"kind": "cli", "name": "x", "argv": ["python", "x.py"]})
    (result,) = report.results
    assert not result.passed and "the exit status is 1, not 0" in result.got, result.got
