"""cadillac nightly end to end with scripted models: report, locks, interruption, history."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.home import Home
from orchestrator.improve.lifetime import curve
from orchestrator.nightly.records import NightlyLock, parse_duration
from tests.conftest import isolate
from tests.orchestrator.conftest import make_repo
from tests.support import QUICK_RULE_FILE

ROOT = Path(__file__).resolve().parents[3]
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
IMPROVER = "scripted:tests.fakes.improve_policies:digit_improver"
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("nightly-e2e")]  # one pair of nights


def nightly_args(repo: Path, *extra: str) -> list[str]:
    return [
        "nightly",
        "--matrix",
        str(LIFT),
        "--model",
        BUILDER,
        "--improver-model",
        IMPROVER,
        "--repo",
        str(repo),
        "--iterations",
        "1",
        "--repeats",
        "2",
        "--jobs",
        "2",
        "--time-budget",
        "20m",
        "--decision-rule",
        str(QUICK_RULE_FILE),  # some 30 builds a night (a survey of 12 and an accepted iteration)
        *extra,
    ]


def marks(svg_html: str, series: str) -> list[tuple[str, str]]:
    """(data-x, data-y) of the chart marks of one series, in page order."""
    found = []
    for tag in re.findall(r"<[^>]*class=\"mark\"[^>]*>", svg_html):
        attrs = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', tag))
        if attrs.get("data-series") == series:
            found.append((attrs.get("data-x"), attrs.get("data-y")))
    return found


def test_parse_duration():
    assert parse_duration("6h") == 21600 and parse_duration("90m") == 5400
    assert parse_duration("45s") == 45 and parse_duration("1.5h") == 5400
    assert parse_duration("30") == 1800


def test_a_second_nightly_exits_0_while_one_holds_the_lock(home, repo, capsys):
    lock = NightlyLock(Home(home))
    assert lock.acquire(Path(home) / "runs" / "nightly-x")
    try:
        assert main(nightly_args(repo)) == 0
        err = capsys.readouterr().err
        assert "already running" in err and str(os.getpid()) in err
        assert not list((Path(home) / "runs").glob("nightly-*/nightly.json"))
    finally:
        lock.release()


def test_a_nightly_that_cannot_run_says_why_in_one_line_and_makes_nothing(home, tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    assert main(nightly_args(tmp_path / "plain")) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a git checkout" in err
    assert not (Path(home) / "runs").exists()  # checked before any folder, report or lock


@dataclass
class Nights:
    """Two nights run one after the other in one home, the first with a stale lock left
    by a killed run: the records the end-to-end tests below read (none of them writes
    into it; a test that changes files works on a copy)."""

    home: Path
    nights: list[Path]
    stale_lock_before: bool


def plant_stale_lock(home: Path) -> None:
    """A process that takes the nightly lock and is killed holding it."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
        "from pathlib import Path\nfrom orchestrator.home import Home\n"
        "from orchestrator.nightly.records import NightlyLock\n"
        f"NightlyLock(Home(Path({str(home)!r}))).acquire(Path('x'))\n"
        "print('held', flush=True)\ntime.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()


@pytest.fixture(scope="session")
def two_nights(tmp_path_factory, shared_cache) -> Nights:
    """Two nights, run once per worker (not once per module: the scheduler may run another
    module's test of the group between two of these, which would tear a module fixture
    down and run both nights again); the environment is restored before the tests read
    what they left."""
    root = tmp_path_factory.mktemp("nights")
    with pytest.MonkeyPatch.context() as mp:
        home = isolate(mp, root, shared_cache)
        repo = make_repo(root / "repo")
        plant_stale_lock(home)
        stale = (home / "nightly.lock.json").exists()  # left behind by the killed run
        assert main(nightly_args(repo)) == 0
        assert main(nightly_args(repo)) == 0
    return Nights(home, sorted((home / "runs").glob("nightly-*")), stale)


