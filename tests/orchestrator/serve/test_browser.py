"""The dashboard in a real Chromium: every page loads with no console error, a build started
during the test appears and its page follows it without a reload."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.fakes.improve_policies import wordfreq
from tests.orchestrator.serve.conftest import ROOT, build_ids, first_two
from tests.orchestrator.serve.test_pages_kinds import make_night, results, task_run


def until(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.2)


pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("serve-browser")]


def test_every_page_loads_with_no_console_error(chromium, served, built_home):
    b, page = chromium, chromium.page
    build, iterate = first_two(built_home)
    night = make_night(built_home, "2026-12-01")  # a night with its improve cycle
    matrix = built_home / "runs" / "matrix-20261206-000000-abcdef"
    runs = [task_run("wordfreq", 0, 1.0, build), task_run("wordfreq", 1, 0.5, iterate)]
    (matrix / "results.json").parent.mkdir()
    (matrix / "results.json").write_text(results(runs, {"wordfreq": "train"}).model_dump_json())
    page.reload()
    assert page.title() == "Runs · cadillac"
    assert page.locator("table.runs tbody tr").count() >= 4
    b.shot("runs")
    page.select_option("select[name=kind]", "iterate")
    page.click("form.filters button")
    assert page.locator("table.runs tbody tr").count() == 1
    b.shot("runs-filtered")

    page.goto(served.base + f"runs/{build}")
    timeline = page.locator("table.timeline tbody tr")
    assert timeline.count() == 6
    assert page.locator("table.timeline .status.s-passed").count() == 6
    assert page.locator("li.round").count() >= 6
    assert page.locator("details.tool").count() >= 6
    assert page.locator(".reflection").count() == 6
    assert page.locator("#phase-plan li.round").first.inner_text().count("write_file") >= 1
    b.shot("build")
    page.locator("#phase-build").scroll_into_view_if_needed()
    b.shot("build-rounds")

    page.goto(served.base + f"runs/{iterate}")
    assert page.locator("pre.diff span.add").count() > 0  # the change, as a diff
    page.locator("pre.diff").scroll_into_view_if_needed()
    b.shot("iterate-diff")

    pages = {
        "matrix": f"runs/{matrix.name}",
        "improve": f"nights/{night.name}/improve",
        "nights": "nights",
        "night": f"runs/{night.name}",
        "report": f"nights/{night.name}/report",
        "memory": "memory",
        "memory-recall": "memory?task=a+flask+api+with+sqlite",
        "memory-notes": "memory/notes",
        "memory-skills": "memory/skills",
        "memory-budgets": "memory/budgets",
    }
    for name, path in pages.items():
        assert page.goto(served.base + path).ok, path
        b.shot(name)
    page.goto(served.base + f"runs/{matrix.name}")
    page.click(f"a[href='/runs/{build}']")  # a matrix's build links to its page
    assert page.locator("table.timeline").count() == 1
    assert b.errors == [] and b.dialogs == []
    response = page.goto(served.base + "runs/no-such-run")
    assert response.status == 404 and "no run 'no-such-run'" in page.inner_text("main")
    b.shot("not-found")
    assert [e for e in b.errors if "404" not in e] == []


def test_a_build_started_now_appears_and_its_page_follows_it_live(chromium, served, built_home):
    b, page = chromium, chromium.page
    before = set(build_ids(built_home))
    env = os.environ | {"CADILLAC_HOME": str(built_home)}
    build = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "build",
            wordfreq.TASK,
            "--model",
            "scripted:tests.fakes.serve_policies:slow_wordfreq",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # the runs page refreshes its table by itself: the new build appears, marked live
        live_row = page.locator("table.runs tbody tr.live")
        live_row.first.wait_for(timeout=30_000)
        (new,) = set(build_ids(built_home)) - before
        assert new in live_row.first.inner_text()
        b.shot("runs-live")
        page.click(f"text={new}")
        page.wait_for_selector("main[data-stream]")
        page.evaluate("window.__same_page = true")
        rounds = page.locator("li.round")
        first = rounds.count()
        until(lambda: rounds.count() > first, 60)  # (the page's CSP forbids Playwright's eval)
        assert "predates" not in page.inner_text("main")  # a running build is not an old one
        assert page.locator("#no-rounds").count() == 0
        b.shot("build-live")
        ended = "document.querySelector('main').dataset.ended"
        until(lambda: page.evaluate(ended), 120)
        assert page.evaluate(ended) == "passed"
        assert page.evaluate("window.__same_page") is True  # followed without a reload
        assert page.locator("#head .status").first.inner_text() == "passed"
        assert page.locator("li.round").count() > first
        assert page.locator("table.timeline .status.s-passed").count() == 6
        b.shot("build-live-ended")
        build.wait(timeout=60)  # its last writes (budgets, skills) come after the summary
    finally:
        if build.poll() is None:
            build.kill()
        _, err = build.communicate(timeout=30)
    assert build.returncode == 0, err
    assert b.errors == [] and b.dialogs == []
