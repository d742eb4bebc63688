"""Hooks: the specs, calling plugins so that none can break a build, and loading them."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import HOOKS, HookError, Hooks, hookimpl, specs
from orchestrator.llm.backends import register_script
from tests.support import one_error_line

SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "matrix_small"

RECORDER = """
calls = []


@hookimpl
def build_start(task, config):
    calls.append(("build_start", task, config))


@hookimpl
def build_end(summary):
    calls.append(("build_end", summary))
"""


def test_the_specs_are_the_six_hooks_with_their_arguments():
    found = {
        name: list(inspect.signature(fn).parameters)
        for name, fn in inspect.getmembers(specs, inspect.isfunction)
        if hasattr(fn, "cadillac_spec")
    }
    assert found == {
        "build_start": ["task", "config"],
        "phase_end": ["phase", "summary"],
        "lesson_saved": ["lesson"],
        "build_end": ["summary"],
        "matrix_end": ["results"],
        "improve_decision": ["decision"],
    }
    assert set(HOOKS) == set(found)


def test_every_plugin_is_called_with_its_own_arguments(plugins):
    recorder = plugins.module("hk_recorder", RECORDER)

    class Counter:  # a class: instantiated; takes only the argument it wants
        seen: list[str] = []

        @hookimpl
        def build_start(self, task):
            self.seen.append(task)

    @hookimpl
    def build_end(summary):  # one function is a plugin too
        Counter.seen.append(summary["status"])

    hooks = Hooks.load([recorder])
    hooks._add(Counter, "counter")
    hooks._add(build_end, "function")
    assert hooks.names == ["hk_recorder", "counter", "function"]
    assert hooks.call("build_start", task="a tool", config={"seed": 1}) == []
    assert hooks.call("build_end", summary={"status": "passed"}) == []
    assert hooks.call("phase_end", phase="plan", summary={}) == []  # nobody implements it
    assert sys.modules[recorder].calls == [
        ("build_start", "a tool", {"seed": 1}),
        ("build_end", {"status": "passed"}),
    ]
    assert Counter.seen == ["a tool", "passed"]


def test_a_raising_plugin_is_reported_and_the_others_still_run(plugins, capsys):
    recorder = plugins.module("hk_rec_raise", RECORDER)
    raiser = plugins.module(
        "hk_raiser",
        """
        @hookimpl
        def build_end(summary):
            raise ValueError("no disk\\nleft")
        """,
    )
    hooks = Hooks.load([raiser, recorder])
    errors = hooks.call("build_end", summary={"status": "failed"})
    assert errors == [HookError("hk_raiser", "build_end", "ValueError: no disk left")]
    assert sys.modules[recorder].calls == [("build_end", {"status": "failed"})]

    events = []
    hooks.report(errors, lambda kind, **data: events.append((kind, data)))
    error = {"plugin": "hk_raiser", "hook": "build_end", "error": "ValueError: no disk left"}
    assert events == [("hook_error", error)]
    assert capsys.readouterr().err == (
        "cadillac: warning: plugin hk_raiser failed in build_end: ValueError: no disk left "
        "(the build had ended; its result stands)\n"
    )
    hooks.report(errors, None)  # no events to write: the line alone
    assert capsys.readouterr().err.count("\n") == 1


def test_a_plugin_that_exits_does_not_end_the_build_but_ctrl_c_does(plugins):
    exits = plugins.module(
        "hk_exits",
        """
        import sys


        @hookimpl
        def build_end(summary):
            sys.exit(3)


        @hookimpl
        def matrix_end(results):
            raise KeyboardInterrupt
        """,
    )
    hooks = Hooks.load([exits])
    assert hooks.call("build_end", summary={}) == [
        HookError("hk_exits", "build_end", "SystemExit: 3")
    ]
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C or SIGTERM: cadillac stops, as anywhere
        hooks.call("matrix_end", results={})


def test_a_plugin_that_changes_its_payload_changes_nothing_of_cadillacs(plugins):
    mutator = plugins.module(
        "hk_mutator",
        """
        @hookimpl(tryfirst=True)
        def build_end(summary):
            summary["status"] = "passed"
            summary["phases"].append({"phase": "forged"})
        """,
    )
    after = plugins.module(
        "hk_after",
        """
        seen = []


        @hookimpl
        def build_end(summary):
            seen.append(summary)
        """,
    )
    hooks = Hooks.load([after, mutator])
    summary = {"status": "failed", "phases": [{"phase": "plan"}]}
    assert hooks.call("build_end", summary=summary) == []
    assert summary == {"status": "failed", "phases": [{"phase": "plan"}]}
    assert sys.modules[after].seen == [summary]  # the next plugin sees what cadillac sent


def test_payloads_are_json_copies(plugins):
    recorder = plugins.module("hk_rec_json", RECORDER)
    hooks = Hooks.load([recorder])
    hooks.call("build_start", task="t", config={"path": Path("/x"), "tags": ("a", "b")})
    assert sys.modules[recorder].calls == [("build_start", "t", {"path": "/x", "tags": ["a", "b"]})]


def test_an_unknown_hook_or_wrong_arguments_are_cadillacs_own_mistake():
    hooks = Hooks.none()
    assert hooks.names == [] and hooks.load_errors == []
    with pytest.raises(ValueError, match="no hook 'session_stop'"):
        hooks.call("session_stop", summary={})
    with pytest.raises(TypeError, match="takes"):
        hooks.call("build_end", result={})


def test_a_plugin_named_twice_is_loaded_once(plugins):
    recorder = plugins.module("hk_twice", RECORDER)
    plugins.entry_point("hk-twice", "twice", recorder)
    hooks = Hooks.load([recorder, f" {recorder} "])
    assert hooks.names == ["twice"]  # the entry point, then --plugin twice: one plugin
    hooks.call("build_end", summary={})
    assert sys.modules[recorder].calls == [("build_end", {})]

    plugins.module(
        "hk_cls",
        """
        class Plugin:
            @hookimpl
            def build_end(self, summary):
                pass
        """,
    )
    assert Hooks.load(["hk_cls:Plugin", "hk_cls:Plugin"], entry_points=False).names == [
        "hk_cls:Plugin"
    ]


def test_entry_points_load_and_a_broken_one_is_skipped_with_a_reason(plugins, monkeypatch):
    recorder = plugins.module("hk_ep_ok", RECORDER)
    plugins.module("hk_ep_boom", "raise RuntimeError('half installed')\n")
    plugins.module("hk_ep_bye", "import sys\nsys.exit('no')\n")
    plugins.module("hk_ep_typo", "@hookimpl\ndef biuld_end(summary):\n    pass\n")
    plugins.entry_point("hk-ok", "ok", recorder)
    plugins.entry_point("hk-boom", "boom", "hk_ep_boom")
    plugins.entry_point("hk-bye", "bye", "hk_ep_bye")
    plugins.entry_point("hk-typo", "typo", "hk_ep_typo")
    plugins.entry_point("hk-gone", "gone", "hk_ep_not_there:Plugin")
    hooks = Hooks.load()
    assert "ok" in hooks.names and not {"boom", "bye", "typo", "gone"} & set(hooks.names)
    reasons = {e.plugin: e.error for e in hooks.load_errors}
    assert reasons["boom"] == "RuntimeError: half installed"
    assert reasons["bye"] == "SystemExit: no"
    assert "cadillac has no hook biuld_end" in reasons["typo"]
    assert "ModuleNotFoundError" in reasons["gone"]
    (boom,) = [e for e in hooks.load_errors if e.plugin == "boom"]
    assert boom.line() == (
        "warning: plugin boom cannot be loaded: RuntimeError: half installed (it is skipped)"
    )
    hooks.call("build_end", summary={"status": "passed"})
    assert sys.modules[recorder].calls == [("build_end", {"status": "passed"})]

    monkeypatch.setenv("CADILLAC_NO_PLUGINS", "1")  # what an improve trial runs with
    assert Hooks.load().names == [] and Hooks.load().load_errors == []
    assert Hooks.load([recorder]).names == [recorder]  # named on the command line: loaded
    monkeypatch.setenv("CADILLAC_NO_PLUGINS", "0")
    assert "ok" in Hooks.load().names
    assert Hooks.load(entry_points=False).names == []


def test_a_hook_of_a_later_version_may_be_optional(plugins):
    later = plugins.module(
        "hk_later",
        """
        @hookimpl(optionalhook=True)
        def session_stop(summary):
            pass


        @hookimpl
        def build_end(summary):
            pass
        """,
    )
    assert Hooks.load([later], entry_points=False).names == [later]


BAD = {
    "": "is not module[:object]",
    "my plugin": "is not module[:object]",
    "mod:": "is not module[:object]",
    ".relative": "is not module[:object]",
    "hk_nowhere_xyz": "no module named 'hk_nowhere_xyz' (install it, or put its folder on",
    "json": "it has no cadillac hook: mark functions named after a hook",
    "json:nothing_here": "json has no 'nothing_here'",
    "hk_bad_import": "importing hk_bad_import failed: ModuleNotFoundError: No module named",
    "hk_bad_exit": "importing hk_bad_exit failed: SystemExit: 2",
    "hk_bad_typo": "cadillac has no hook biuld_end",
    "hk_bad_args": "hk_bad_args",
    "hk_bad_wrapper": "its build_end is a wrapper",
    "hk_bad_cls:Plugin": "Plugin() failed: TypeError",
}


@pytest.fixture
def bad_plugins(plugins):
    plugins.module("hk_bad_import", "import hk_missing_dependency_xyz\n")
    plugins.module("hk_bad_exit", "import sys\nsys.exit(2)\n")
    plugins.module("hk_bad_typo", "@hookimpl\ndef biuld_end(summary):\n    pass\n")
    plugins.module("hk_bad_args", "@hookimpl\ndef build_end(result):\n    pass\n")
    plugins.module(
        "hk_bad_wrapper", "@hookimpl(wrapper=True)\ndef build_end(summary):\n    yield\n"
    )
    plugins.module(
        "hk_bad_cls",
        """
        class Plugin:
            def __init__(self, needed):
                pass

            @hookimpl
            def build_end(self, summary):
                pass
        """,
    )
    return plugins


@pytest.mark.parametrize("text", list(BAD))
def test_a_bad_plugin_option_is_one_error(bad_plugins, text):
    with pytest.raises(CadillacError) as caught:
        Hooks.load([text], entry_points=False)
    message = str(caught.value)
    assert message.startswith("--plugin ") and BAD[text] in message and "\n" not in message


COMMANDS = {
    "build": ["build", "a tool"],
    "enhance": ["enhance", "project", "add a flag"],
    "matrix run": ["matrix", "run", "--matrix", str(SMALL)],
    "improve": ["improve", "--matrix", str(SMALL)],
    "nightly": ["nightly", "--matrix", str(SMALL)],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("text", ["hk_nowhere_xyz", "hk_bad_typo", "json"])
def test_the_cli_refuses_a_bad_plugin_in_one_line_before_it_makes_anything(
    bad_plugins, home, tmp_path, capsys, command, text
):
    (tmp_path / "project").mkdir()
    model = register_script("hooks-silent", lambda messages, tools: "NONE")
    before = sorted(home.rglob("*"))
    code = main([*COMMANDS[command], "--model", model, "--plugin", text])
    out, err = capsys.readouterr()
    assert code == 1 and out == "" and one_error_line(err), err
    assert err.startswith(f"cadillac: error: --plugin {text}: ")
    assert sorted(home.rglob("*")) == before  # no run folder, no lock, no report


def test_plugin_is_in_every_commands_help(capsys):
    for command in (*COMMANDS, "iterate"):
        with pytest.raises(SystemExit):
            main([*command.split(), "--help"])
        assert "--plugin MODULE[:OBJECT]" in capsys.readouterr().out, command


def test_the_schedule_takes_a_plugin_for_the_nightly():
    from orchestrator.cli.nightly import check_nightly_args

    # a schedule's nightly needs its model too (cron passes no CADILLAC_MODEL: issue 22 item 12)
    parsed = check_nightly_args(
        ["--model", "openai/gpt-4o", "--plugin", "my_plugin:Plugin", "--plugin", "other"]
    )
    assert parsed.plugin == ["my_plugin:Plugin", "other"]


ENDS = """
seen = []


