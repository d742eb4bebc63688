"""Issue 22 item 21: ``build --resume`` of an enhance run says what going back to its last
checkpoint discarded when the resumed run starts, not after its last phase."""

from __future__ import annotations

import pytest

from orchestrator.cli import main
from tests.orchestrator.loop.test_enhance import MODEL, enhance, user_repo  # noqa: F401

pytestmark = pytest.mark.e2e  # left out of `make test-fast`


def test_21_the_discarded_note_of_a_resume_comes_before_its_first_phase(
    home,
    user_repo,  # noqa: F811 (the fixture imported above)
    capsys,
):
    code, stopped = enhance(home, user_repo, "honest", "--max-tokens", "16000")
    assert code == 1 and stopped["status"] == "stopped", stopped["reason"]
    assert [p["phase"] for p in stopped["phases"]] == ["plan", "deps", "scaffold"]
    capsys.readouterr()

    argv = ["build", "--resume", stopped["run_id"], "--model", MODEL.format("honest")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    note = err.index("the stopped phase's changes to 3 file(s) were discarded")
    assert err.count("were discarded") == 1
    assert err.index(f"run {stopped['run_id']}: ") < note < err.index("✓ build:")
