"""Knowing the cost before the night: ``improve --estimate`` from the rule, the matrix and
what earlier builds cost, and no iteration started that the spend cap cannot finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.bench.decision import DecisionConfig
from orchestrator.bench.results import MatrixResults, TaskRun
from orchestrator.improve.estimate import iteration_bound, iteration_builds
from tests.orchestrator.improve.test_cycle_rounds import ByCode, improver, run_cycle
from tests.support import one_error_line, run

ROOT = Path(__file__).resolve().parents[3]
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"  # five train tasks and one holdout
PRICED = "openai/gpt-4o-mini"


def test_an_iterations_most_is_every_stage_both_sides_nothing_reused():
    rule = DecisionConfig()  # baseline 10; candidate 1, to 3, +6; fresh 2 per; holdout 3
    tasks = {"a": "train", "b": "train", "h": "holdout"}
    # a train task: 9 candidate builds, and a baseline of 10 at the screen (or 2 afresh)
    # and 2 afresh per candidate build of the later looks (16): 35; a holdout task 3 a side
    assert iteration_builds(rule, tasks) == {"a": 35, "b": 35, "h": 6}
    assert iteration_bound(rule, tasks, {"a": 0.5, "b": 1.0}) == 35 * 0.5 + 35 + 6 * 1.0
    assert iteration_bound(rule, tasks, {}) is None


def test_the_estimate_before_any_build_and_after_earlier_ones(home, capsys):
    args = ["improve", "--estimate", "--matrix", str(LIFT), "--model", PRICED, "--jobs", "2"]
    code, out, err = run(capsys, *args)
    assert code == 0 and err == "", err
    assert "5 train and 1 holdout task(s); the survey builds 12;" in out
    assert "an iteration at most 181 (screen 55, full 30, confirm 90, holdout 6;" in out
    assert "by the screen 55, by the full stage 85)" in out
    assert "cost unknown until the survey" in out and "time unknown until the survey" in out
    assert not Path(home).exists() or not list(Path(home).iterdir())  # nothing was made

    earlier = Path(home) / "runs" / "matrix-20270101-000000-abcdef" / "results.json"
    earlier.parent.mkdir(parents=True)
    runs = [
        TaskRun(task_id=t, repeat=0, status="passed", cost_usd=0.01, tokens=800, seconds=30.0)
        for t in ("wf-a1", "wf-a2", "wf-h")
    ]
    record = MatrixResults(
        id="m", matrix=str(LIFT), model=PRICED, repeats=1, split="all", started=0, runs=runs
    )
    earlier.write_text(record.model_dump_json())
    code, out, _ = run(capsys, *args, "--max-cost", "1")
    assert code == 0
    assert "$0.0100 a build (earlier runs in this home): the survey about $0.12" in out
    assert "an iteration at most $1.81; with 5 iteration(s) at most $9.17" in out
    assert "30 s a build: the survey about 3 min, an iteration at most 23 min at --jobs 2" in out
    assert "room for the survey and 0 iteration(s)" in out
    code, out, _ = run(capsys, *args, "--max-cost", "4", "--json")
    figures = json.loads(out)
    assert figures["iteration_cost_most"] == pytest.approx(1.81)
    assert figures["iterations_the_cap_allows"] == 2 and figures["reusable_builds"] == 43


def test_a_decision_rule_file_and_survey_repeats_set_what_a_cycle_builds(home, tmp_path, capsys):
    """The rule of ``--decision-rule FILE`` (its fields, the rest at the defaults), with
    ``--repeats`` over it, and ``--survey-repeats``: the estimate counts their builds."""
    args = ["improve", "--estimate", "--matrix", str(LIFT), "--model", PRICED]
    rule = tmp_path / "rule.toml"
    # per train task: the screen 2 of the baseline (or 1 afresh) and 1 candidate build; the
    # full stage 1 more and 1 afresh; the confirmation 1 and 1 afresh; the holdout 3 a side
    rule.write_text(
        "baseline_repeats = 2\nfresh_ratio = 1\nfull_repeats = 2\nconfirm_repeats = 1\n"
    )
    code, out, err = run(capsys, *args, "--decision-rule", str(rule), "--survey-repeats", "1")
    assert code == 0 and err == "", err
    assert "the survey builds 6; an iteration at most 41 (screen 15, full 10, confirm 10," in out
    # --repeats 3 over it: the full stage to 3 (2 more, 2 afresh), the confirmation 3 and 3
    code, out, _ = run(capsys, *args, "--decision-rule", str(rule), "--repeats", "3")
    assert "the survey builds 12; an iteration at most 71 (screen 15, full 20, confirm 30," in out

    for text, said in [
        ("baseline_repeats = 0\n", "baseline_repeats: Input should be greater than or equal to 1"),
        ("baseline_repeats =\n", "is not valid TOML"),
        ("baseline_repeat = 3\n", "baseline_repeat: Extra inputs are not permitted"),
        ("screen_repeats = 3\n", "full_repeats (3) must be more than screen_repeats (3)"),
    ]:
        rule.write_text(text)
        code, _, err = run(capsys, *args, "--decision-rule", str(rule))
        assert code == 1 and said in one_error_line(err) and str(rule) in err
    rule.write_text("screen_repeats = 2\nfull_repeats = 4\n")
    code, _, err = run(capsys, *args, "--decision-rule", str(rule), "--repeats", "2")
    assert code == 1 and "--repeats 2: " in one_error_line(err) and "screen_repeats (2)" in err
    code, _, err = run(capsys, *args, "--decision-rule", str(tmp_path / "none.toml"))
    assert code == 1 and "cannot be read: No such file" in one_error_line(err)
    assert not Path(home).exists() or not list(Path(home).iterdir())  # nothing was made


def test_estimate_and_status_together_is_one_error_line(home, capsys):
    code, _, err = run(capsys, "improve", "--estimate", "--status", "--model", PRICED)
    assert code == 1 and "give one" in one_error_line(err)


@pytest.mark.parametrize("cap, iterations", [(1.0, 1), (1.1, 2)])
def test_no_iteration_starts_that_the_spend_cap_cannot_finish(home, repo, cap, iterations):
    """Builds at $0.01 (10 train tasks and a holdout one): the survey's 11 cost $0.11; an
    iteration at most 76 builds, $0.76 (every look, the holdout, nothing reused, each train
    task's baseline as a weakness's: 3 candidate builds and 4 of the baseline a task, 6 of
    the holdout); a no-op patch is dropped early, and its next try builds less (the tip's
    builds reused)."""
    propose, asked = improver()
    runner = ByCode(cost=0.01)
    summary, _ = run_cycle(home, repo, runner, propose, iterations=5, max_cost_usd=cap)
    assert len(summary.iterations) == iterations and len(asked) == iterations
    assert summary.stopped_because.startswith(
        "the spend cap cannot finish another iteration: one could spend 0.76 USD "
        "(76 builds at their measured cost, and the improver)"
    )
    assert summary.cost_usd == pytest.approx(0.01 * summary.builds)
    assert summary.cost_usd <= cap < summary.cost_usd + 0.76  # room for no further one
    left = cap - summary.cost_usd
    assert f"{left:.4g} USD are left of --max-cost {cap:g}" in summary.stopped_because
    built = [sum(record.builds.values()) for record in summary.iterations]
    assert built[1:] == [built[-1]] * (len(built) - 1) and all(b < built[0] for b in built[1:])