@hookimpl
def build_end(summary):
    seen.append(("build_end", summary))


@hookimpl
def matrix_end(results):
    seen.append(("matrix_end", results))


@hookimpl
def improve_decision(decision):
    seen.append(("improve_decision", decision))
"""
FAILING = "scripted:tests.fakes.policies:last_user_words"  # never finishes a phase: quick


def test_a_matrix_run_tells_its_plugins_of_each_build_and_of_its_results(plugins, home, capsys):
    from orchestrator.bench.matrix import run_matrix
    from orchestrator.llm.client import LLMConfig
    from orchestrator.loop.agent import BuildConfig

    ends = plugins.module("hk_ends", ENDS)
    broken = plugins.module("hk_broken_end", "@hookimpl\ndef matrix_end(results):\n    1 / 0\n")
    hooks = Hooks.load([ends, broken], entry_points=False)
    build = BuildConfig(llm=LLMConfig(model=FAILING))
    results = run_matrix(Home(home), build, SMALL, split="holdout", learn=False, hooks=hooks)
    (run,) = results.runs
    assert run.task_id == "wf-h" and run.status == "failed"  # the broken plugin changed nothing
    seen = sys.modules[ends].seen
    assert [kind for kind, _ in seen] == ["build_end", "matrix_end"]
    assert seen[0][1]["run_id"] == run.run_id  # the builds got the matrix's plugins
    folder = home / "runs" / f"matrix-{results.id}"
    assert seen[1][1] == {**results.model_dump(mode="json"), "folder": str(folder)}
    assert json.loads((folder / "results.json").read_text()) == results.model_dump(mode="json")
    assert (
        "cadillac: warning: plugin hk_broken_end failed in matrix_end: ZeroDivisionError: "
        "division by zero (the matrix run's results stand)\n"
    ) in capsys.readouterr().err


def test_an_improve_cycle_tells_its_plugins_of_each_decision(plugins, home, repo):
    from orchestrator.improve.cycle import ImproveCycle
    from orchestrator.improve.records import ImproveConfig
    from orchestrator.llm.client import LLMClient, LLMConfig
    from tests.orchestrator.improve.test_improve import CoinFlips

    ends = plugins.module("hk_decisions", ENDS)
    raiser = plugins.module(
        "hk_decision_raiser", "@hookimpl\ndef improve_decision(decision):\n    raise OSError\n"
    )
    hooks = Hooks.load([ends, raiser], entry_points=False)
    improver = LLMClient(LLMConfig(model=register_script("hk-no", lambda m, t: "no, thanks")))
    config = ImproveConfig(iterations=2, survey_repeats=1, test_command=[sys.executable, "-V"])
    summary = ImproveCycle(Home(home), repo, CoinFlips(1), improver, config, hooks=hooks).run()
    assert [it.status for it in summary.iterations] == ["no_proposal", "no_proposal"]
    decisions = [payload for kind, payload in sys.modules[ends].seen]
    folder = home / "runs" / f"improve-{summary.id}"
    assert decisions == [
        {
            **it.model_dump(mode="json"),
            "improve_id": summary.id,
            "repo": summary.repo,
            "folder": str(folder / f"iter-{it.iteration}"),
        }
        for it in summary.iterations
    ]


def test_improve_and_nightly_give_their_cycle_the_plugins(home):
    from orchestrator.improve.setup import CycleRequest, make_cycle
    from orchestrator.llm.client import LLMConfig

    lift = SMALL.parent / "matrix_lift"
    model = LLMConfig(model="scripted:tests.fakes.policies:last_user_words")  # trials load it
    request = CycleRequest(
        builder=model, improver=model, matrix=lift, iterations=1, unsafe_no_sandbox=True
    )
    hooks = Hooks.none()
    assert make_cycle(Home(home), request, hooks=hooks).hooks is hooks


def test_a_build_goes_on_past_a_broken_entry_point_and_a_raising_plugin(plugins, home, capsys):
    plugins.module("hk_cli_boom", "raise RuntimeError('half installed')\n")
    plugins.entry_point("hk-cli-boom", "boom", "hk_cli_boom")
    raiser = plugins.module(
        "hk_cli_raiser",
        """
        import sys


        @hookimpl
        def build_start(task, config):
            sys.exit("stop it")


        @hookimpl
        def build_end(summary):
            summary["status"] = "passed"
            raise ValueError("cannot write")
        """,
    )
    code = main(["build", "a word counter", "--model", FAILING, "--plugin", raiser, "--json"])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 1 and summary["status"] == "failed"  # as the build ended, not the plugin
    assert "cadillac: warning: plugin boom cannot be loaded: RuntimeError: half installed" in err
    assert (
        f"cadillac: warning: plugin {raiser} failed in build_end: ValueError: cannot write "
        "(the build had ended; its result stands)"
    ) in err
    events = [
        json.loads(line)
        for line in (home / "runs" / summary["run_id"] / "events.jsonl").read_text().splitlines()
    ]
    errors = [e["data"] for e in events if e["kind"] == "hook_error"]
    assert {"plugin": raiser, "hook": "build_start", "error": "SystemExit: stop it"} in errors
    assert {"plugin": raiser, "hook": "build_end", "error": "ValueError: cannot write"} in errors
    saved = json.loads((home / "runs" / summary["run_id"] / "summary.json").read_text())
    assert saved["status"] == "failed"
