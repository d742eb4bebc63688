"""The false-accept budget over a repository's life: the schedule never spends the budget,
cycles on one repository spend from one ledger, a bad ledger stops a cycle before anything
is made and is never written over, and the figure reaches the summary and ``--status``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.improve.lifetime import ErrorBudget, Standing, curve, first_commit
from tests.orchestrator.conftest import git, make_repo
from tests.orchestrator.improve.test_cycle_rounds import MARK, ByCode, improver, run_cycle
from tests.support import one_error_line, run


def test_the_schedule_spends_less_and_less_and_never_the_whole_budget():
    shares = [curve(t) - curve(t - 1) for t in range(1, 2001)]
    assert all(a > b > 0 for a, b in zip(shares, shares[1:], strict=False))
    assert curve(0) == 0 and curve(10**9) < 1
    spent, standing = 0.0, Standing()
    for iterations in [5, 8, 1, 3] * 100:  # cycles of any size, as they come
        alpha = standing.grant(0.1, iterations, cap=0.05 / iterations)
        assert alpha <= 0.05 / iterations  # the night's own bound holds as before
        standing.tests += iterations
        spent += alpha * iterations
        standing.spent = spent
    assert spent <= 0.1 * curve(standing.tests) + 1e-12 < 0.1
    # the first night of 5 at the default budget, and one long after
    assert Standing().grant(0.1, 5, 0.01) == pytest.approx(0.1 * curve(5) / 5)
    assert Standing(tests=500, spent=0.09).grant(0.1, 5, 0.01) < 1.1e-5
    assert Standing(tests=3, spent=0.1).grant(0.1, 5, 0.01) == 0.0  # nothing left


def test_two_cycles_on_one_repository_spend_from_one_ledger(home, repo, tmp_path):
    propose, _ = improver(MARK)  # iteration 1 is kept; the others lift nothing
    first, _ = run_cycle(home, repo, ByCode(), propose, iterations=3)
    assert [it.status for it in first.iterations] == ["accepted", "rejected", "rejected"]
    grant = 0.1 * curve(3) / 3
    assert first.alpha == pytest.approx(grant) and first.alpha < 0.05 / 3
    figure = first.lifetime
    assert (figure.tests, figure.kept, figure.budget) == (3, 1, 0.1)
    assert figure.spent == pytest.approx(3 * grant) and figure.alpha == first.alpha
    lines = [json.loads(x) for x in (home / "error_budget.jsonl").read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["test", "kept", "test", "test"]
    assert {x["repo"] for x in lines} == {first_commit(repo)}

    propose, _ = improver()  # nothing to propose that measures: no spend
    second, _ = run_cycle(home, repo, ByCode(), lambda m, t: "no proposal", iterations=2)
    assert second.lifetime.tests == 3 and second.lifetime.spent == figure.spent
    assert second.alpha == pytest.approx(0.1 * (curve(5) - curve(3)) / 2)  # the next shares
    third, _ = run_cycle(home, repo, ByCode(), propose, iterations=2)
    assert third.alpha == second.alpha and third.lifetime.tests == 5
    assert third.lifetime.spent == pytest.approx(figure.spent + 2 * third.alpha)

    other = make_repo(tmp_path / "other")  # another repository: a budget of its own
    git(other, "commit", "-q", "--amend", "-m", "another first commit")
    fresh, _ = run_cycle(home, other, ByCode(), improver()[0], iterations=3)
    assert fresh.alpha == pytest.approx(grant) and fresh.lifetime.tests == 3


def test_a_ledger_line_that_cannot_be_read_stops_the_cycle_and_is_left_as_it_is(home, repo):
    ledger = home / "error_budget.jsonl"
    good = ErrorBudget(Home(home), repo, 0.1)
    good.book("test", "x", 1, 0.004)
    for bad in (b'{"kind": "test", "repo": "r", "alpha": 7, "budget": 0.1}', b"{cut", b"\xff"):
        before = ledger.read_bytes() + bad + b"\n"
        ledger.write_bytes(before)
        with pytest.raises(CadillacError, match=r"error_budget.jsonl line 2 cannot be read"):
            run_cycle(home, repo, ByCode(), improver()[0], iterations=1)
        assert ledger.read_bytes() == before  # nothing written over it, nor after it
        assert not list((home / "runs").glob("improve-*"))  # nothing was made
        ledger.write_bytes(before.splitlines(keepends=True)[0])
    os.unlink(ledger)
    os.symlink(home / "elsewhere.jsonl", ledger)
    with pytest.raises(CadillacError, match="error_budget.jsonl cannot be read"):
        good.standing()


def test_status_shows_the_running_figure(home, repo, capsys):
    from orchestrator.cli import main

    run_cycle(home, repo, ByCode(), improver()[0], iterations=1)
    assert main(["improve", "--status"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "lifetime error budget: 0.0087 of 0.1 spent over 1 measured iteration(s)" in out
    assert "the chance that any of the 0 patch(es) kept so far is noise is at most 0.87%" in out
    assert "(9 reused)" in out  # the screen's baseline: the survey's builds, but the weakness's


@pytest.mark.parametrize("command", ["improve", "nightly"])
@pytest.mark.parametrize("value", ["0", "1", "-0.1", "nan", "lots"])
def test_a_lifetime_alpha_out_of_range_is_one_error_line(command, value, home, capsys):
    code, _, err = run(capsys, command, "--model", "scripted:x", "--lifetime-alpha", value)
    line = one_error_line(err)
    assert code == 2 and "--lifetime-alpha" in line and "between 0 and 1, or off" in line
    assert not (home / "error_budget.jsonl").exists() and not (home / "runs").exists()


def test_lifetime_off_is_the_nights_bound_alone(home, repo):
    summary, _ = run_cycle(home, repo, ByCode(), improver()[0], iterations=2, lifetime_alpha=None)
    assert summary.alpha == 0.05 / 2 and summary.lifetime is None
    assert not Path(home, "error_budget.jsonl").exists()


def test_the_help_says_the_default_budget(capsys):
    from orchestrator.improve.lifetime import DEFAULT_BUDGET

    for command in ("improve", "nightly"):
        with pytest.raises(SystemExit):
            run(capsys, command, "--help")
        assert f"(default {DEFAULT_BUDGET:g};" in " ".join(capsys.readouterr().out.split())
