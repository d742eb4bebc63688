"""``cadillac runs show ID --trajectory`` / ``--follow`` / ``--json``: a build's rounds in
the terminal, printed inert.

One real build (the demo's wordfreq, with a hostile first round: escape sequences, carriage
returns and rich markup in the model's text, a file's name and content and a command's
output) is shared by the module's tests; ``--follow`` follows a build running in another
process, slowed to half a second an answer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.cli.output import inert
from orchestrator.loop.runs import RunSummary
from orchestrator.loop.trajectory import ReflectionRecord, RoundRecord, read_trajectory
from phases import PHASES
from tests.conftest import isolate
from tests.fakes import trajectory_policies
from tests.fakes.improve_policies import wordfreq
from tests.support import one_error_line, run

pytestmark = pytest.mark.e2e  # left out of `make test-fast`

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = "scripted:tests.fakes.trajectory_policies:hostile"
SLOW = "scripted:tests.fakes.trajectory_policies:slow"


class Built:
    def __init__(self, home: Path, run_id: str):
        self.home, self.id = home, run_id
        self.dir = home / "runs" / run_id

    def show(self, capsys, *options: str) -> tuple[int, str, str]:
        return run(capsys, "runs", "show", self.id, "--home", str(self.home), *options)


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_cache) -> Built:
    """One hostile wordfreq build, in a home of the module's own."""
    root = tmp_path_factory.mktemp("trajectory")
    with pytest.MonkeyPatch.context() as mp:
        home = isolate(mp, root, shared_cache)
        assert main(["build", wordfreq.TASK, "--model", HOSTILE, "--quiet"]) == 0
    (folder,) = (home / "runs").iterdir()
    return Built(home, folder.name)