def test_two_nights_write_reports_with_one_history_point_per_night(two_nights):
    home, nights = two_nights.home, two_nights.nights
    assert len(nights) == 2
    second = nights[-1]
    record = json.loads((second / "nightly.json").read_text())
    assert record["status"] == "finished" and "1 patch(es) accepted" in record["reason"]
    assert (second / "improve" / "iter-1" / "decision.json").is_file()
    log = (second / "nightly.log").read_text()
    assert "started" in log and "nightly finished" in log
    page = (second / "report.html").read_text()
    for fetch in ("<script", "<link", "@import", "url(", "<img"):  # one self-contained file
        assert fetch not in page
    assert not re.search(r"(src|href)\s*=\s*[\"']?https?:", page)
    train = marks(page, "train")
    assert [y for _, y in train] == ["0.65", "0.65"]  # the baseline at the start of each night
    assert len(marks(page, "holdout")) == 2
    grid = [m for m in re.findall(r'data-series="wf-[abh]\d?"', page)]
    assert len(grid) == 6 * 2  # six tasks, two repeats of the survey
    md = (second / "report.md").read_text()
    assert "| iter | weakness | decision |" in md and "accepted" in md and "```diff" in md
    # the lifetime budget (the default 0.1): each night's one iteration spent its share
    # and kept its patch
    spent = [0.1 * curve(1), 0.1 * curve(2)]
    assert [float(y) for _, y in marks(page, "spent")] == pytest.approx(spent, abs=1e-4)
    assert f"≤ {spent[1]:.2%}" in page and "chance any patch kept so far is noise" in page
    said = f"the chance that any of the 2 patch(es) kept so far is noise is at most {spent[1]:.2%}"
    assert said in md and f"| 2 | 2 | {spent[1]:.4f} | 0.1 |" in md
    # the first lines: what the night would build and cost, and the budget, before the survey
    first = log.index("survey of")
    assert 0 < log.index("estimate: 5 train and 1 holdout task(s)") < first
    # the --decision-rule file's rule, with --repeats 2 over it (a confirmation of 2 a task)
    assert "an iteration at most 46 (screen 10, full 10, confirm 20, holdout 6)" in log
    assert 0 < log.index("cost $0: the model is built into cadillac") < first
    assert 0 < log.index(f"lifetime error budget: {spent[0]:.4f} of 0.1 spent") < first
    index = (home / "runs" / "index.html").read_text()
    newest, oldest = f"href='{second.name}/", f"href='{nights[0].name}/"
    assert index.index(newest) < index.index(oldest)  # newest first


def test_a_stale_lock_from_a_killed_run_does_not_block(two_nights):
    assert two_nights.stale_lock_before  # the first night started with the killed run's lock
    first = two_nights.nights[0]
    assert json.loads((first / "nightly.json").read_text())["status"] == "finished"


def test_report_rebuilds_from_the_records(two_nights, tmp_path, capsys):
    home = tmp_path / "nights-home"  # a copy: the other tests read the nights as they ran
    shutil.copytree(two_nights.home, home, symlinks=True)
    nights = [home / "runs" / night.name for night in two_nights.nights]
    for night in nights:
        (night / "report.html").unlink()
    (home / "runs" / "index.html").unlink()
    capsys.readouterr()
    assert main(["report", "--home", str(home)]) == 0
    assert "2 nightly report(s)" in capsys.readouterr().out
    for night in nights:
        assert (night / "report.html").is_file()
    assert (home / "runs" / "index.html").is_file()
    rebuilt = (nights[-1] / "report.html").read_text()
    assert [y for _, y in marks(rebuilt, "train")] == ["0.65", "0.65"]


