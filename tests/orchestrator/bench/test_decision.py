"""The keep-or-drop rule of the improve cycle, on fixed numbers at its boundaries."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from orchestrator.bench import decision
from orchestrator.bench.decision import (
    DecisionConfig,
    Round,
    Stage,
    accepted,
    confirm,
    drop_test,
    evaluate,
    full,
    least_alpha,
    lift_test,
    screen,
    smallest_p,
)
from orchestrator.bench.permutation import EXACT_SPLITS, PERMUTATIONS, permutation_p

CFG = DecisionConfig(threshold=0.02)  # the boundaries below are computed for this threshold


def by_hand(baseline: dict, candidate: dict, weights: dict, shift: float = 0.0) -> float:
    """The build-level p-value the slow, obvious way: every relabelling of every task's
    builds, the weighted lift of each recomputed from scratch."""

    def lift(cand, base):
        total = sum(weights.get(t, 1.0) for t in cand)
        return (
            sum(weights.get(t, 1.0) * (np.mean(cand[t]) - np.mean(base[t])) for t in cand) / total
        )

    tasks = sorted(candidate)
    pooled = {t: [x - shift for x in candidate[t]] + list(baseline[t]) for t in tasks}
    choices = [
        list(itertools.combinations(range(len(pooled[t])), len(candidate[t]))) for t in tasks
    ]
    observed = lift({t: pooled[t][: len(candidate[t])] for t in tasks}, baseline)
    count = n = 0
    for pick in itertools.product(*choices):
        cand = {t: [pooled[t][i] for i in c] for t, c in zip(tasks, pick, strict=True)}
        base = {
            t: [x for i, x in enumerate(pooled[t]) if i not in c]
            for t, c in zip(tasks, pick, strict=True)
        }
        count += lift(cand, base) >= observed - 1e-9
        n += 1
    return count / n


def test_the_build_level_test_against_hand_computed_cases():
    # one task, one build a side: the candidate's 1 is the larger of two -> 1/2
    assert lift_test({"a": [0]}, {"a": [1]}, {}).p == 0.5
    # two builds a side, both higher: 1 of the C(4, 2) = 6 splits -> 1/6
    t = lift_test({"a": [0, 0]}, {"a": [1, 1]}, {})
    assert t.p == pytest.approx(1 / 6) and t.lift == 1.0 and t.tasks == 1 and t.builds == 4
    # weights 3 and 1: a rises by 1, b falls by 1; lift 0.5; the 4 splits give lifts
    # 0.5 (observed), 1.0, -1.0 and -0.5 -> 2 of 4 at least as high
    t = lift_test({"a": [0], "b": [1]}, {"a": [1], "b": [0]}, {"a": 3.0, "b": 1.0})
    assert t.lift == pytest.approx(0.5) and t.p == 0.5
    case = ({"a": [0.2, 0.5, 0.1], "b": [1.0, 0.0]}, {"a": [0.6, 0.3], "b": [1.0, 1.0, 0.5]})
    assert lift_test(*case, {"a": 2.0}).p == pytest.approx(by_hand(*case, {"a": 2.0}))
    assert lift_test(*case, {}, 0.05).p == pytest.approx(by_hand(*case, {}, 0.05))
    assert lift_test({}, {}, {}) == decision.Test(lift=0.0, p=1.0, tasks=0)
    assert lift_test({"a": [0.3]}, {"b": [0.9]}, {}).tasks == 0  # no task both measured


def test_equal_scores_are_never_credible():
    assert lift_test({"a": [0.5] * 4}, {"a": [0.5] * 3}, {}).p == 1.0
    assert lift_test({"a": [1.0] * 12, "b": [0.0] * 12}, {"a": [1.0], "b": [0.0]}, {}).p == 1.0
    assert permutation_p([(np.array([1.0, 0.0]), 1)], [0.0]) == 1.0  # nothing can move


def test_the_threshold_is_the_minimum_effect():
    base, cand = {"a": [0.5, 0.5]}, {"a": [0.52, 0.52]}
    assert lift_test(base, cand, {}, 0.01).p == pytest.approx(1 / 6)  # 0.51 > 0.5
    assert lift_test(base, cand, {}, 0.03).p == 1.0  # 0.49 < 0.5: no evidence of 0.03
    # the shifted p-value is never below the unshifted one (what makes the shift valid)
    rng = np.random.default_rng(5)
    for _ in range(30):
        b = {t: list(rng.random(rng.integers(1, 4)).round(1)) for t in "abc"}
        c = {t: list(rng.random(rng.integers(1, 3)).round(1)) for t in "abc"}
        assert lift_test(b, c, {}, 0.05).p >= lift_test(b, c, {}, 0.0).p - 1e-12
        assert lift_test(b, c, {}, 0.05).p == pytest.approx(by_hand(b, c, {}, 0.05))


def test_sampled_p_values_are_close_to_exact_ones_and_honest_under_aa():
    # 3 tasks of 3 + 3 builds and one of 1 + 2: 20^3 * 3 = 24,000 splits, over EXACT_SPLITS
    rng = np.random.default_rng(11)
    base = {t: list(rng.random(3).round(2)) for t in "abc"} | {"d": [0.3, 0.1]}
    cand = {t: list((rng.random(3) + 0.2).round(2)) for t in "abc"} | {"d": [0.4]}
    assert EXACT_SPLITS < 20**3 * 3
    assert lift_test(base, cand, {}).p == pytest.approx(by_hand(base, cand, {}), abs=0.01)
    assert lift_test(base, cand, {}).p == lift_test(base, cand, {}).p  # a fixed seed
    # A/A: both sides from one distribution; p <= 0.1 about a tenth of the time, no more
    hits = 0
    for _ in range(300):
        scores = {t: list(rng.binomial(4, 0.6, 6) / 4) for t in "abcdefgh"}
        base, cand = ({t: s[:4] for t, s in scores.items()}, {t: s[4:] for t, s in scores.items()})
        hits += lift_test(base, cand, {}).p <= 0.1
    assert hits <= 300 * 0.1 + 2 * np.sqrt(300 * 0.1 * 0.9)


def test_a_full_stage_must_add_builds():
    with pytest.raises(ValueError, match="full_repeats"):
        DecisionConfig(screen_repeats=3, full_repeats=3)


def test_the_smallest_p_the_rule_can_give_and_the_least_alpha_it_can_keep_a_patch_at():
    tiny = DecisionConfig(baseline_repeats=10, fresh_ratio=1, full_repeats=2, confirm_repeats=1)
    # 3 candidate builds a task: against 10 pooled baseline builds C(13, 3) = 286 splits,
    # against the weakness's task's 3 fresh ones C(6, 3) = 20; one task is the weakness's
    assert smallest_p(1, tiny) == 1 / 20 and smallest_p(2, tiny) == 1 / (20 * 286)
    assert smallest_p(3, tiny) == 1 / (1 + PERMUTATIONS)  # more splits than enumerated
    # with 1 pooled build (4 splits) the fresh ones give more: a weakness of every task
    fewer = tiny.model_copy(update={"baseline_repeats": 1})
    assert smallest_p(3, fewer) == 1 / 20**3
    assert smallest_p(1) == 1 / (1 + PERMUTATIONS)  # the default's builds: sampled
    assert smallest_p(26) < DecisionConfig().night_alpha / 5
    assert smallest_p(0) == 1.0
    # the confirmation at 70% of alpha, or the full stage (2 builds: C(4, 2) = 6 splits a
    # task afresh, C(3, 2) = 3 pooled) settling at 30%: the lower of the two alphas they need
    assert least_alpha(3, fewer) == pytest.approx(min(1 / 8000 / 0.7, 1 / 6**3 / 0.3))
    assert least_alpha(3, fewer.model_copy(update={"early_share": 0.0})) == 1 / 8000
    assert least_alpha(1, tiny) == pytest.approx(min(1 / 20 / 0.7, 1 / 6 / 0.3))
    assert least_alpha(26) < DecisionConfig().night_alpha / 5


def two_of_sixteen() -> tuple[dict, dict]:
    """16 train tasks; 14 do not move (scores vary, same means), 2 go from 1/12 to 1."""
    base = {f"t{i:02}": [0.4, 0.6] * 6 for i in range(14)}
    cand = {t: [0.5] + [0.4, 0.6] * 4 for t in base}
    for t in ("m1", "m2"):
        base[t] = [0.0, 1.0] + [0.0] * 10
        cand[t] = [1.0] * 9
    return base, cand


def task_level_p(d: list[float]) -> float:
    """The former rule's p-value: the studentized mean of the task differences against
    every flip of their signs."""

    x = np.array(list(itertools.product((1.0, -1.0), repeat=len(d)))) * np.asarray(d)
    mean, sd = x.mean(axis=1), x.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 1e-12, mean / (sd / np.sqrt(len(d))), np.sign(mean) * np.inf)
    return float(np.mean(t >= t[0] - 1e-9))  # the first row keeps every sign


def test_a_lift_on_two_of_sixteen_tasks_is_found_where_the_task_level_test_cannot_reach():
    base, cand = two_of_sixteen()
    alpha = DecisionConfig().night_alpha / 5
    d = [np.mean(cand[t]) - np.mean(base[t]) for t in sorted(base)]
    assert task_level_p(d) == 0.25  # only the 4 sign flips of the two moved tasks count
    t = lift_test(base, cand, {}, CFG.threshold)
    assert t.lift == pytest.approx(2 / 16 * 11 / 12) and t.p == 1 / (1 + PERMUTATIONS) < alpha


def test_screen_drops_what_is_clearly_worse_or_noise():
    assert screen(Round({"a": [0.5]}, {"a": [0.61]}), {}, CFG).go_on
    assert "hopeless" in screen(Round({"a": [0.61]}, {"a": [0.5]}), {}, CFG).reason
    noise = screen(Round({"a": [0.5] * 3}, {"a": [0.5]}), {}, CFG)
    assert not noise.go_on and "noise" in noise.reason and noise.train.p == 1.0
    assert not screen(Round(), {}, CFG).go_on


def test_full_drops_below_the_threshold_and_noise_and_may_settle_early():
    base = {f"t{i}": [0.5, 0.5] for i in range(8)}
    assert "below the threshold" in full(Round(base, {t: [0.51] for t in base}), {}, CFG).reason
    noisy = {t: [1.0] if i < 5 else [0.0] for i, t in enumerate(base)}  # lift 0.125, exact
    stage = full(Round(base, noisy), {}, CFG)
    assert not stage.go_on and "noise" in stage.reason and stage.train.p > CFG.futility_p
    clear = {f"t{i}": [0.0, 0.1, 0.2] for i in range(8)}, {f"t{i}": [0.9] * 3 for i in range(8)}
    p = full(Round(*clear), {}, CFG).train.p  # sampled: 20^8 splits
    assert p == 1 / (1 + PERMUTATIONS)
    settled = full(Round(*clear), {}, CFG, alpha=0.01)
    assert settled.go_on and settled.alpha == pytest.approx(0.01 * CFG.early_share)
    assert "settled" in settled.reason
    unsure = full(Round(*clear), {}, CFG.model_copy(update={"early_share": 0.0}), alpha=0.01)
    assert unsure.go_on and unsure.alpha is None and "settled" not in unsure.reason


def confirmed(train: tuple[dict, dict], holdout=({}, {}), alpha=0.05) -> Stage:
    return confirm(Round(*train, *holdout), {}, CFG, alpha)


def test_confirm_accepts_a_credible_lift_and_its_alpha_decides():
    train = {"a": [0.0, 0.0, 0.0]}, {"a": [1.0, 1.0]}  # 1 of C(5, 2) = 10 splits
    ok = confirmed(train, alpha=0.1)
    assert ok.go_on and ok.train.p == pytest.approx(0.1) and "accepted" in ok.reason
    assert ok.alpha == 0.1 and ok.holdout is None
    tight = confirmed(train, alpha=0.099)
    assert not tight.go_on and "not credible" in tight.reason and "0.1000 > alpha" in tight.reason
    small = confirmed(({"a": [0.5]}, {"a": [0.51]}), alpha=0.5)
    assert not small.go_on and "below the threshold" in small.reason


def test_the_holdout_vetoes_only_a_credible_drop():
    train = {"a": [0.0, 0.0, 0.0]}, {"a": [1.0, 1.0]}
    hb = {f"h{i}": [0.6, 0.7] for i in range(4)}
    fell = {f"h{i}": [0.1, 0.2] for i in range(4)}  # 1 of 6^4 splits: p = 1/1296
    drop = confirmed(train, (hb, fell), alpha=0.1)
    assert not drop.go_on and drop.reason.startswith("confirm: the holdout fell by 0.500")
    assert drop.holdout.lift == pytest.approx(-0.5) and drop.holdout.p == pytest.approx(1 / 1296)
    one_bad = {f"h{i}": [0.6, 0.7] if i else [0.1, 0.0] for i in range(4)}  # no evidence
    kept = confirmed(train, (hb, one_bad), alpha=0.1)
    assert kept.go_on and kept.holdout.lift == pytest.approx(-0.15)
    assert "holdout -0.150" in kept.reason and kept.holdout.p > CFG.holdout_alpha
    small = drop_test({"h": [0.6, 0.6]}, {"h": [0.59, 0.59]}, {}, CFG.threshold)
    assert small.p == 1.0 and small.lift == pytest.approx(-0.01)  # under the margin: no veto


def test_accepted_is_a_confirmation_that_went_on():
    t = decision.Test(lift=0.1, p=0.001, tasks=3)
    assert accepted([Stage(stage="screen", go_on=True, train=t, reason=""),
                     Stage(stage="confirm", go_on=True, train=t, reason="")])  # fmt: skip
    assert not accepted([Stage(stage="confirm", go_on=False, train=t, reason="")])
    assert not accepted([Stage(stage="full", go_on=True, train=t, reason="")])
    assert not accepted([])


class Scripted:
    """A measure that hands out fixed scores, each round the next ones of every task and
    side, and records what it was asked; the baseline of the ``fresh`` tasks (the
    weakness's) gets the ``fresh`` count."""

    def __init__(self, base: dict, cand: dict, holdout=({}, {}), fresh=frozenset()):
        self.scores = {"baseline_train": base, "candidate_train": cand}
        self.scores.update(baseline_holdout=holdout[0], candidate_holdout=holdout[1])
        self.fresh = fresh
        self.used: dict[tuple[str, str], int] = {}
        self.asked: list[tuple] = []

    def next(self, side: str, task: str, n: int) -> list[float]:
        start = self.used.get((side, task), 0)
        self.used[side, task] = start + n
        return self.scores[side][task][start : start + n]

    def __call__(self, stage, repeats, holdout, *, tasks=None, baseline=None, fresh=None):
        self.asked.append((stage, repeats, holdout, tasks, baseline, fresh))
        out = Round()
        for split in ("train", "holdout") if holdout else ("train",):
            names = self.scores[f"candidate_{split}"]
            if split == "train" and tasks is not None:
                names = [t for t in names if t in tasks]
            for t in names:
                n = repeats if baseline is None else baseline
                if t in self.fresh and fresh is not None:
                    n = fresh
                getattr(out, f"baseline_{split}")[t] = self.next(f"baseline_{split}", t, n)
                getattr(out, f"candidate_{split}")[t] = self.next(f"candidate_{split}", t, repeats)
        return out


def test_evaluate_asks_the_rounds_the_rule_needs_and_accepts_two_of_sixteen():
    base, cand = two_of_sixteen()
    for t in ("m1", "m2"):  # the weakness's tasks: their baseline is built afresh, 2 a build
        base[t] = [0.0, 1.0] + [0.0] * 16
    rule = DecisionConfig(threshold=0.02, early_share=0.0, baseline_repeats=12, fresh_ratio=2)
    held = {"h": [0.5, 0.5]}, {"h": [0.5, 0.5]}
    measure = Scripted(base, cand, held, fresh={"m1", "m2"})
    stages = evaluate(measure, {}, rule, 0.01)
    assert [s.stage for s in stages] == ["screen", "full", "confirm"] and accepted(stages)
    assert measure.asked == [
        ("screen", 1, False, None, 12, 2),
        ("full", 2, False, None, 0, 4),
        ("confirm", 6, False, None, 0, 12),
        ("holdout", 3, True, (), None, None),  # only for a would-be accept
    ]
    assert stages[-1].train.builds == 14 * (12 + 9) + 2 * (18 + 9)
    assert stages[-1].holdout.lift == 0.0


def test_evaluate_stops_at_the_first_drop_and_builds_no_holdout_for_a_reject():
    base = {f"t{i}": [0.5] * 12 for i in range(6)}
    measure = Scripted(base, {t: [0.5] * 9 for t in base})
    stages = evaluate(measure, {}, CFG, 0.01)  # A/A on equal scores: p = 1, never credible
    assert [s.stage for s in stages] == ["screen"] and not accepted(stages)
    assert measure.asked == [("screen", 1, False, None, 10, 2)]
    lifting = Scripted(
        {t: [0.0, 1.0] * 6 for t in base}, {t: [1.0, 0.0] * 4 + [1.0] for t in base}
    )  # a lift of 1/9 on every task, never credible with 6 tasks at alpha 1e-6
    stages = evaluate(lifting, {}, CFG, 1e-6)
    assert stages[-1].stage == "confirm" and not accepted(stages)
    assert "not credible" in stages[-1].reason
    assert [a[0] for a in lifting.asked] == ["screen", "full", "confirm"]  # no holdout


def test_a_settled_full_stage_builds_only_the_holdout_at_its_share_of_alpha():
    base = {f"t{i}": [0.0, 0.1] * 6 for i in range(8)}
    measure = Scripted(base, {t: [0.9] * 9 for t in base}, ({"h": [0.5] * 2}, {"h": [0.6] * 2}))
    stages = evaluate(measure, {}, CFG, 0.01)
    assert accepted(stages) and [a[0] for a in measure.asked] == ["screen", "full", "holdout"]
    assert stages[1].alpha == stages[2].alpha == pytest.approx(0.01 * CFG.early_share)
    assert stages[2].train.builds == 8 * (10 + 3)  # the default's 10 baseline builds a task