def cadillac(*argv: str, home: Path, **options) -> subprocess.CompletedProcess:
    """``cadillac ARGV`` as a process of its own, its output as the bytes it wrote."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        env={**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)},
        cwd=str(ROOT),
        capture_output=True,
        timeout=120,
        **options,
    )


def on_a_terminal(*argv: str, home: Path, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """``cadillac ARGV`` with a pseudo-terminal as its standard input and output: its exit
    status, what it wrote to the terminal, and its standard error."""
    import pty
    import threading

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *argv],
        env={**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home), **env},
        cwd=str(ROOT),
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    shown = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process and the pager are gone
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=10)
    os.close(leader)
    return proc.returncode, bytes(shown), err


def test_every_phase_and_round_is_shown_with_its_tool_calls_and_results(built, capsys):
    code, out, err = built.show(capsys, "--trajectory")
    assert code == 0, err
    found = read_trajectory(built.dir)
    assert [r.phase for r in found.rounds] == [
        p for p in PHASES for _ in range(2 if p != "build" else 4)
    ]
    at = 0
    for phase in PHASES:
        at = out.index(f"━━ {phase} passed · ", at)
        for r in (r for r in found.rounds if r.phase == phase):
            at = out.index(f"round {r.round} · ", at)
            for step in r.tools:
                at = out.index(f"→ {step.name}", at)
                path = json.loads(step.arguments).get("path")
                if path:
                    at = out.index(f'path="{inert(path)}"', at)
                at = out.index("← ok" if step.ok else "← failed", at)
                first = inert(step.result.strip("\n").split("\n")[0])[:200]
                at = out.index(first, at)
            if r.check:
                at = out.index(f"check passed: {r.check.summary}", at)
    assert '→ run command="python -m unittest discover -s tests" timeout_s=60' in out
    assert "← failed" in out and "lines left out" in out  # the failing first test run, cut
    assert "content (40 lines):" in out and "… 36 more lines" in out  # wordfreq.py, cut
    assert "reflection on build: 2 lessons drawn" in out
    assert "unittest discover finds no tests when tests/ lacks __init__.py" in out
    assert out.rstrip().endswith(f"run {built.id}: passed: all six phases passed")

    code, whole, _ = built.show(capsys, "--trajectory", "--full")
    assert code == 0 and "lines left out" not in whole and "more lines" not in whole
    assert inert(wordfreq.PROGRAM.rstrip("\n")).replace("\n", "\n    │ ") in whole


def test_json_is_the_trajectory_file_as_one_document(built, capsys):
    code, out, err = built.show(capsys, "--trajectory", "--json")
    assert code == 0, err
    document = json.loads(out)
    found = read_trajectory(built.dir)
    assert document["run_id"] == built.id and document["status"] == "passed"
    assert [RoundRecord.model_validate(r) for r in document["rounds"]] == found.rounds
    rounds = [json.loads(x) for x in (built.dir / "trajectory.jsonl").read_text().splitlines()]
    assert document["rounds"] == [r for r in rounds if r["kind"] == "round"]
    assert [ReflectionRecord.model_validate(r) for r in document["reflections"]] == (
        found.reflections
    )
    summary = RunSummary.model_validate_json((built.dir / "summary.json").read_text())
    assert document["phases"] == [p.model_dump(mode="json") for p in summary.phases]


CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_a_hostile_models_output_is_printed_inert(built, capsys):
    raw = (built.dir / "trajectory.jsonl").read_text()
    assert "\\u001b]8;;http://evil.example/" in raw and "\\r" in raw  # the build wrote them

    for options in (["--trajectory"], ["--trajectory", "--full"], ["--follow"]):
        done = cadillac("runs", "show", built.id, *options, home=built.home)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert b"\x1b" not in out and b"\r" not in out and b"\x07" not in out, options
        text = out.decode()
        assert not CONTROLS.search(text), CONTROLS.search(text)
        assert "␛[2J␛[H␛]0;pwned title␇␛]8;;http://evil.example/␛\\click me" in text
        assert "all good␍EVIL OVERWRITE back␈␈␈ \\u009b31mC1 CSI" in text
        assert trajectory_policies.MARKUP in text  # markup shown as written, not read
        assert f'→ write_file path="{trajectory_policies.NAME}"' in text
        assert "[link=http://evil.example/]x[/link]" in text  # in what the command printed

    for options in (["--trajectory", "--json"], ["--follow", "--json"]):
        done = cadillac("runs", "show", built.id, *options, home=built.home)
        assert done.returncode == 0 and b"\x1b" not in done.stdout and b"\r" not in done.stdout
        assert "\\u009b" in done.stdout.decode() and not CONTROLS.search(done.stdout.decode())


def test_on_a_terminal_only_richs_own_colours_are_escape_sequences(built, tmp_path):
    """On a terminal rich colours the text, so ESC is written: every escape sequence must
    be a colour (SGR) of rich's; none is the model's. The trajectory is paged there (the
    pager here is a command that keeps what it is given)."""
    paged = tmp_path / "paged.txt"
    for options in (["--follow"], ["--trajectory"]):
        env = {"TERM": "xterm-256color", "PAGER": f"cat > {paged}", "COLUMNS": "120"}
        code, shown, err = on_a_terminal(
            "runs", "show", built.id, *options, home=built.home, env=env
        )
        assert code == 0, err
        if options == ["--trajectory"]:
            assert b"round 1" not in shown  # it went to the pager
            shown = paged.read_bytes()
        assert b"round 1" in shown and b"pwned title" in shown
        sequences = re.findall(rb"\x1b.{0,12}", shown)
        assert all(re.match(rb"\x1b\[[0-9;]*m", s) for s in sequences), sequences[:5]
        assert b"\x1b]" not in shown and b"\x1b[2J" not in shown
        assert b"\r" not in shown.replace(b"\r\n", b"")  # the pty's own line ends aside


def test_follow_prints_rounds_as_they_land_and_ends_with_the_build(home, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home)}
    build = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "build", wordfreq.TASK, "--model", SLOW, "-q"],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        run_dir = wait_for(lambda: next((home / "runs").glob("2*"), None))
        from orchestrator.loop.runs import Run

        assert wait_for(lambda: Run(home / "runs", run_dir.name).live())
        followers = {
            name: subprocess.Popen(
                [sys.executable, "-m", "orchestrator", "runs", "show", run_dir.name, *options],
                env=env,
                cwd=str(ROOT),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for name, options in (
                ("text", ["--follow"]),
                ("json", ["--follow", "--json"]),
                ("stopped", ["--follow"]),
            )
        }
        lines = {name: [] for name in followers}

        def read(name: str) -> None:
            for line in followers[name].stdout:
                lines[name].append((time.time(), line.decode()))

        import threading

        readers = [threading.Thread(target=read, args=(n,), daemon=True) for n in followers]
        for t in readers:
            t.start()
        assert wait_for(lambda: any("round 1" in x for _, x in lines["stopped"]), 60)
        followers["stopped"].send_signal(signal.SIGINT)
        _, stopped_err = followers["stopped"].communicate(timeout=30)
        assert build.poll() is None, "the build ended before it could be followed"
        assert build.wait(timeout=300) == 0, build.stderr.read()
        for name in ("text", "json"):
            _, err = followers[name].communicate(timeout=30)
            assert followers[name].returncode == 0, err
    finally:
        for p in [build, *locals().get("followers", {}).values()]:
            if p.poll() is None:
                p.kill()
                p.wait()

    text = "".join(x for _, x in lines["text"])
    rounds = [(at, x) for at, x in lines["text"] if x.startswith("round ")]
    found = read_trajectory(run_dir)
    assert len(rounds) == len(found.rounds) == 14
    assert rounds[0][0] < found.rounds[-1].ts - 2  # shown as it landed, long before the last
    for phase in PHASES:
        assert f"━━ {phase} " in text
    # a phase that began while followed: its header as it starts, its outcome as it ends
    assert "━━ validate running (budget 8 rounds)" in text
    assert "━━ validate ended: passed · 2/8 rounds" in text
    assert text.rstrip().endswith(f"run {run_dir.name}: passed: all six phases passed")

    records = [json.loads(x) for _, x in lines["json"]]
    assert records[-1] == {
        "kind": "end",
        "run_id": run_dir.name,
        "status": "passed",
        "reason": "all six phases passed",
    }
    assert [RoundRecord.model_validate(r) for r in records if r["kind"] == "round"] == found.rounds
    assert [r["phase"] for r in records if r["kind"] == "phase"] == list(PHASES)
    assert sum(r["kind"] == "reflection" for r in records) == len(found.reflections)

    # Ctrl-C stops following, as it stops other commands (exit 130), and says the build goes on
    assert followers["stopped"].returncode == 130
    said = stopped_err.decode()
    assert said.count("\n") == 1 and "Traceback" not in said
    assert said.startswith("cadillac: interrupted: stopped following run") and "goes on" in said


def wait_for(what, timeout: float = 60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.1)
    return what()


def test_a_run_from_before_trajectories_says_so_and_shows_its_events(built, home, capsys):
    old = home / "runs" / built.id
    shutil.copytree(built.dir, old, ignore=shutil.ignore_patterns("workspace"))
    (old / "trajectory.jsonl").unlink()
    code, out, err = run(capsys, "runs", "show", built.id, "--trajectory")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first == (
        f"run {built.id} has no trajectory.jsonl: it predates round records; "
        "its events (tool calls by name) follow"
    )
    assert "  round 1: write_file, run, write_file, write_file, write_file" in out
    assert "  round 1: run (failed)" in out  # build's first test run
    assert out.rstrip().endswith("passed: all six phases passed")
    code, out, _ = run(capsys, "runs", "show", built.id, "--trajectory", "--json")
    assert json.loads(out)["recorded"] is False and json.loads(out)["rounds"] == []


@pytest.mark.parametrize("kind", ["matrix", "improve", "nightly"])
@pytest.mark.parametrize("option", ["--trajectory", "--follow"])
def test_the_trajectory_of_a_run_that_is_not_a_build_is_refused_in_one_line(
    home, capsys, kind, option
):
    run_id = f"{kind}-20260101-000000-abcdef" if kind != "nightly" else "nightly-2026-01-01"
    (home / "runs" / run_id).mkdir(parents=True)
    code, out, err = run(capsys, "runs", "show", run_id, option)
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert f"{run_id} is a{'n' if kind == 'improve' else ''} {kind} run, not a build" in line


def test_inert_makes_every_control_character_visible():
    assert inert("a\x1b[2Jb") == "a␛[2Jb"
    assert inert("x\ry\x08\x07\x00\x7f") == "x␍y␈␇␀␡"
    assert inert("line\r\nnext\ttab") == "line\nnext\ttab"
    assert inert("\x9b31m \u202eevil") == "\\u009b31m \\u202eevil"
    assert inert("\ud800") == "\\ud800"
    assert inert("plain ünïcode → ok") == "plain ünïcode → ok"
