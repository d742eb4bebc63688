"""Issue 22, the command line's items (6, 12, 16, 18, 21): each mistake is one
``cadillac: error:`` line with exit status 2, and what is printed says what happened."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.cli.config import UNSAFE
from tests.support import one_error_line, run

BAD_URLS = ["http://[::1", "http://[oops]:80/v1", ""]
URL_OPTIONS = [
    ["build", "--model", "openai/x", "--api-base", "{url}", "a task"],
    [
        "build",
        "--model",
        "openai/x",
        "--fallback-model",
        "openai/y",
        "--fallback-api-base",
        "{url}",
        "a task",
    ],
    ["schedule", "print", "--", "--model", "openai/x", "--api-base", "{url}"],
    ["schedule", "print", "--", "--model", "openai/x", "--improver-api-base", "{url}"],
]


def nothing_made(home: Path) -> None:
    runs = home / "runs"
    assert not runs.exists() or not list(runs.iterdir()), sorted(runs.iterdir())


# --- 6: a malformed URL is one line, exit 2, wherever a URL is taken ----------------------------


@pytest.mark.parametrize("argv", URL_OPTIONS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("url", BAD_URLS)
def test_6_a_malformed_url_is_one_line_and_exit_2(home, capsys, argv, url):
    code, out, err = run(capsys, *[url if a == "{url}" else a for a in argv])
    line = one_error_line(err)
    assert code == 2 and repr(url) in line and "api-base" in line
    nothing_made(home)


def test_6_a_malformed_ipv6_url_in_the_environment_is_one_line(home, capsys, monkeypatch):
    monkeypatch.setenv("CADILLAC_API_BASE", "http://[::1")
    code, out, err = run(capsys, "build", "--model", "openai/x", "a task")
    assert code != 0 and "'http://[::1' is not a URL" in one_error_line(err)
    nothing_made(home)


# --- 12: the schedule's line works on a fresh home, and refuses what cron would lack ------------


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock is not installed")
def test_12_the_cron_line_runs_on_a_fresh_home_and_logs(tmp_path, capsys):
    home = tmp_path / "fresh 'home' $x"
    home.mkdir()  # as `cadillac schedule install` leaves it: no runs/ yet
    fake = _script(tmp_path / "bin" / "cadillac", 'echo "nightly ran: $*"')
    from orchestrator.nightly.schedule import ScheduleConfig, cron_line

    cfg = ScheduleConfig(home=home, cadillac=fake, args=["--model", "openai/gpt-4o"])
    command = cron_line(cfg).splitlines()[1].split(" ", 5)[5].replace("\\%", "%")
    done = subprocess.run(["/bin/sh", "-c", command], cwd="/", timeout=30, capture_output=True)
    assert done.returncode == 0, done.stderr
    log = (home / "runs" / "nightly-cron.log").read_text(encoding="utf-8")
    assert log.startswith("nightly ran: nightly --home ")


def test_12_schedule_print_refuses_a_home_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "no-such-home"
    code, out, err = run(
        capsys, "schedule", "print", "--home", str(missing), "--", "--model", "openai/gpt-4o"
    )
    line = one_error_line(err)
    assert code == 1 and str(missing) in line and "does not exist" in line and out == ""
    assert not missing.exists()


@pytest.mark.parametrize("kind", ["--cron", "--systemd"])
def test_12_schedule_refuses_a_nightly_without_a_model(home, capsys, monkeypatch, kind):
    monkeypatch.setenv("CADILLAC_MODEL", "openai/gpt-4o")  # here, but not in cron's env
    for action in ("print", "install"):
        code, out, err = run(capsys, "schedule", action, kind, "--", "--iterations", "2")
        line = one_error_line(err)
        assert code == 2 and "--model" in line and "CADILLAC_MODEL" in line and out == ""


@pytest.mark.parametrize(
    "model, key", [("openai/gpt-4o", "OPENAI_API_KEY"), ("anthropic/claude-x", "ANTHROPIC_API_KEY")]
)
def test_12_the_install_notes_name_the_key_of_the_models_provider(
    home, tmp_path, monkeypatch, capsys, model, key
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no systemctl
    from orchestrator.nightly.schedule import ScheduleConfig, install

    fake = _script(tmp_path / "bin" / "cadillac", "exit 0")
    lines = install(ScheduleConfig(home=home, cadillac=fake, args=["--model", model]), "systemd")
    notes = [x for x in lines if "provider key" in x]
    assert len(notes) == 1 and f"Environment={key}=" in notes[0], lines
    other = "ANTHROPIC_API_KEY" if key == "OPENAI_API_KEY" else "OPENAI_API_KEY"
    assert not any(other in x for x in lines)


# --- 18: the status line counts the wait; --request-timeout on every model command --------------


def test_18_the_status_line_shows_the_time_waited_tokens_and_cost():
    from orchestrator.cli.output import StatusLine
    from orchestrator.loop.agent import Progress

    now = [1000.0]
    p = Progress("implement", 3, 30, "thinking", since=1000.0, tokens=12345, cost_usd=0.00105)
    line = StatusLine(p, clock=lambda: now[0])
    assert line.text() == "implement · round 3/30 · thinking 0 s · 12,345 tokens · $0.00105"
    now[0] += 185  # a server that does not answer: the same line, rendered again later
    assert "thinking 3 min 05 s" in line.text()
    unpriced = Progress("plan", 1, 8, "run", since=1000.0, tokens=0)
    assert StatusLine(unpriced, clock=lambda: 1000.0).text().endswith("· 0 tokens")


def test_18_a_builds_progress_carries_when_it_began_and_the_spend_so_far(home):
    import importlib.util
    import time

    from orchestrator.home import Home
    from orchestrator.llm.backends import register_script
    from orchestrator.loop.agent import Builder
    from tests.support import build_config

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("wf", root / "examples/wordfreq/policy.py")
    wordfreq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wordfreq)
    model = register_script("status-wordfreq", wordfreq.policy)
    builder = Builder.start(Home(home), build_config(model), wordfreq.TASK)
    seen = []
    builder.on_progress = seen.append
    started = time.time()
    builder.build()
    assert seen and all(started <= p.since <= time.time() for p in seen)
    tokens = [p.tokens for p in seen]
    assert tokens == sorted(tokens) and tokens[0] == 0 and tokens[-1] > 0


MODEL_COMMANDS = [
    ["build", "a task"],
    ["enhance", ".", "add a flag"],
    ["iterate", "20260101-000000-abcdef", "more"],
    ["matrix", "run"],
    ["improve"],
    ["nightly"],
]


@pytest.mark.parametrize("argv", MODEL_COMMANDS, ids=lambda a: a[0])
def test_18_every_command_that_calls_a_model_takes_request_timeout(argv):
    from orchestrator.cli import build_parser

    args = build_parser().parse_args([*argv, "--request-timeout", "30"])
    assert args.request_timeout == 30.0


@pytest.mark.parametrize("value", ["0", "-5", "3601", "inf", "nan", "soon"])
def test_18_request_timeout_is_bounded_and_validated(home, capsys, value):
    code, out, err = run(
        capsys, "build", "a task", "--model", "openai/x", "--request-timeout", value
    )
    line = one_error_line(err)
    assert code == 2 and "--request-timeout" in line and repr(value) in line
    nothing_made(home)


def test_18_request_timeout_reaches_the_model_call(home, capsys):
    import argparse
    import time

    from orchestrator.cli import build_parser
    from orchestrator.cli.config import build_config
    from orchestrator.llm.client import LLMClient, ModelError, litellm_module
    from tests.fakes.openai_server import FakeOpenAI

    litellm_module()  # imported before the clock starts: only the request is timed

    with FakeOpenAI(lambda body: {"status": 200, "delay_s": 3}) as silent:
        # the answer comes after the client left: its broken pipe, printed by the server's
        # thread whenever it comes, would land in a later test's stderr
        silent.server.handle_error = lambda request, client_address: None
        argv = ["build", "t", "--model", "openai/m", "--api-base", silent.api_base]
        args: argparse.Namespace = build_parser().parse_args([*argv, "--request-timeout", "1"])
        config = build_config(args).llm
        assert config.request_timeout_s == 1.0
        llm = LLMClient(config.model_copy(update={"max_attempts": 1}))
        started = time.perf_counter()
        with pytest.raises(ModelError):
            llm.complete([{"role": "user", "content": "hello"}])
        assert time.perf_counter() - started < 4


# --- 21: the same kind of mistake, the same answer ---------------------------------------------


@pytest.mark.parametrize(
    "argv, named",
    [
        (["build", "a task", "--model", "openai/"], "no model"),
        (["build", "a task", "--model", "openai/gpt-4o "], "blanks"),
        (["build", "a task", "--model", "openai/x", "--fallback-model", "openai/"], "no model"),
        (["improve", "--model", "openai/x", "--improver-model", " openai/y"], "blanks"),
        (["build", "a task", "--model", "openai/x", "--api-base", ""], "is empty"),
        (["build", "a task", "--model", "openai/x", "--max-cost", "inf"], "finite"),
        (["matrix", "run", "--model", "openai/x", "--max-cost", "nan"], "finite"),
        (["memory", "add", "--type", "tool_pattern", "--trigger", "two\nlines", "--fix", "x"],
         "line break"),
        (["memory", "add", "--type", "tool_pattern", "--trigger", "a\rb", "--fix", "x"],
         "line break"),
        (["build", "", "--model", "openai/x"], "say what to build"),
        (["build", "   ", "--model", "openai/x"], "say what to build"),
        (["enhance", ".", " ", "--model", "openai/x"], "say what to change"),
        (["memory", "show", ""], "is empty"),
    ],
)  # fmt: skip
def test_21_a_usage_mistake_is_one_line_and_exit_2(home, capsys, argv, named):
    code, out, err = run(capsys, *argv)
    line = one_error_line(err)
    assert code == 2 and named in line, line
    nothing_made(home)
    assert not (home / "memory.jsonl").exists()


def test_21_a_model_from_the_environment_is_checked_the_same_way(home, capsys, monkeypatch):
    monkeypatch.setenv("CADILLAC_MODEL", "openai/")
    code, out, err = run(capsys, "build", "a task")
    assert code != 0 and "no model" in one_error_line(err)
    nothing_made(home)


def test_21_a_replay_file_with_no_responses_is_refused_before_the_run(home, capsys, tmp_path):
    empty = tmp_path / "llm.jsonl"
    empty.write_text('{"v": 2, "seq": 1, "model": "m", "error": "Timeout: slow"}\n')
    code, out, err = run(capsys, "build", "a task", "--model", f"replay:{empty}")
    line = one_error_line(err)
    # exit 1, as a replay file that does not exist (test_bad_input_build's test_9): a model
    # that cannot answer, not a malformed command line
    assert code == 1 and "no responses" in line and str(empty) in line
    nothing_made(home)


def test_21_bare_cadillac_prints_its_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out.startswith("usage: cadillac")


def test_21_every_warning_has_the_one_prefix(home, capsys):
    never = "scripted:tests.fakes.improve_policies:never_plans"
    code, out, err = run(
        capsys, "build", "a task", "--model", never, "--api-base", "http://127.0.0.1:9/v1",
        "--unsafe-no-sandbox", "--max-cost", "1", "--json",
    )  # fmt: skip
    warned = [x for x in err.splitlines() if "warning" in x]
    # the sandbox is off; the api base is ignored; the price of a scripted model is unknown
    assert len(warned) == 3, err
    assert all(x.startswith("cadillac: warning: ") for x in warned), warned


def test_21_a_plugins_build_end_failure_does_not_say_the_build_goes_on(capsys):
    from orchestrator.hooks import HookError, Hooks

    Hooks.none().report([HookError("mine", "build_end", "ValueError: disk full")], None)
    err = capsys.readouterr().err
    assert err.startswith("cadillac: warning: plugin mine failed in build_end")
    assert "the build goes on" not in err and "ended" in err
    Hooks.none().report([HookError("mine", "phase_end", "ValueError: disk full")], None)
    assert "the build goes on" in capsys.readouterr().err


def test_21_installing_the_example_plugin_leaves_nothing_in_its_folder(tmp_path):
    """``pip install examples/csv_plugin`` (the README's line) builds in the folder itself:
    a copy of it is installed, and afterwards holds the files it held before."""
    import sys

    source = tmp_path / "csv_plugin"
    shutil.copytree(Path(__file__).resolve().parents[3] / "examples" / "csv_plugin", source)
    before = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--disable-pip-version-check", "--target", str(site), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert (site / "cadillac_csv_plugin.py").is_file()
    assert sorted(str(p.relative_to(source)) for p in source.rglob("*")) == before


# --- shell completion (argcomplete), and what it costs a plain command ---------------------------


def complete(tmp_path: Path, line: str) -> list[str]:
    """What the shell is offered for ``line`` (the cursor at its end), through argcomplete's
    own protocol: the program run with ``_ARGCOMPLETE`` set, its answer in a file."""
    import os
    import sys

    answer = tmp_path / "completions"
    answer.unlink(missing_ok=True)
    env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)))
    env.update(_ARGCOMPLETE_STDOUT_FILENAME=str(answer), _ARGCOMPLETE_IFS="\n")
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0 and answer.is_file(), done.stderr.decode()
    return [word.strip() for word in answer.read_text().splitlines()]


def test_the_shell_completes_commands_actions_and_options(tmp_path):
    assert complete(tmp_path, "cadillac mem") == ["memory"]
    assert complete(tmp_path, "cadillac memory l") == ["list"]
    assert complete(tmp_path, "cadillac --home /tmp me") == ["memory"]
    assert set(complete(tmp_path, "cadillac build --max-")) == {"--max-cost", "--max-tokens"}


def test_completion_costs_a_plain_command_nothing():
    import sys

    probe = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', 'argcomplete' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "LOADED False" in done.stdout, done.stderr


# --- --quiet and --verbose on the commands that print progress -----------------------------------

TALKER = "scripted:tests.fakes.improve_policies:never_plans"  # list_files until the plan's budget
PROGRESS_COMMANDS = MODEL_COMMANDS  # build, enhance, iterate, matrix run, improve, nightly


@pytest.mark.parametrize("argv", PROGRESS_COMMANDS, ids=lambda a: a[0])
def test_every_command_that_prints_progress_takes_quiet_and_verbose(argv, capsys):
    from orchestrator.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(argv).verbosity == "normal"
    for flag, level in (("-q", "quiet"), ("--quiet", "quiet"), ("-v", "verbose")):
        assert parser.parse_args([*argv, flag]).verbosity == level
    assert parser.parse_args([*argv, "--verbose"]).verbosity == "verbose"
    code, out, err = run(capsys, *argv, "--quiet", "--verbose")
    assert code == 2 and "not allowed with argument" in one_error_line(err)


def test_a_quiet_build_prints_its_result_warnings_and_no_progress(home, capsys):
    code, out, err = run(capsys, "build", "a task", "--model", TALKER, "--unsafe-no-sandbox", "-q")
    assert code == 1
    assert err.splitlines() == [f"cadillac: warning: {UNSAFE}"], err  # no run or phase line
    run_id = next((home / "runs").iterdir()).name
    assert out.splitlines()[0] == f"run {run_id}: failed" and "┃" not in out, out
    assert "plan: budget_exhausted" in out and "lessons: " in out


def test_a_verbose_build_says_each_tool_call_and_a_plain_one_does_not(home, capsys):
    code, out, err = run(capsys, "build", "a task", "--model", TALKER, "--verbose")
    calls = [x for x in err.splitlines() if x.startswith("  → ")]
    rounds = json.loads((next((home / "runs").iterdir()) / "summary.json").read_text())
    assert code == 1 and calls == ["  → list_files path='.'"] * rounds["phases"][0]["rounds"]
    assert "✗ plan: budget_exhausted" in err and "┃" in out  # the rest as without --verbose
    code, out, err = run(capsys, "build", "a task", "--model", TALKER)
    assert code == 1 and "→" not in err and "✗ plan: budget_exhausted" in err


def test_a_tool_call_is_one_line_with_long_values_cut():
    from orchestrator.cli.output import tool_call

    line = tool_call("write_file", json.dumps({"path": "app.py", "content": "x = 1\n" * 500}))
    assert line.startswith("write_file path='app.py' content='x = 1\\nx = 1") and "\n" not in line
    assert len(line) <= 160
    assert tool_call("run", '{"command": "pytest -q"}') == "run command='pytest -q'"
    assert tool_call("run", "not json") == "run 'not json'"


def test_a_quiet_matrix_run_prints_its_score_line_alone(home, capsys):
    small = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
    argv = ["matrix", "run", "--matrix", str(small), "--split", "holdout", "--build-only"]
    code, out, err = run(capsys, *argv, "--no-learn", "--model", TALKER, "--quiet")
    assert code == 0 and err == "" and out.startswith("score "), (out, err)
    assert "┃" not in out and out.rstrip().endswith("results.json")  # no table: the line alone


def test_a_verbose_matrix_run_says_each_builds_tool_calls_by_task_and_repeat(home, capsys):
    small = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"
    argv = ["matrix", "run", "--matrix", str(small), "--split", "holdout", "--build-only"]
    code, out, err = run(capsys, *argv, "--no-learn", "--model", TALKER, "--verbose")
    assert code == 0, err
    traced = [line for line in err.splitlines() if " → " in line]
    assert traced and all(line.startswith("  wf-h #1 → ") for line in traced), err
    code, out, err = run(capsys, *argv, "--no-learn", "--model", TALKER)
    assert " → " not in err
