"""Bad input to nightly, schedule, report, improve and matrix run, as a new user types it.

Each test is one item of issue 11: an error is one ``cadillac: error:`` line on stderr, a
command that fails (or only reads) creates nothing, and what is printed matches what it says.
"""

from __future__ import annotations

import json
import shutil
import webbrowser
from pathlib import Path

import pytest

from orchestrator.cli import build_parser
from orchestrator.improve.records import ImproveSummary, IterationRecord
from orchestrator.nightly.records import NightlyRecord, parse_duration
from tests.orchestrator.nightly.test_nightly import nightly_args
from tests.support import one_error_line, run

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.improve_policies:sentence_builder"
QUICK = "scripted:tests.fakes.improve_policies:never_plans"


def nothing_made(home: Path) -> None:
    runs = home / "runs"
    assert not runs.exists() or not list(runs.iterdir()), sorted(runs.iterdir())


# --- 5: a task.toml that is not UTF-8 -----------------------------------------------------------


def test_5_a_task_toml_that_is_not_utf8_is_one_line_naming_the_file(tmp_path, capsys):
    matrix = tmp_path / "matrix"
    shutil.copytree(SMALL, matrix)
    bad = matrix / "wf-b" / "task.toml"
    bad.write_bytes(b'id = "wf-b"\nprompt = "caf\xe9 tool"\n')
    fresh = tmp_path / "fresh-home"
    args = ["matrix", "run", "--matrix", str(matrix), "--model", QUICK, "--home", str(fresh)]
    code, out, err = run(capsys, *args)
    line = one_error_line(err)
    assert code == 1 and str(bad) in line and "UTF-8" in line
    assert not fresh.exists()  # a command that fails creates nothing


# --- 9: a nightly that cannot run makes no run folder ------------------------------------------


