"""The keep-or-drop rule of the improve cycle, on fixed numbers at its boundaries."""

from __future__ import annotations

import math

import pytest

from orchestrator.bench.decision import decide, paired_differences, paired_interval, t975

W = {"a": 1.0, "b": 1.0}


def test_t_quantiles():
    assert t975(1) == 12.706 and t975(9) == 2.262 and t975(30) == 2.042
    assert t975(60) == pytest.approx(2.000, abs=0.002)
    assert t975(120) == pytest.approx(1.980, abs=0.002)
    with pytest.raises(ValueError):
        t975(0)


def test_interval_of_known_numbers():
    # differences 0.1, 0.2, 0.3, 0.4: mean 0.25, sd 0.1291, t(3) = 3.182 -> half 0.2054
    iv = paired_interval([0.1, 0.2, 0.3, 0.4])
    assert iv.mean == pytest.approx(0.25)
    assert iv.low == pytest.approx(0.25 - 3.182 * 0.129099 / 2, abs=1e-5)
    assert paired_interval([0.3]).low == -math.inf
    assert paired_interval([0.2, 0.2]).low == pytest.approx(0.2)


def test_a_clear_lift_is_accepted():
    d = decide({"a": [0, 0, 0], "b": [0, 0.5, 0]}, {"a": [1, 1, 1], "b": [0.5, 1, 0.5]}, {}, {}, W)
    assert d.accepted and d.train_delta == pytest.approx((3 + 1.5) / 6)


def test_lift_below_the_threshold_is_rejected_even_if_certain():
    base = {"a": [0.5, 0.5], "b": [0.5, 0.5]}
    cand = {"a": [0.54, 0.54], "b": [0.54, 0.54]}
    d = decide(base, cand, {}, {}, W, threshold=0.05)
    assert not d.accepted and "below the threshold" in d.reason
    assert decide(base, {"a": [0.55] * 2, "b": [0.55] * 2}, {}, {}, W, 0.05).accepted


def test_a_big_but_noisy_lift_is_rejected():
    base = {"a": [0, 1, 0, 1], "b": [1, 0, 1, 0]}
    cand = {"a": [1, 1, 0, 1], "b": [1, 1, 0, 0]}  # mean lift 0.125, differences spread wide
    d = decide(base, cand, {}, {}, W)
    assert d.train_delta == pytest.approx(0.125)
    assert not d.accepted and "noise" in d.reason and d.interval.low < 0


def test_the_interval_boundary_decides():
    # differences (0.1, x) with n = 2: t(1) = 12.706; low > 0 needs spread small enough
    just_in = decide({"a": [0, 0]}, {"a": [0.1, 0.11]}, {}, {}, {"a": 1.0})
    just_out = decide({"a": [0, 0]}, {"a": [0.1, 0.13]}, {}, {}, {"a": 1.0})
    assert just_in.interval.low > 0 and just_in.accepted
    assert just_out.interval.low < 0 and not just_out.accepted


def test_a_holdout_drop_beyond_the_threshold_vetoes():
    base, cand = {"a": [0, 0], "b": [0, 0]}, {"a": [1, 1], "b": [1, 1]}
    ok = decide(base, cand, {"h": [1.0, 1.0]}, {"h": [0.96, 0.96]}, W)
    veto = decide(base, cand, {"h": [1.0, 1.0]}, {"h": [0.9, 0.9]}, W)
    assert ok.accepted and ok.holdout_delta == pytest.approx(-0.04)
    assert not veto.accepted and "holdout fell" in veto.reason


def test_weights_scale_the_differences_so_their_mean_is_the_score_lift():
    diffs = paired_differences({"a": [0], "b": [0]}, {"a": [1], "b": [0]}, {"a": 3.0, "b": 1.0})
    assert sum(diffs) / len(diffs) == pytest.approx(0.75)  # weighted score 0 -> 0.75
