"""A run whose every record a model filled with markup, in a real Chromium: nothing executes,
nothing links out, and a 10 MB tool output leaves the page usable.

The model (``tests.fakes.serve_policies:hostile``) puts script tags, ``onerror`` attributes,
``javascript:`` links and a ``<style>`` that would hide the page into its messages, the file
names it writes and reads, what its commands print, its phase summary and the lessons its
reflection draws; the task itself carries them too. The build runs for real; then a round
with a 10 MB tool output is appended to its trajectory, as a command that printed that much
would leave it.
"""

from __future__ import annotations

import time

import pytest

from orchestrator.cli import main
from orchestrator.loop.trajectory import RoundRecord, ToolStep, append
from tests.conftest import isolate
from tests.fakes.serve_policies import HOSTILE, PWN, SCRIPT
from tests.orchestrator.serve.conftest import build_ids

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("serve-hostile")]

BIG = 10 * 2**20
TASK = f"Build a notes app {SCRIPT} with a page"


@pytest.fixture(scope="module")
def built_home(tmp_path_factory, shared_cache):
    root = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        home = isolate(mp, root, shared_cache)
        model = "scripted:tests.fakes.serve_policies:hostile"
        assert main(["build", TASK, "--model", model]) == 1  # its plan is no plan
        (run_id,) = build_ids(home)
        big = ("<script>" + PWN + "</script>" + "x" * 1000 + "\n") * (BIG // 1024)
        append(
            home / "runs" / run_id,
            RoundRecord(
                phase="plan",
                round=99,
                text=HOSTILE,
                tools=[ToolStep(name="run", arguments='{"command": "cat big"}', result=big)],
            ),
        )
        yield home


def test_a_hostile_run_is_inert_and_usable(chromium, served, built_home):
    b, page = chromium, chromium.page
    (run_id,) = build_ids(built_home)
    assert page.locator("table.runs").inner_text().count(SCRIPT) == 1  # shown, as text
    b.shot("hostile-runs")
    started = time.monotonic()
    response = page.goto(served.base + f"runs/{run_id}")
    took = time.monotonic() - started
    assert response.ok and took < 20, took
    assert len(response.body()) < 3 * 2**20  # a 10 MB output is not sent whole
    b.shot("hostile-build")
    # nothing ran: no dialog, no flag set, no script element but the page's own file
    assert page.evaluate("window.__pwned") is None and b.dialogs == []
    assert page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))") == [
        "/static/live.js"
    ]
    # nothing a model wrote became an element or an attribute
    for selector in ("[onerror]", "img[src=x]", "a[href^='javascript:']", "main style"):
        assert page.locator(selector).count() == 0, selector
    assert page.locator("main").is_visible()  # its <style> hid nothing
    text = page.inner_text("main")
    for shown in (SCRIPT, 'onerror="window.__pwned=1"', "javascript:window.__pwned=1"):
        assert shown in text, shown
    # the 10 MB output: its head on the page, the whole behind a link, as plain text
    cut = page.locator("p.cut", has_text="more characters").first
    assert cut.is_visible()
    href = cut.locator("a").get_attribute("href")
    whole = page.request.get(served.base.rstrip("/") + href)
    assert whole.ok and whole.headers["content-type"].startswith("text/plain")
    assert len(whole.body()) > BIG and "nosniff" in whole.headers["x-content-type-options"]
    # still usable: a tool call opens and closes, the page scrolls to its end
    summary = page.locator("details.tool > summary").first
    summary.click()
    summary.click()
    page.keyboard.press("End")
    assert page.evaluate("window.__pwned") is None
    assert b.errors == [] and b.dialogs == []


def test_the_plain_text_of_a_tool_output_runs_nothing_either(chromium, served, built_home):
    """Opened as a page of its own, the whole output is text: its script does not run."""
    b, page = chromium, chromium.page
    (run_id,) = build_ids(built_home)
    page.goto(served.base + f"runs/{run_id}/tool/0/0?part=arguments")
    assert SCRIPT in page.inner_text("body")
    assert page.evaluate("window.__pwned") is None and b.dialogs == []
