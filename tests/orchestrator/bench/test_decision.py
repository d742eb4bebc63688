"""The keep-or-drop rule of the improve cycle, on fixed numbers at its boundaries."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from orchestrator.bench.decision import (
    DecisionConfig,
    Round,
    confirm,
    drop_test,
    evaluate,
    full,
    lift_test,
    screen,
    sign_flip_p,
    smallest_p,
    task_differences,
)

CFG = DecisionConfig(threshold=0.02)  # the boundaries below are computed for this threshold


def by_hand(values: list[float]) -> float:
    """The sign-flip p-value computed the slow, obvious way."""

    def t(x):
        x = np.asarray(x, dtype=float)
        sd = x.std(ddof=1)
        return np.inf * np.sign(x.mean()) if sd == 0 else x.mean() / (sd / np.sqrt(len(x)))

    observed = t(values)
    flips = [t([s * v for s, v in zip(signs, values, strict=True)])
             for signs in itertools.product((1, -1), repeat=len(values))]  # fmt: skip
    return sum(f >= observed - 1e-9 for f in flips) / len(flips)


def test_the_sign_flip_test_against_a_hand_computed_case():
    # four differences, all positive: only the all-plus flip is as extreme -> 1/16
    assert sign_flip_p([0.1, 0.2, 0.3, 0.4]) == pytest.approx(1 / 16)
    mixed = [0.3, -0.1, 0.2, 0.25, -0.05]
    assert sign_flip_p(mixed) == pytest.approx(by_hand(mixed))
    # with one negative of size 0.1: flips that keep t as high are counted by hand
    assert sign_flip_p([0.1, 0.2, 0.3, -0.1]) == pytest.approx(by_hand([0.1, 0.2, 0.3, -0.1]))
    assert sign_flip_p([]) == 1.0
    assert sign_flip_p([-0.2, -0.1, -0.3]) == pytest.approx(1.0)


def test_the_smallest_p_over_n_tasks():
    assert smallest_p(4) == 0.0625 and smallest_p(8) == 2**-8
    assert sign_flip_p([0.5] * 6) == pytest.approx(smallest_p(6))  # equal and positive


def test_the_task_is_the_unit_and_weights_scale_the_lift():
    d, w = task_differences({"a": [0, 0, 0], "b": [0.5]}, {"a": [1, 1, 0], "b": [1.0]}, {})
    assert list(d) == pytest.approx([2 / 3, 0.5]) and list(w) == [1.0, 1.0]
    t = lift_test({"a": [0], "b": [0]}, {"a": [1], "b": [0]}, {"a": 3.0, "b": 1.0})
    assert t.lift == pytest.approx(0.75) and t.tasks == 2  # the weighted score 0 -> 0.75


def test_the_threshold_is_the_minimum_effect():
    tasks = [f"t{i}" for i in range(6)]
    base = {t: [0.5] for t in tasks}
    just_over = {t: [0.5 + 0.021 + 0.001 * i] for i, t in enumerate(tasks)}
    just_under = {t: [0.5 + 0.015 + 0.001 * i] for i, t in enumerate(tasks)}
    assert lift_test(base, just_over, {}, CFG.threshold).p == pytest.approx(1 / 64)
    assert lift_test(base, just_under, {}, CFG.threshold).p > 0.5  # under 0.02: no evidence
    assert lift_test(base, just_under, {}, 0.0).p == pytest.approx(1 / 64)


def test_screen_drops_only_what_is_clearly_worse():
    assert screen({"a": [0.5]}, {"a": [0.5]}, {}, CFG).go_on  # one unlucky repeat is no verdict
    assert screen({"a": [0.59]}, {"a": [0.5]}, {}, CFG).go_on  # above the floor of -0.1
    assert "hopeless" in screen({"a": [0.61]}, {"a": [0.5]}, {}, CFG).reason
    assert screen({"a": [0.5]}, {"a": [0.51]}, {}, CFG).go_on
    assert not screen({}, {}, {}, CFG).go_on


def test_full_drops_below_the_threshold_and_noise():
    base = {f"t{i}": [0.5, 0.5] for i in range(8)}
    small = {t: [0.51, 0.51] for t in base}
    assert "below the threshold" in full(base, small, {}, CFG).reason
    noisy = {t: [1.0, 1.0] if i % 2 else [0.0, 0.1] for i, t in enumerate(base)}
    stage = full(base, noisy, {}, CFG)
    assert not stage.go_on and "noise" in stage.reason and stage.train.p > CFG.futility_p
    clear = {t: [0.8, 0.9] for t in base}
    assert full(base, clear, {}, CFG).go_on


def confirm_with(train_lifts, round_lift=0.3, holdout=(), alpha=0.05):
    tasks = [f"t{i}" for i in range(len(train_lifts))]
    base = {t: [0.3] for t in tasks}
    cand = {t: [0.3 + x] for t, x in zip(tasks, train_lifts, strict=True)}
    again = {t: [0.3 + round_lift] for t in tasks}
    hb = {f"h{i}": [0.6] for i in range(len(holdout))}
    hc = {f"h{i}": [0.6 + x] for i, x in enumerate(holdout)}
    return confirm(base, cand, base, again, hb, hc, {}, CFG, alpha)


def test_confirm_accepts_a_credible_lift_and_its_alpha_decides():
    lifts = [0.3, 0.35, 0.4, 0.25, 0.3, 0.45]  # six tasks: p = 1/64
    ok = confirm_with(lifts)
    assert ok.go_on and ok.train.p == pytest.approx(1 / 64) and "accepted" in ok.reason
    tight = confirm_with(lifts, alpha=0.01)  # 1/64 = 0.0156 > 0.01
    assert not tight.go_on and "not credible" in tight.reason


def test_confirm_needs_the_confirmation_round_to_lift_too():
    stage = confirm_with([0.3] * 6, round_lift=0.0)
    assert not stage.go_on and "confirmation round" in stage.reason


def test_the_holdout_vetoes_only_a_credible_drop():
    lifts = [0.3, 0.35, 0.4, 0.25, 0.3, 0.45]
    drop = confirm_with(lifts, holdout=[-0.3, -0.4, -0.35, -0.5, -0.3])  # p = 1/32 <= 0.1
    assert not drop.go_on and "holdout fell" in drop.reason
    assert drop.holdout.lift == pytest.approx(-0.37)
    one_bad = confirm_with(lifts, holdout=[-0.5, 0.0, 0.0, 0.05, 0.0])  # a point, no evidence
    assert one_bad.go_on and one_bad.holdout.lift == pytest.approx(-0.09)
    small = drop_test({"h": [0.6]}, {"h": [0.59]}, {}, CFG.threshold)  # 0.01 < the margin
    assert small.p == 1.0


def test_evaluate_runs_the_stages_and_stops_at_the_first_drop():
    asked = []

    def measure(stage, repeats, holdout):
        asked.append((stage, repeats, holdout))
        lift = -0.2 if stage == "screen" else 0.4
        return Round(
            {f"t{i}": [0.3] * repeats for i in range(6)},
            {f"t{i}": [0.3 + lift] * repeats for i in range(6)},
        )

    stages = evaluate(measure, {}, CFG, 0.05)
    assert [s.stage for s in stages] == ["screen"] and asked == [("screen", 1, False)]

    asked.clear()

    def lifting(stage, repeats, holdout):
        asked.append((stage, repeats, holdout))
        return Round(
            {f"t{i}": [0.3] * repeats for i in range(6)},
            {f"t{i}": [0.6 + 0.01 * i] * repeats for i in range(6)},
            {"h": [0.5] * repeats} if holdout else {},
            {"h": [0.5] * repeats} if holdout else {},
        )

    stages = evaluate(lifting, {}, CFG, 0.05)
    assert [s.stage for s in stages] == ["screen", "full", "confirm"] and stages[-1].go_on
    expected = [("screen", 1, False), ("full", 4, True), ("confirm", CFG.confirm_repeats, True)]
    assert asked == expected
