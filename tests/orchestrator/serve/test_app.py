"""The dashboard's application without a browser: its token, its headers, its refusals, and
that it never writes the home it reads."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from starlette.testclient import TestClient

from orchestrator.home import Home
from orchestrator.serve.app import CSP, make_app
from orchestrator.serve.config import ServeConfig
from tests.orchestrator.serve.conftest import ROOT, TOKEN, first_two, snapshot
from tests.support import one_error_line, run

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def client(home, **kwargs) -> TestClient:
    app = make_app(Home(home), ServeConfig(token=TOKEN, port=8765))
    return TestClient(app, follow_redirects=False, **kwargs)


def bearer(home) -> TestClient:
    return client(home, headers={"Authorization": f"Bearer {TOKEN}"})


def test_every_request_needs_the_token_and_the_url_hands_it_to_a_cookie(home):
    c = client(home)
    for path in ("/", "/runs/x", "/static/style.css", "/nights", "/runs/x/stream"):
        response = c.get(path)
        assert response.status_code == 403 and "access token" in response.text, path
    assert c.get("/?token=" + "u" * 32).status_code == 403
    assert c.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert c.get("/", headers={"Cookie": f"cadillac_token_8765={'u' * 32}"}).status_code == 403
    response = c.get(f"/?kind=build&token={TOKEN}")
    assert response.status_code == 303 and response.headers["location"] == "/?kind=build"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"cadillac_token_8765={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/", headers={"Cookie": f"cadillac_token_8765={TOKEN}"}).status_code == 200
    assert c.get("/", headers={"Cookie": f"cadillac_token_9999={TOKEN}"}).status_code == 403
    assert bearer(home).get("/").status_code == 200


def test_every_response_says_no_inline_script_no_frame_no_sniffing(home):
    responses = [client(home).get("/"), bearer(home).get("/"), bearer(home).get("/runs/none")]
    responses.append(bearer(home).get("/static/live.js"))
    for response in responses:
        h = response.headers
        assert h["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY"
        assert h["referrer-policy"] == "no-referrer"
    assert responses[2].status_code == 404 and "no run &#39;none&#39;" in responses[2].text


def test_a_run_id_never_leaves_the_runs_folder(home):
    (home / "secret").mkdir()
    (home / "secret" / "task.json").write_text("{}")
    c = bearer(home)
    for path in ("/runs/..%2Fsecret", "/runs/%2E%2E", "/runs/%2E%2E/secret", "/runs/a%00b"):
        response = c.get(path)
        assert response.status_code == 404, path


def test_the_pages_never_write_the_home(built_home):
    before = snapshot(built_home)
    c = bearer(built_home)
    build, iterate = first_two(built_home)
    for path in (
        "/",
        "/?kind=build&status=passed&q=wordfreq",
        "/?part=rows",
        f"/runs/{build}",
        f"/runs/{iterate}",
        f"/runs/{build}/tool/0/0",
        f"/runs/{build}/tool/0/0?part=arguments",
        "/nights",
        "/memory",
    ):
        assert c.get(path).status_code in (200, 404), path
    assert snapshot(built_home) == before


def test_a_screenshot_is_a_png_of_the_run_never_through_a_link(built_home, tmp_path):
    build, _ = first_two(built_home)
    shots = built_home / "runs" / build / "stories" / "integrate"
    shots.mkdir(parents=True, exist_ok=True)
    (shots / "home.png").write_bytes(PNG)
    (shots / "page.png").write_bytes(b"<script>alert(1)</script>")
    outside = tmp_path / "outside.png"
    outside.write_bytes(PNG + b"the user's")
    (shots / "link.png").symlink_to(outside)
    c = bearer(built_home)
    try:
        ok = c.get(f"/runs/{build}/shot/integrate/home.png")
        assert ok.status_code == 200 and ok.headers["content-type"] == "image/png"
        assert ok.content == PNG
        assert c.get(f"/runs/{build}/shot/integrate/page.png").status_code == 404
        assert c.get(f"/runs/{build}/shot/integrate/link.png").status_code == 404
        assert c.get(f"/runs/{build}/shot/..%2F..%2Ftask.json/x.png").status_code == 404
        page = c.get(f"/runs/{build}").text
        assert "shot/integrate/home.png" in page and "link.png" not in page
    finally:
        for name in ("home.png", "page.png", "link.png"):
            (shots / name).unlink()


def test_a_build_page_has_every_phase_round_and_reflection(built_home):
    from orchestrator.loop.trajectory import read_trajectory

    build, iterate = first_two(built_home)
    trajectory = read_trajectory(built_home / "runs" / build)
    assert trajectory.recorded and len(trajectory.reflections) == 6
    html = bearer(built_home).get(f"/runs/{build}").text
    assert html.count('<li class="round') == len(trajectory.rounds)
    assert html.count('class="reflection"') == 6
    for r in trajectory.rounds:
        for tool in r.tools:
            assert f"<code>{tool.name}</code>" in html
    patch = bearer(built_home).get(f"/runs/{iterate}").text
    assert '<span class="add">+' in patch and "--min-length" in patch


def test_an_old_run_without_round_records_says_so(built_home, tmp_path):
    build, _ = first_two(built_home)
    path = built_home / "runs" / build / "trajectory.jsonl"
    kept = tmp_path / "kept.jsonl"
    path.rename(kept)
    try:
        html = bearer(built_home).get(f"/runs/{build}").text
        assert "predates round records" in html and html.count('<li class="round') == 0
    finally:
        kept.rename(path)


def test_serve_refuses_bad_input_in_one_line(home, capsys):
    code, _, err = run(capsys, "serve", "--port", "70000")
    assert code == 2 and "must be a port number" in one_error_line(err)
    code, _, err = run(capsys, "serve", "--home", str(home / "none"))
    assert code == 1 and "does not exist" in one_error_line(err)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        code, _, err = run(capsys, "serve", "--port", str(taken.getsockname()[1]))
        assert code == 1 and "is in use" in one_error_line(err)
    finally:
        taken.close()


def test_serve_prints_its_url_with_a_token_and_stops_on_sigterm(home):
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=os.environ | {"CADILLAC_HOME": str(home)},
    )
    try:
        line = process.stdout.readline()
        assert line.startswith(f"cadillac serve: {home} at http://127.0.0.1:")
        assert "?token=" in line and len(line.split("?token=")[1].strip()) >= 32
    finally:
        process.terminate()
        out, err = process.communicate(timeout=20)
    assert "Traceback" not in err, err


def test_the_runs_listing_keeps_a_settled_row_only_while_its_records_stand(built_home):
    from orchestrator.serve.listing import all_runs

    build, _ = first_two(built_home)
    home, cache = Home(built_home), {}
    fresh = all_runs(home)
    assert all_runs(home, cache) == fresh and build in cache
    assert all_runs(home, cache) == fresh  # from the cache
    path = built_home / "runs" / build / "summary.json"
    kept = path.read_text()
    try:
        path.write_text(kept.replace('"status": "passed"', '"status": "failed"'))
        (row,) = [r for r in all_runs(home, cache) if r["run_id"] == build]
        assert row["status"] == "failed"
        path.write_text("{not json")
        (row,) = [r for r in all_runs(home, cache) if r["run_id"] == build]
        assert row["status"] == "unreadable" and build not in cache
    finally:
        path.write_text(kept)
    assert all_runs(home, cache) == fresh


def test_a_running_night_is_probed_without_a_lock_file_made(home):
    """The listing asks whether a nightly holds the home's lock without taking it: taking
    it made ``nightly.lock`` in the home the dashboard only reads."""
    import time

    from orchestrator.nightly.records import NightlyRecord
    from orchestrator.serve.listing import all_runs

    folder = home / "runs" / "nightly-2026-12-01"
    folder.mkdir(parents=True)
    record = NightlyRecord(date="2026-12-01", status="running", started=time.time())
    (folder / "nightly.json").write_text(record.model_dump_json())
    before = snapshot(home)
    (row,) = all_runs(Home(home))
    assert row["status"] == "interrupted"
    assert bearer(home).get(f"/runs/{folder.name}").status_code == 200
    assert snapshot(home) == before and not (home / "nightly.lock").exists()


def test_a_trajectory_that_is_a_link_is_not_followed(built_home, tmp_path):
    """A link at trajectory.jsonl (the run folder is cadillac's, but a page must not be the
    way to read a file elsewhere) shows no round of the file it names."""
    build, _ = first_two(built_home)
    path = built_home / "runs" / build / "trajectory.jsonl"
    kept = tmp_path / "kept.jsonl"
    path.rename(kept)
    outside = tmp_path / "outside.jsonl"
    outside.write_text(kept.read_text().replace("write_file", "the-users-secret-tool"))
    path.symlink_to(outside)
    try:
        html = bearer(built_home).get(f"/runs/{build}").text
        assert "the-users-secret-tool" not in html and html.count('<li class="round') == 0
        assert bearer(built_home).get(f"/runs/{build}/tool/0/0").status_code == 404
    finally:
        path.unlink()
        kept.rename(path)


def test_the_stream_of_an_ended_build_says_so_and_closes(built_home):
    build, _ = first_two(built_home)
    with bearer(built_home).stream("GET", f"/runs/{build}/stream") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    events = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert events[-2:] == ["head", "end"] and events.count("round") > 6
    assert '"status": "passed"' in text


def test_the_memory_is_read_before_the_first_visit_and_nothing_is_written(corpus_home):
    from orchestrator.serve.memory_reader import warm

    before = snapshot(corpus_home)
    app = make_app(Home(corpus_home), ServeConfig(token=TOKEN))
    warm(app.app.state)
    reader = app.app.state.memory_reader
    shown, total = reader.lessons("newest", None, None, [])
    assert total == len(shown) == 403  # the corpus, parsed once
    assert snapshot(corpus_home) == before


def test_a_run_without_rounds_says_so_and_not_that_it_is_old(built_home, capsys):
    """No trajectory.jsonl and no round in the events: no round ran (or, running, none has
    ended yet): neither the page nor the terminal calls it a run made before round records."""
    import shutil

    from tests.support import run as cli

    build, _ = first_two(built_home)
    source, target = built_home / "runs" / build, built_home / "runs" / "20200101-000000-abcdef"
    target.mkdir()
    try:
        for name in ("task.json", "summary.json"):
            shutil.copy(source / name, target / name)
        (target / "events.jsonl").write_text(
            (source / "events.jsonl").read_text().splitlines()[0] + "\n"  # build_start alone
        )
        html = bearer(built_home).get(f"/runs/{target.name}").text
        assert "No round ran." in html and "predates" not in html
        code, out, _ = cli(
            capsys, "runs", "show", target.name, "--trajectory", "--home", str(built_home)
        )
        assert code == 0 and "no round ran" in out and "predates" not in out
    finally:
        shutil.rmtree(target)
