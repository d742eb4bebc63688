"""The dashboard's pages of a matrix run, an improve cycle and the nights: their figures,
their links, a proposal's diff, an unreadable record as one line, what a model wrote
escaped, and a home left exactly as it was."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from orchestrator.bench.decision import Stage
from orchestrator.bench.decision import Test as Lift
from orchestrator.bench.results import MatrixResults, TaskRun, summarise
from orchestrator.home import Home
from orchestrator.improve.lessons import SelfLessons
from orchestrator.improve.lifetime import Lifetime
from orchestrator.improve.proposals import Edit, Proposal
from orchestrator.improve.records import ImproveSummary, IterationRecord
from orchestrator.improve.weaknesses import Weakness
from orchestrator.nightly.records import NightlyRecord
from orchestrator.nightly.report import write_reports
from orchestrator.serve.app import make_app
from orchestrator.serve.config import ServeConfig
from tests.conftest import isolate
from tests.support import build_config

T = "a-test-token-of-some-length"
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "javascript:alert(1)")
EVIL = " ".join(HOSTILE)
SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
WEAK = "phase-build-budget-exhausted-a1b2c3"
VETO = "confirm: the holdout fell by 0.200, credibly more than 0.010 (p 0.0100 <= 0.02)"


def client(home: Path) -> TestClient:
    app = make_app(Home(home), ServeConfig(token=T))
    return TestClient(app, headers={"Authorization": f"Bearer {T}"})


def assert_escaped(html: str) -> None:
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="javascript:' not in html and "javascript:alert(1)" in html


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            st = os.lstat(Path(folder) / name)
            found[str(Path(folder, name).relative_to(root))] = (st.st_mtime_ns, st.st_size)
    return found


# ------------------------------------------------------------------ records made here
def task_run(task: str, repeat: int, score: float, run_id: str = "", **more) -> TaskRun:
    fields = {"status": "passed", "reached_validate": True, "verdict": "scored"}
    return TaskRun(task_id=task, repeat=repeat, run_id=run_id, score=score, **fields | more)


def results(runs: list[TaskRun], splits: dict[str, str], **fields) -> MatrixResults:
    r = MatrixResults(
        id=fields.pop("id", "20260101-000000-aaaaaa"),
        matrix="matrices/default",
        model="scripted:x",
        repeats=2,
        split="all",
        started=time.time() - 600,
        ended=time.time(),
        runs=runs,
        **fields,
    )

    class Shape:
        def __init__(self, task: str):
            self.id, self.split, self.weight = task, splits[task], 1.0

    summarise(r, [Shape(t) for t in splits])
    return r


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_cycle(home: Path, folder: Path, cycle_id: str) -> None:
    """An improve cycle's folder as the cycle leaves it: an accepted iteration, one the
    holdout vetoed and one without a proposal, with the lessons the cycle drew."""
    started = time.time() - 3600
    weakness = Weakness(
        id=WEAK,
        kind="phase",
        signature=f"phase:build:budget_exhausted {EVIL}",
        phase="build",
        occurrences=4,
        cost=0.375,
        tasks=["wf-a", "wf-b"],
        evidence=[f"the build printed {EVIL}"],
        targets=["phases/build.md"],
    )
    proposal = Proposal(
        reason=f"say when to stop {EVIL}",
        edits=[Edit(file="phases/build.md", search="old", replace="new")],
    )
    diff = (
        "diff --git a/phases/build.md b/phases/build.md\n--- a/phases/build.md\n"
        "+++ b/phases/build.md\n@@ -1,2 +1,2 @@\n context line\n-old advice\n"
        f"+new advice {EVIL}\n"
    )
    screen = Stage(
        stage="screen", go_on=True, train=Lift(lift=0.12, p=0.08, tasks=2, builds=24), reason="go"
    )
    confirm = Stage(
        stage="confirm",
        go_on=True,
        train=Lift(lift=0.1, p=0.0042, tasks=2, builds=60),
        reason="confirm: kept",
        alpha=0.005,
    )
    vetoed = Stage(
        stage="confirm",
        go_on=False,
        train=Lift(lift=0.09, p=0.003, tasks=2, builds=60),
        holdout=Lift(lift=-0.2, p=0.01, tasks=1, builds=6),
        reason=VETO,
        alpha=0.005,
    )
    iterations = [
        IterationRecord(
            iteration=1,
            status="accepted",
            weakness=WEAK,
            reason="confirm: kept",
            train_delta=0.1,
            p=0.0042,
            stages=[screen, confirm],
            builds={"screen": 24, "full": 36, "confirm": 60},
            commit="c0ffee" * 6,
            branch="cadillac/improve-x-iter1",
            baseline_score=0.25,
            candidate_score=0.35,
        ),
        IterationRecord(
            iteration=2,
            status="rejected",
            weakness=WEAK,
            reason=VETO,
            train_delta=0.09,
            p=0.003,
            holdout_delta=-0.2,
            stages=[screen, vetoed],
            builds={"screen": 24, "confirm": 66},
        ),
        IterationRecord(iteration=3, status="no_proposal", reason="no weakness left to work on"),
    ]
    for it in iterations[:2]:
        here = folder / f"iter-{it.iteration}"
        write(here / "weakness.json", weakness.model_dump_json())
        answer = {"proposal": proposal.model_dump(), "answer": f"Here it is {EVIL}"}
        write(here / "proposal.json", json.dumps(answer, indent=2))  # as the cycle writes it
        write(here / "patch.diff", diff)
        rounds = results([task_run("wf-a", 0, 0.5, cost_usd=0.01)], {"wf-a": "train"})
        write(here / "rounds" / "screen-baseline.json", rounds.model_dump_json())
    lessons = SelfLessons(Home(home))
    lessons.kept(weakness, "phases/build.md", 0.1, 1, proposal.reason)
    lessons.rejected(weakness, proposal.reason, "+0.090", "the holdout vetoed it", 2)
    flagged = task_run("wf-b", 0, 0.0, verdict="tampered", failure=f"the judge found {EVIL}")
    baseline = results(
        [
            task_run("wf-a", 0, 0.5, cost_usd=0.02),
            task_run("wf-h", 0, 0.75, cost_usd=0.03),
            flagged,
        ],
        {"wf-a": "train", "wf-b": "train", "wf-h": "holdout"},
    )
    write(folder / "baseline.json", baseline.model_dump_json())
    write(folder / "rounds" / "survey.json", baseline.model_dump_json())
    summary = ImproveSummary(
        id=cycle_id,
        repo=str(home.parent / "no-repo-here"),
        base_commit="1234567890abcdef",
        tip_commit="c0ffee" * 6,
        started=started,
        ended=time.time(),
        status="finished",
        stopped_because="the iterations are done",
        alpha=0.005,
        lifetime=Lifetime(budget=0.1, spent=0.0234, tests=7, kept=2, alpha=0.005),
        iterations=iterations,
        builds=210,
        cost_usd=1.25,
        tokens=123456,
    )
    write(folder / "summary.json", summary.model_dump_json())


def make_night(home: Path, day: str, cycle: bool = True) -> Path:
    folder = home / "runs" / f"nightly-{day}"
    if cycle:
        make_cycle(home, folder / "improve", f"2026{day[5:7]}{day[8:]}-010000-abcdef")
    record = NightlyRecord(
        date=day,
        status="finished",
        reason="the time budget ran out",
        started=time.mktime(time.strptime(day, "%Y-%m-%d")) + 3600,
        ended=time.mktime(time.strptime(day, "%Y-%m-%d")) + 7200,
        model="scripted:builder",
        improver_model="scripted:improver",
        improve_id="x" if cycle else None,
    )
    write(folder / "nightly.json", record.model_dump_json(indent=2))
    write_reports(Home(home), folder)  # the nightly's own report.html, report.md, index
    write(folder / "nightly.log", f"night began\n{EVIL}\n")
    return folder


# ------------------------------------------------------------------ a real matrix run
@pytest.fixture(scope="module")
def matrix_home(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Path:
    """A home holding one real matrix run: the small matrix's holdout task, built once by a
    scripted model (a build of each of its three tasks would take some 30 s)."""
    from orchestrator.bench.matrix import run_matrix

    root = tmp_path_factory.mktemp("matrix")
    with pytest.MonkeyPatch.context() as mp:
        home = isolate(mp, root, shared_cache)
        run_matrix(
            Home(home), build_config(BUILDER), SMALL, repeats=1, split="holdout", learn=False
        )
    return home


@pytest.mark.e2e
def test_a_real_matrix_runs_page_gives_its_figures_and_links_its_build(home, matrix_home):
    shutil.copytree(matrix_home / "runs", home / "runs", symlinks=True)
    (folder,) = (home / "runs").glob("matrix-*")
    r = MatrixResults.model_validate_json((folder / "results.json").read_text())
    (b,) = r.runs
    c = client(home)
    html = c.get(f"/runs/{folder.name}").text
    assert f"<code>{folder.name}</code>" in html and "s-finished" in html
    assert "<b>1.000</b> (train —, holdout 1.000)" in html
    assert "tests/fixtures/matrix_small" in html and BUILDER in html
    assert html.count(f'href="/runs/{b.run_id}"') == 2  # in the tasks' table and the builds'
    assert "<b>wf-h</b>" in html and "scored 1.00" in html
    assert f"{b.checks_passed}/{b.checks_total}" in html and f"{r.tokens:,}" in html
    build = c.get(f"/runs/{b.run_id}")
    assert build.status_code == 200 and f"Build <code>{b.run_id}</code>" in build.text


def test_a_matrix_page_shows_stats_verdicts_and_links_only_builds_in_this_home(home):
    runs_dir = home / "runs"
    here = "20260101-000001-aaaaaa"
    write(runs_dir / here / "task.json", "{}")
    runs = [
        task_run("wf-a", 0, 0.5, here, cost_usd=0.25, tokens=1000, seconds=30),
        task_run("wf-a", 1, 1.0, "20260101-000002-bbbbbb", cost_usd=0.5, tokens=2000, seconds=90),
        task_run(
            "wf-b",
            0,
            0.0,
            "20260101-000003-cccccc",
            status="failed",
            reached_validate=False,
            verdict="not_scored",
            failed_phase="build",
            phase_outcome="budget_exhausted",
            failure=f"build: budget exhausted {EVIL}",
        ),
        task_run("wf-h", 0, 0.0, "20260101-000004-dddddd", verdict="tampered"),
    ]
    r = results(
        runs,
        {"wf-a": "train", "wf-b": "train", "wf-h": "holdout"},
        stopped_because="the spend cap ($1.00) was reached",
        not_started=2,
    )
    write(runs_dir / "matrix-20260101-000000-aaaaaa" / "results.json", r.model_dump_json())
    page = client(home).get("/runs/matrix-20260101-000000-aaaaaa")
    assert page.status_code == 200
    html = page.text
    assert "s-stopped" in html and "the spend cap ($1.00) was reached" in html
    assert "2 not started" in html
    assert f"<b>{r.score:.3f}</b> (train 0.375, holdout 0.000)" in html
    assert "$0.7500" in html and "3,000" in html  # wf-a's cost and tokens
    assert '<td class="num">0.750</td>\n  <td class="num">0.500</td>' in html  # wf-a's mean, spread
    assert "1 min 00 s" in html  # wf-a's mean time per build
    assert "budget_exhausted" in html and "not_scored" in html and "tampered" in html
    assert html.count(f'href="/runs/{here}"') == 2
    assert 'href="/runs/20260101-000002-bbbbbb"' not in html  # not in this home
    assert "20260101-000002-bbbbbb" in html
    assert_escaped(html)


def test_an_improve_page_shows_each_iteration_its_diff_decision_and_the_lessons(home):
    make_cycle(home, home / "runs" / "improve-20260101-010000-abcdef", "20260101-010000-abcdef")
    page = client(home).get("/runs/improve-20260101-010000-abcdef")
    assert page.status_code == 200
    html = page.text
    assert "s-finished" in html and "the iterations are done" in html
    assert "3, 1 accepted" in html and "210" in html and "$1.25" in html
    assert "0.0234 of 0.1 spent over 7 measured iteration(s)" in html  # the lifetime figure
    assert 'class="status s-accepted">accepted' in html
    assert 'class="status s-vetoed">vetoed' in html
    assert 'class="status s-no_proposal">no_proposal' in html
    assert VETO.replace("<", "&lt;") in html and "no weakness left to work on" in html
    assert "+0.100" in html and "0.0042" in html and "screen 24 + full 36 + confirm 60" in html
    assert "-0.200" in html  # the holdout's lift on the veto
    assert "baseline train 0.250, candidate 0.350; kept as <code>c0ffeec0ffee</code>" in html
    assert '<span class="add">+new advice' in html and '<span class="del">-old advice' in html
    assert "phase:build:budget_exhausted" in html and "0.375" in html
    assert "screen-baseline" in html
    lessons = html.split("Lessons this cycle drew")[1]
    assert "<b>worked</b>: weakness " + WEAK + " in phases/build.md" in lessons
    assert "<b>never</b>: weakness " + WEAK in lessons and "rejected on iter 2" in lessons
    assert_escaped(html)


def test_a_lesson_of_another_time_or_weakness_is_not_the_cycles(home):
    make_cycle(home, home / "runs" / "improve-20260101-010000-abcdef", "20260101-010000-abcdef")
    other = Weakness(
        id="tool-x-000000", kind="tool", signature="tool", occurrences=1, cost=0.1, tasks=[]
    )
    SelfLessons(Home(home)).kept(other, "orchestrator/tools/box.py", 0.2, 1, "another cycle's")
    html = client(home).get("/runs/improve-20260101-010000-abcdef").text
    assert "Lessons this cycle drew <small>2</small>" in html and "another cycle" not in html


def test_nights_list_every_night_with_trends_and_each_has_its_page_and_report(home):
    make_night(home, "2026-01-02")
    make_night(home, "2026-01-03", cycle=False)
    write(home / "runs" / "nightly-2026-01-04" / "nightly.json", '{"date": 5}')
    c = client(home)
    html = c.get("/nights").text
    table = html.split('<table class="runs nights">')[1]
    assert table.index("2026-01-03") < table.index("2026-01-02") < table.index("01-04")
    assert 'href="/runs/nightly-2026-01-02"' in html and 'href="/runs/nightly-2026-01-03"' in html
    assert "unreadable: nightly.json: date:" in html
    assert f"1 / 3 <code>{WEAK}</code>" in html  # accepted / tried, and what was accepted
    assert "0.250" in html and "0.750" in html  # train and holdout at the start
    assert "$0.0700" in html  # every round's builds' cost: the survey's and two iterations'
    assert html.count('<svg class="chart"') == 3 and "<polyline" in html
    assert "<title>2026-01-02: train 0.250</title>" in html
    assert "style=" not in html and "<style" not in html and "<script>" not in html

    night = c.get("/runs/nightly-2026-01-02")
    assert night.status_code == 200
    assert "the time budget ran out" in night.text and "scripted:improver" in night.text
    assert 'href="/nights/nightly-2026-01-02/report"' in night.text
    assert 'href="/nights/nightly-2026-01-02/improve"' in night.text
    assert 'class="status s-vetoed">vetoed' in night.text
    assert "0.0234 of 0.1 spent" in night.text
    assert "<b>tampered</b>: wf-b #1" in night.text  # the judge's zero, with its why
    assert_escaped(night.text)

    report = c.get("/nights/nightly-2026-01-02/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in report.headers["content-security-policy"]
    assert "<style>" not in report.text
    assert '<link rel="stylesheet" href="/nights/nightly-2026-01-02/report.css">' in report.text
    assert "cadillac nightly — 2026-01-02" in report.text and "<svg" in report.text
    assert_escaped(report.text)
    css = c.get("/nights/nightly-2026-01-02/report.css")
    assert css.headers["content-type"].startswith("text/css") and "{" in css.text
    assert css.text in (home / "runs" / "nightly-2026-01-02" / "report.html").read_text()

    cycle = c.get("/nights/nightly-2026-01-02/improve")
    assert cycle.status_code == 200 and "nightly-2026-01-02/improve" in cycle.text
    assert '<span class="add">+new advice' in cycle.text
    log = c.get("/nights/nightly-2026-01-02/text/nightly.log")
    assert log.headers["content-type"].startswith("text/plain") and EVIL in log.text
    assert c.get("/nights/nightly-2026-01-03/improve").status_code == 404
    assert c.get("/nights/nightly-2026-01-02/text/nightly.json").status_code == 404


def test_a_report_that_is_a_link_is_not_followed(home):
    folder = make_night(home, "2026-01-02", cycle=False)
    write(home / "elsewhere.html", "<p>secret</p>")
    (folder / "report.html").unlink()
    (folder / "report.html").symlink_to(home / "elsewhere.html")
    page = client(home).get("/nights/nightly-2026-01-02/report")
    assert page.status_code == 404 and "secret" not in page.text


@pytest.mark.parametrize(
    ("run_id", "file", "text", "why"),
    [
        ("matrix-20260101-000000-aaaaaa", "results.json", '{"id": 1}', "results.json: "),
        ("improve-20260101-000000-aaaaaa", "summary.json", "{not json", "summary.json: "),
        ("nightly-2026-01-01", "nightly.json", b"\xff\xfe", "nightly.json: not UTF-8 text"),
    ],
)
def test_an_unreadable_record_is_one_line_and_404(home, run_id, file, text, why):
    path = home / "runs" / run_id / file
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    page = client(home).get(f"/runs/{run_id}")
    assert page.status_code == 404
    line = re.search(r'<p class="error">([^<]*)</p>', page.text).group(1)
    assert line.startswith(f"run {run_id} is unreadable: {why}") and "\n" not in line
    assert "Traceback" not in page.text


def test_a_run_that_is_not_there_is_404(home):
    c = client(home)
    for run_id in ("matrix-20260101-000000-aaaaaa", "improve-x", "nightly-2026-01-01"):
        page = c.get(f"/runs/{run_id}")
        assert page.status_code == 404 and f"no run &#39;{run_id}&#39;" in page.text
    assert c.get("/nights/nightly-2026-01-01/report").status_code == 404
    assert c.get("/nights/improve-x/report").status_code == 404
    assert "no night has run" in c.get("/nights").text


def test_every_page_leaves_the_home_as_it_was(home):
    make_night(home, "2026-01-02")
    make_night(home, "2026-01-03", cycle=False)
    make_cycle(home, home / "runs" / "improve-20260101-010000-abcdef", "20260101-010000-abcdef")
    r = results([task_run("wf-a", 0, 0.5, "20260101-000001-aaaaaa")], {"wf-a": "train"})
    write(home / "runs" / "matrix-20260101-000000-aaaaaa" / "results.json", r.model_dump_json())
    before = snapshot(home)
    c = client(home)
    for url in (
        "/",
        "/nights",
        "/runs/matrix-20260101-000000-aaaaaa",
        "/runs/improve-20260101-010000-abcdef",
        "/runs/nightly-2026-01-02",
        "/runs/nightly-2026-01-03",
        "/nights/nightly-2026-01-02/report",
        "/nights/nightly-2026-01-02/report.css",
        "/nights/nightly-2026-01-02/improve",
        "/nights/nightly-2026-01-02/text/report.md",
        "/nights/nightly-2026-01-02/text/nightly.log",
    ):
        assert c.get(url).status_code == 200, url
    assert snapshot(home) == before
