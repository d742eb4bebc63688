"""The baseline pool: what an iteration may reuse of the builds made on the same commit."""

from __future__ import annotations

from orchestrator.bench.reuse import BaselinePool


def surveyed() -> BaselinePool:
    pool = BaselinePool()
    pool.add("c1", "a", [0.5, 0.25])  # the survey: two repeats
    pool.add("c1", "h", [1.0, 1.0])
    return pool


def test_the_survey_serves_the_first_iteration_and_only_the_shortfall_is_built():
    pool = surveyed()
    assert pool.available("a") == 0  # the survey's own builds are used by the survey
    pool.start_iteration("c1")
    assert pool.available("a") == 2 and pool.available("h") == 2
    assert pool.take("a", 1) == [0.5]  # the screen needs one: the oldest
    assert pool.take("a", 3) == [0.25]  # the next stage needs three: one left, two to build
    pool.add("c1", "a", [0.0, 0.75])  # the shortfall, built now, used by this iteration
    assert pool.available("a") == 0 and pool.take("a", 5) == []
    assert pool.available("other") == 0 and pool.take("other", 2) == []


def test_a_later_iteration_on_the_same_commit_reads_every_build_again_in_order():
    pool = surveyed()
    pool.start_iteration("c1")
    pool.take("a", 2)
    pool.add("c1", "a", [0.0, 0.75])
    pool.start_iteration("c1")  # nothing accepted: the tip is still c1
    assert pool.available("a") == 4
    assert pool.take("a", 3) == [0.5, 0.25, 0.0]
    assert pool.take("a", 3) == [0.75]
    assert pool.take("a", 0) == [] and pool.take("h", -1) == []


def test_builds_added_while_unused_ones_remain_are_not_taken_twice():
    pool = surveyed()
    pool.start_iteration("c1")
    assert pool.take("a", 1) == [0.5]
    pool.add("c1", "a", [0.0])  # built although one was left: it is used, the old one is not
    assert pool.available("a") == 1 and pool.take("a", 2) == [0.25]


def test_an_accept_moves_the_tip_and_empties_the_pool():
    pool = surveyed()
    pool.start_iteration("c1")
    pool.start_iteration("c2")  # the patch of the last iteration was accepted
    assert pool.commit == "c2" and pool.available("a") == 0 and pool.take("a", 2) == []
    pool.add("c2", "a", [0.5])
    pool.start_iteration("c2")
    assert pool.take("a", 2) == [0.5]


def test_scores_of_another_commit_replace_the_pool():
    pool = surveyed()
    pool.add("c2", "a", [0.125])
    pool.start_iteration("c2")
    assert pool.available("h") == 0 and pool.take("a", 3) == [0.125]