def test_the_report_renders_in_headless_chromium_without_console_errors(two_nights, tmp_path):
    assert shutil.which("chromium"), "chromium is not installed (.ci/run installs it)"
    page = two_nights.nights[0] / "report.html"  # the first night: one point of history
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chrome'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    # Chromium puts sockets in TMPDIR, whose path must stay short (a UNIX socket path
    # holds at most 107 bytes): give it a short scratch folder of its own.
    scratch = tempfile.mkdtemp(prefix="cr-", dir="/tmp")
    env = {**os.environ, "TMPDIR": scratch}
    shot = tmp_path / "report.png"
    try:
        done = subprocess.run(
            ["chromium", *flags, "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        subprocess.run(
            ["chromium", *flags, f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri()],
            capture_output=True,
            timeout=120,
            env=env,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert done.returncode == 0
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "rror" in line], console
    dom = done.stdout
    assert [y for _, y in marks(dom, "train")] == ["0.65"]
    in_page = re.findall(r'class="mark"', page.read_text())
    assert len(re.findall(r'class="mark"', dom)) == len(in_page) > 10
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_report_marks_a_night_left_running_by_a_killed_process_as_interrupted(home, capsys):
    night = Path(home) / "runs" / "nightly-2026-01-01"
    night.mkdir(parents=True)
    record = {"date": "2026-01-01", "status": "running", "pid": 999999, "started": 1.0}
    (night / "nightly.json").write_text(json.dumps(record))
    assert main(["report"]) == 0
    again = json.loads((night / "nightly.json").read_text())
    assert again["status"] == "interrupted" and "killed" in again["reason"]
    assert "interrupted" in (night / "report.md").read_text()


def test_text_from_the_records_cannot_inject_markup_into_the_report(home, capsys):
    """Reasons, weaknesses and diffs come from models: the HTML report shows them as text."""
    night = Path(home) / "runs" / "nightly-2026-01-02"
    (night / "improve" / "iter-1").mkdir(parents=True)
    hostile = "<script>alert(1)</script>"
    record = {
        "date": "2026-01-02",
        "status": "finished",
        "reason": hostile,
        "model": "<b>m</b>",
        "started": 1.0,
        "ended": 2.0,
    }
    (night / "nightly.json").write_text(json.dumps(record))
    iteration = {
        "iteration": 1,
        "status": "rejected x onmouseover=alert(2)",
        "weakness": "<img src=x onerror=alert(3)>",
        "reason": hostile,
    }
    summary = {"iterations": [iteration], "stopped_because": ""}
    (night / "improve" / "summary.json").write_text(json.dumps(summary))
    (night / "improve" / "iter-1" / "patch.diff").write_text("+<script>alert(4)</script>\n")
    assert main(["report"]) == 0
    page = (night / "report.html").read_text()
    for markup in ("<script", "<img", "<b>m", " onmouseover=alert(2)>"):
        assert markup not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(3)&gt;" in page
    assert '<span class="add">+&lt;script&gt;alert(4)&lt;/script&gt;</span>' in page
    assert hostile in (night / "report.md").read_text()  # Markdown is text; a viewer escapes it


def test_builds_the_judge_scored_0_are_named_in_the_report(home, capsys):
    night = Path(home) / "runs" / "nightly-2026-01-03"
    (night / "improve").mkdir(parents=True)
    record = {"date": "2026-01-03", "status": "finished", "started": 1.0, "ended": 2.0}
    (night / "nightly.json").write_text(json.dumps(record))
    run = {"task_id": "calc", "repeat": 0, "run_id": "r1", "score": 0.0}
    baseline = {
        "runs": [
            {
                **run,
                "verdict": "tampered",
                "failure": "a check that must fail was reported as passing",
            },
            {**run, "repeat": 1, "run_id": "r2", "verdict": "scored", "score": 1.0},
        ],
        "train_score": 0.5,
    }
    (night / "improve" / "baseline.json").write_text(json.dumps(baseline))
    assert main(["report"]) == 0
    for name in ("report.html", "report.md"):
        text = (night / name).read_text()
        assert "tampered" in text and "calc #1 (r1)" in text and "must fail" in text
        assert "r2" not in text.split("judge")[1][:400]
