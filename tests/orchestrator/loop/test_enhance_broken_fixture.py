"""``cadillac enhance`` on a project that ships a test fixture which does not compile
(as Django does): the build check holds the change to what it touched, so an honest
change passes, and the agent hands the check what git says the change touched."""

from __future__ import annotations

import pytest

from tests.orchestrator.conftest import git
from tests.orchestrator.loop.test_enhance import enhance, project

pytestmark = pytest.mark.e2e  # whole builds, with a scripted model

BROKEN = "def fixture_that_must_not_compile(:\n"


def test_a_fixture_that_does_not_compile_is_not_the_changes_concern(home, tmp_path):
    repo = project(tmp_path / "wordfreq")
    (repo / "tests/runner_apps").mkdir()
    (repo / "tests/runner_apps/tests_syntax_error.py").write_text(BROKEN)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wordfreq, with a deliberately broken fixture")
    code, summary = enhance(home, repo, "honest")
    assert code == 0 and summary["status"] == "passed", summary["reason"]
    assert "tests/runner_apps/tests_syntax_error.py" not in summary["changed"]