@pytest.mark.parametrize(
    "case",
    ["bad model", "not a git checkout", "no such matrix", "alpha out of reach", "bad improver"],
)
def test_9_a_nightly_that_cannot_run_makes_no_run_folder(case, home, repo, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    argv = {
        "bad model": nightly_args(repo, "--model", "nosuch/model"),
        "not a git checkout": nightly_args(plain),
        "no such matrix": nightly_args(repo, "--matrix", str(tmp_path / "nope")),
        # 2 train tasks: no p below 1/8193, above the 0.05/300 an iteration would get
        "alpha out of reach": nightly_args(repo, "--matrix", str(SMALL), "--iterations", "300"),
        "bad improver": nightly_args(repo, "--improver-model", "nosuch/improver"),
    }[case]
    code, out, err = run(capsys, *argv)
    assert code == 1
    one_error_line(err)
    nothing_made(home)
    assert not (home / "runs").exists()
    assert not list(home.glob("nightly.lock*"))


def test_9_a_bad_nightly_does_not_create_a_missing_home(repo, tmp_path, capsys):
    fresh = tmp_path / "fresh-home"
    code, out, err = run(
        capsys, *nightly_args(repo, "--model", "nosuch/model", "--home", str(fresh))
    )
    assert code == 1 and "nosuch/model" in one_error_line(err)
    assert not fresh.exists()


# --- 10 and 22: improve --status reads; a missing home is said, never created -------------------


def test_10_22_improve_status_on_a_missing_home_says_so_and_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "missing"
    code, out, err = run(capsys, "improve", "--status", "--home", str(missing))
    line = one_error_line(err)
    assert code == 1 and f"home {missing} does not exist" in line
    assert "no improve runs" not in line
    assert not missing.exists()


def test_10_a_failed_improve_creates_no_home(tmp_path, capsys):
    missing = tmp_path / "missing"
    argv = ["improve", "--model", "nosuch/model", "--matrix", str(SMALL), "--home", str(missing)]
    code, out, err = run(capsys, *argv)
    assert code == 1 and "nosuch/model" in one_error_line(err)
    assert not missing.exists()


# --- 12: schedule checks the nightly's arguments before installing anything ---------------------


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake crontab program (never the real one); returns the file it 'installs' into."""
    table = tmp_path / "crontab.txt"
    fake = tmp_path / "fakes" / "crontab"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        f'case "$1" in\n'
        f'  -l) if [ -f "{table}" ]; then cat "{table}"; '
        f'else echo "no crontab for user" >&2; exit 1; fi ;;\n'
        f'  -) cat > "{table}" ;;\n'
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CADILLAC_CRONTAB", str(fake))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return table


@pytest.mark.parametrize(
    "nightly_args, named",
    [
        (["--modle", "typo"], "--modle"),
        (["--model", "m", "--iterations", "banana"], "--iterations"),
        (["--modle", "typo", "--iterations", "banana"], "--iterations"),
        (["--model", "m", "--time-budget", "0"], "--time-budget"),
    ],
)
def test_12_schedule_refuses_nightly_arguments_the_nightly_would_refuse(
    nightly_args, named, home, tmp_path, crontab, capsys
):
    for argv in (
        ["schedule", "install", "--cron", "--", *nightly_args],
        ["schedule", "install", "--systemd", "--", *nightly_args],
        ["schedule", "print", "--", *nightly_args],
    ):
        code, out, err = run(capsys, *argv)
        line = one_error_line(err)
        assert code == 2 and named in line and "nightly" in line, line
        assert out == ""
    assert not crontab.exists()
    assert not (tmp_path / "config").exists()
    nothing_made(home)


def test_12_schedule_still_takes_good_nightly_arguments(home, crontab, capsys):
    argv = ["--model", "openai/gpt-4o", "--time-budget", "6h", "--iterations", "8"]
    code, out, err = run(capsys, "schedule", "print", "--", *argv)
    assert code == 0 and "nightly --home" in out and "--iterations 8" in out, err


def test_10_a_schedule_install_that_fails_creates_no_home(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "fakes" / "crontab"
    broken.parent.mkdir()
    broken.write_text('#!/bin/sh\necho "crontab: permission denied" >&2\nexit 1\n')
    broken.chmod(0o755)
    monkeypatch.setenv("CADILLAC_CRONTAB", str(broken))
    missing = tmp_path / "missing"
    argv = ["schedule", "install", "--cron", "--home", str(missing), "--", "--model", "m"]
    code, out, err = run(capsys, *argv)
    assert code == 1 and "permission denied" in one_error_line(err)
    assert not missing.exists()


# --- 13: every listing and status command takes --json -----------------------------------------


def _improve_run(home: Path) -> ImproveSummary:
    summary = ImproveSummary(
        id="20260101-020000-abcdef",
        repo="/r",
        base_commit="a" * 40,
        tip_commit="b" * 40,
        started=1.0,
        ended=2.0,
        stopped_because="1 iteration(s) done",
        iterations=[IterationRecord(iteration=1, status="rejected", reason="no lift")],
    )
    folder = home / "runs" / f"improve-{summary.id}"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(summary.model_dump_json(indent=2))
    return summary


def test_13_improve_status_json_prints_json(home, capsys):
    summary = _improve_run(home)
    code, out, err = run(capsys, "improve", "--status", "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(summary.model_dump_json())


def test_13_report_json_lists_the_nights(home, capsys):
    night = home / "runs" / "nightly-2026-01-01"
    night.mkdir(parents=True)
    record = NightlyRecord(date="2026-01-01", status="finished", started=1.0, ended=2.0)
    (night / "nightly.json").write_text(record.model_dump_json())
    code, out, err = run(capsys, "report", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["index"] == str(home / "runs" / "index.html")
    (listed,) = data["nights"]
    assert listed["folder"] == str(night) and listed["status"] == "finished"
    assert listed["report_html"] == str(night / "report.html")
    assert Path(listed["report_md"]).is_file()


def test_13_report_on_a_home_without_nights_lists_none_and_makes_no_lock(home, capsys):
    code, out, err = run(capsys, "report", "--json")
    assert code == 0 and json.loads(out)["nights"] == [], err
    assert not list(home.glob("nightly.lock*"))


# --- 14: the matrix table's columns hold what their header says ---------------------------------


def test_14_the_matrix_table_puts_each_value_under_its_header(home, capsys):
    argv = ["matrix", "run", "--matrix", str(SMALL), "--model", QUICK, "--no-learn"]
    code, out, err = run(capsys, *argv, "--repeats", "2")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith(("┃", "│"))]
    header = [cell.strip() for cell in rows[0].strip("┃").split("┃")]
    (results_path,) = (home / "runs").glob("matrix-*/results.json")
    results = json.loads(results_path.read_text())
    by_task = {t["task_id"]: t for t in results["tasks"]}
    assert len(rows) == 1 + len(by_task)
    for line in rows[1:]:
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        assert len(cells) == len(header), (header, cells)
        row = dict(zip(header, cells, strict=True))
        t = by_task[row["task"]]
        assert row["split"] == t["split"] and row["runs"] == str(len(t["scores"]))
        assert row["mean"] == f"{t['mean']:.2f}" and row["spread"] == f"{t['spread']:.2f}"
        assert row["tokens"] == f"{t['tokens']:,}" and t["tokens"] > 0
        assert row["time/build"] == f"{t['seconds']:.0f} s"
        assert row["cost"] == "-" and row["flags"] == "-"


# --- 18: one duration syntax for nightly and improve, and 0 or less refused in one line ---------


@pytest.mark.parametrize(
    "text, seconds",
    [("6h", 21600), ("90m", 5400), ("1h30m", 5400), ("1h 30m", 5400), ("90", 5400), ("45s", 45)],
)
def test_18_nightly_and_improve_read_the_same_durations(text, seconds):
    for command in ("nightly", "improve"):
        args = build_parser().parse_args([command, "--time-budget", text])
        assert args.time_budget == seconds, (command, text)
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-1h", "0m", "-5", "banana", "1e999"])
@pytest.mark.parametrize("command", ["nightly", "improve"])
def test_18_a_time_budget_of_0_or_less_is_one_line(command, text, home, repo, capsys):
    argv = nightly_args(repo) if command == "nightly" else ["improve", "--model", BUILDER]
    argv = [command, *argv[1:]]
    code, out, err = run(capsys, *argv, "--time-budget", text)
    line = one_error_line(err)
    assert code == 2 and "--time-budget" in line and repr(text) in line, line
    assert "expected one argument" not in line
    nothing_made(home)


# --- 21: schedule's messages point to the right place -------------------------------------------


def test_21_nightly_options_before_the_dashes_get_the_hint(home, capsys):
    code, out, err = run(capsys, "schedule", "print", "--model", "x")
    line = one_error_line(err)
    assert code == 2 and "--model" in line and "go after '--'" in line, line


def test_21_a_line_break_in_a_nightly_argument_names_no_missing_flag(home, capsys):
    argv = ["--model", "openai/gpt-4o", "--matrix", "a\nb"]  # (a model's own check says more)
    code, out, err = run(capsys, "schedule", "print", "--", *argv)
    line = one_error_line(err)
    assert code == 1 and "--args" not in line and "nightly argument" in line, line
    assert "'a\\nb'" in line


# --- 24: report --open without a browser; a corrupt nightly.json --------------------------------


def test_24_report_open_without_a_browser_says_where_the_report_is(
    home, tmp_path, monkeypatch, capsys
):
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no browser can be found
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # look again, in this environment
    code, out, err = run(capsys, "report", "--open")
    assert code == 0
    index = home / "runs" / "index.html"
    assert index.is_file()
    assert "no browser" in err and str(index) in err, err


@pytest.mark.parametrize("text", [b"{bad", b"\xff", b'{"date": "x", "status": "banana"}', b"[]"])
def test_24_a_corrupt_nightly_json_is_warned_about_by_name(text, home, capsys):
    good = home / "runs" / "nightly-2026-01-01"
    good.mkdir(parents=True)
    record = NightlyRecord(date="2026-01-01", status="finished", started=1.0, ended=2.0)
    (good / "nightly.json").write_text(record.model_dump_json())
    bad = home / "runs" / "nightly-2026-01-02"
    bad.mkdir()
    (bad / "nightly.json").write_bytes(text)
    code, out, err = run(capsys, "report")
    assert code == 0
    warned = [line for line in err.splitlines() if str(bad / "nightly.json") in line]
    assert len(warned) == 1 and warned[0].startswith("cadillac: warning: "), err
    assert "2 nightly report(s)" in out
    assert "unknown" in (bad / "report.md").read_text()
