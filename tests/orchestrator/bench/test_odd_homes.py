"""A build scored from a home whose path a shell would split, expand or read as an option.

The scorer's installs and its judge reach the sandbox's shell with paths under the home
(the scoring folder, the project's ``.venv``, the judge's files, the venv cache); a path
with a blank, a quote, a ``$``, non-ASCII letters or a leading ``-`` must reach it as one
word, or every build of the matrix scores 0 ("broken"). One reference needs nothing but
the standard library, one installs third-party wheels (the pip step's paths too).
"""

from __future__ import annotations

import pytest

from orchestrator.bench.scoring import score_build
from orchestrator.sandbox.executor import ExecConfig
from tests.orchestrator.bench.test_judge_refs import REFS, TASKS, as_built

pytestmark = pytest.mark.e2e  # left out of `make test-fast`, as the other references are

ODD_NAMES = ["-rf --home", "my home", 'it\'s "here"', "$HOME$(false)`x`;", "düsseldorf ñ"]
"""Each a folder of the one home path: every oddity at once (a home of its own each cost
a cold venv cache per name, five times over, for what one path shows)."""


@pytest.mark.parametrize("task_id", ["lru-cache", "flask-notes"])
def test_a_reference_scores_full_marks_from_an_odd_home(task_id, tmp_path, request):
    if (REFS / task_id / "requirements.txt").is_file():
        request.getfixturevalue("wheel_index")
    home = tmp_path.joinpath(*ODD_NAMES, "-home")
    home.mkdir(parents=True)
    ws = as_built(task_id, home / "runs" / "build")
    folder = home / "runs" / "matrix-x" / "scoring"
    score = score_build(TASKS[task_id], ws, folder, ExecConfig(), home / ".cache")
    assert (score.verdict, score.score) == ("scored", 1.0), score
    assert score.total == score.passed > 0
