"""Knowing the cost before the night: ``improve --estimate`` from the rule, the matrix and
what earlier builds cost, and no iteration started that the spend cap cannot finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.bench.decision import DecisionConfig, Round, evaluate
from orchestrator.bench.results import MatrixResults, TaskRun
from orchestrator.improve.estimate import iteration_bound, iteration_builds
from tests.orchestrator.improve.test_cycle_rounds import ByCode, improver, run_cycle
from tests.support import one_error_line, run

ROOT = Path(__file__).resolve().parents[3]
LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"  # five train tasks and one holdout
PRICED = "openai/gpt-4o-mini"


def test_an_iterations_most_is_every_look_both_sides_nothing_reused():
    rule = DecisionConfig()  # baseline 10; candidate 1, to 3, +6; fresh 2 per; holdout 3
    tasks = {"a": "train", "b": "train", "h": "holdout"}
    # a train task: 9 candidate builds, and a baseline of 10 from the pool, or, for the
    # weakness's, 2 afresh per candidate build (18): 27; a holdout task 3 a side
    assert iteration_builds(rule, tasks) == {"a": 27, "b": 27, "h": 6}
    # both sides at once: each look's longer side, 2 + 16 (or 10 + 8) and 3
    assert iteration_builds(rule, tasks, wall=True) == {"a": 18, "b": 18, "h": 3}
    assert iteration_bound(rule, tasks, {"a": 0.5, "b": 1.0}) == 27 * 0.5 + 27 + 6 * 1.0
    assert iteration_bound(rule, tasks, {}) is None


class Longest:
    """A Measure that counts the builds asked for and leads ``evaluate`` down its longest
    path: the screen and the full stage pass unsettled, the confirmation would accept, so
    the holdout is built. Baseline builds score 0 and 1 by turns; the candidate's screen
    1.0, its full round 1.0 and 0.0 by turns, its confirmation 1.0. ``weak``: every train
    task is the weakness's, its baseline built afresh (``fresh``), else the pool's."""

    def __init__(self, tasks: dict[str, str], weak: bool):
        self.tasks, self.weak, self.builds, self.stages = tasks, weak, 0, []

    def __call__(self, stage, repeats, holdout, *, tasks=None, baseline=None, fresh=None):
        self.stages.append(stage)
        each = repeats if baseline is None else baseline
        if self.weak and fresh is not None:
            each = fresh
        out = Round()
        for task, split in self.tasks.items():
            if split == "train" and (tasks is None or task in tasks):
                cand = [float(stage != "full" or r % 2 == 0) for r in range(repeats)]
                out.candidate_train[task] = cand
                out.baseline_train[task] = [float(r % 2) for r in range(each)]
            elif split == "holdout" and holdout:
                out.candidate_holdout[task] = [0.5] * repeats
                out.baseline_holdout[task] = [0.5] * (repeats if baseline is None else baseline)
            else:
                continue
            self.builds += repeats + len(out.baseline_train.get(task, [])) * (split == "train")
            self.builds += len(out.baseline_holdout.get(task, [])) * (split == "holdout")
        return out


def test_the_most_is_what_the_rules_longest_path_builds():
    rule = DecisionConfig()
    tasks = {**{f"t{i}": "train" for i in range(8)}, "h1": "holdout", "h2": "holdout"}
    built = []
    for weak in (False, True):  # the pool's baseline, or every task's built afresh
        measure = Longest(tasks, weak)
        stages = evaluate(measure, {}, rule, alpha=0.01)
        assert measure.stages == ["screen", "full", "confirm", "holdout"], [
            s.reason for s in stages
        ]
        built.append(measure.builds)
    assert max(built) == sum(iteration_builds(rule, tasks).values()) > min(built)


def test_the_estimate_before_any_build_and_after_earlier_ones(home, capsys):
    args = ["improve", "--estimate", "--matrix", str(LIFT), "--model", PRICED, "--jobs", "2"]
    code, out, err = run(capsys, *args)
    assert code == 0 and err == "", err
    assert "5 train and 1 holdout task(s); the survey builds 12;" in out
    assert "an iteration at most 141 (screen 15, full 30, confirm 90, holdout 6)" in out
    assert "at most 66 once the baseline's earlier builds serve all but the weakness's" in out
    assert "dropped by the screen then 7, by the full stage 21" in out
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
    assert "an iteration at most $1.41; with 5 iteration(s) at most $7.17" in out
    # both sides build at once: each look's longer side, 18 a train task, 3 the holdout's
    assert "30 s a build: the survey about 3 min, an iteration at most 23 min at --jobs 2" in out
    assert "room for the survey and 0 iteration(s)" in out
    code, out, _ = run(capsys, *args, "--max-cost", "4", "--json")
    figures = json.loads(out)
    assert figures["iteration_cost_most"] == pytest.approx(1.41)
    assert figures["iteration_seconds_most"] == pytest.approx((18 * 5 + 3) * 30 / 2)
    assert figures["iterations_the_cap_allows"] == 2
    assert figures["iteration_builds_most_reused"] == 66


def test_a_decision_rule_file_and_survey_repeats_set_what_a_cycle_builds(home, tmp_path, capsys):
    """The rule of ``--decision-rule FILE`` (its fields, the rest at the defaults), with
    ``--repeats`` over it, and ``--survey-repeats``: the estimate counts their builds."""
    args = ["improve", "--estimate", "--matrix", str(LIFT), "--model", PRICED]
    rule = tmp_path / "rule.toml"
    # per train task: the candidate's 1, 1 more and 1 (3), and the baseline's 2 from the pool
    # or, the weakness's, 1 afresh per candidate build (3), whichever is more: 6; the
    # holdout 3 a side
    rule.write_text(
        "baseline_repeats = 2\nfresh_ratio = 1\nfull_repeats = 2\nconfirm_repeats = 1\n"
    )
    code, out, err = run(capsys, *args, "--decision-rule", str(rule), "--survey-repeats", "1")
    assert code == 0 and err == "", err
    assert "the survey builds 6; an iteration at most 36 (screen 10, full 10, confirm 10," in out
    # --repeats 3 over it: the candidate's 1, 2 more and 3 (6), the weakness's 6 afresh: 12
    code, out, _ = run(capsys, *args, "--decision-rule", str(rule), "--repeats", "3")
    assert "the survey builds 12; an iteration at most 66 (screen 10, full 20, confirm 30," in out

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


@pytest.mark.parametrize("cap, iterations", [(0.8, 1), (1.0, 2)])
def test_no_iteration_starts_that_the_spend_cap_cannot_finish(home, repo, cap, iterations):
    """Builds at $0.01 (10 train tasks and a holdout one; the small rule): the survey's 11
    cost $0.11; an iteration at most 66 builds, $0.66 (every look, the holdout, nothing
    reused: 3 candidate builds and 3 of the baseline a train task, afresh as a weakness's,
    6 of the holdout); a patch that does nothing is dropped by the screen after 20 builds,
    its next try after 11 (the tip's builds reused but the weakness's)."""
    propose, asked = improver()
    runner = ByCode(cost=0.01)
    summary, _ = run_cycle(home, repo, runner, propose, iterations=5, max_cost_usd=cap)
    assert len(summary.iterations) == iterations and len(asked) == iterations
    assert summary.stopped_because.startswith(
        "the spend cap cannot finish another iteration: one could spend 0.66 USD "
        "(66 builds at their measured cost, and the improver)"
    )
    assert summary.cost_usd == pytest.approx(0.01 * summary.builds)
    assert summary.cost_usd <= cap < summary.cost_usd + 0.66  # room for no further one
    left = cap - summary.cost_usd
    assert f"{left:.4g} USD are left of --max-cost {cap:g}" in summary.stopped_because
    built = [sum(record.builds.values()) for record in summary.iterations]
    assert built[1:] == [built[-1]] * (len(built) - 1) and all(b < built[0] for b in built[1:])
    assert summary.cost_usd == pytest.approx(0.11 + 0.20 + 0.11 * (iterations - 1))


def test_earlier_builds_that_recorded_tokens_alone_are_priced_at_the_known_price(home, capsys):
    from orchestrator.llm.prices import highest_prices

    earlier = Path(home) / "runs" / "matrix-20270101-000000-abcdef" / "results.json"
    earlier.parent.mkdir(parents=True)
    runs = [TaskRun(task_id="wf-a1", repeat=0, status="passed", tokens=2000, seconds=10.0)]
    for model in (PRICED, "openai/no-such-model-here"):
        record = MatrixResults(
            id="m", matrix=str(LIFT), model=model, repeats=1, split="all", started=0, runs=runs
        )
        earlier.write_text(record.model_dump_json())
        code, out, _ = run(capsys, "improve", "--estimate", "--matrix", str(LIFT), "--model", model)
        assert code == 0
        if model == PRICED:
            each = 2000 * max(highest_prices([PRICED]))
            assert f"${each:.4f} a build (earlier runs in this home, its tokens at the" in out
            assert f"an iteration at most ${141 * each:.2f}" in out
        else:
            assert f"cost unknown (no known price for {model}); tokens: the survey about " in out
            assert "24,000, an iteration at most 282,000 (earlier runs in this home)" in out
