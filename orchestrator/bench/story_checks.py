"""Hidden checks written as user stories: a matrix task's ``acceptance/stories.json``.

A task whose artifact is driven from outside (a React page in a browser, a full stack's
API and page, a TypeScript library called from ``node``) may write its hidden checks in the
story format the plan phase uses (:mod:`phases.stories.schema`) instead of, or beside,
Python checks. They are scored with the same care as those (:mod:`orchestrator.bench.scoring`):

* in the fresh scoring copy, after cadillac's own installs, each stack builds its artifact
  as a user would (:func:`phases.stacks.build_artifacts`: ``npm run build`` in
  ``frontend/``, ``go build``, ``cargo build``); an artifact that does not build fails every
  story, it does not break the score;
* the stories run under cadillac's story driver (:func:`phases.stories.runner.run_stories`):
  on cadillac's own interpreter with ``-I -S``, a key the project never sees, and only the
  signed result line read;
* two stories of random names are added (:class:`StoryCanaries`), one that must pass and
  one that must fail: a driver's report without them as they must be is ``tampered``; no
  signed line at all is ``broken``.

Each story is one check: the task's score is the share of its checks (Python ones and
stories together) that pass.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import project_env
from orchestrator.sandbox.workspace import Workspace
from phases.base import PhaseContext, load_plan
from phases.stacks import build_artifacts
from phases.stories.runner import NO_RESULT, StoryReport, run_stories
from phases.stories.schema import CliStory, Stories

STORIES_FILE = "stories.json"


@dataclass
class StoryCanaries:
    """Two cli stories of random names: ``good`` must pass, ``bad`` must fail."""

    good: str
    bad: str

    @classmethod
    def new(cls) -> StoryCanaries:
        return cls(f"c-{secrets.token_hex(6)}", f"c-{secrets.token_hex(6)}")

    def stories(self) -> list[CliStory]:
        return [
            CliStory(name=self.good, argv=["true"], exit=0),
            CliStory(name=self.bad, argv=["true"], exit=1),
        ]

    def judge(self, report: StoryReport) -> str:
        """Why the report cannot be true ("" when the canaries came out right)."""
        by_name = {r.name: r.passed for r in report.results}
        if by_name.get(self.bad) is not False:
            return "a story that must fail was reported as passing"
        if by_name.get(self.good) is not True:
            return "a story that must pass was reported as failing"
        return ""


@dataclass
class StoryScore:
    """What the task's stories came to: ``why`` is set when they say nothing (broken,
    tampered), else ``passed`` of ``total`` with the first failures."""

    passed: int = 0
    total: int = 0
    failures: list[str] | None = None
    why: str = ""
    tampered: bool = False


def has_stories(task_dir: Path) -> bool:
    return (task_dir / "acceptance" / STORIES_FILE).is_file()


def score_stories(
    task_dir: Path, project: Path, folder: Path, executor: ExecConfig, cache_dir: Path | None
) -> StoryScore:
    """Build the artifacts of the set-up ``project`` and drive them through the task's
    stories, with canaries; screenshots go to ``folder / "stories"``."""
    stories = Stories.model_validate_json(
        (task_dir / "acceptance" / STORIES_FILE).read_text(encoding="utf-8")
    )
    ctx = _context(project, executor, cache_dir)
    failed = build_artifacts(ctx, load_plan(project))
    if failed is not None:
        why = f"the artifact did not build: {failed.summary}"
        return StoryScore(0, len(stories.stories), [f"{s.name}: {why}" for s in stories.stories])
    canaries = StoryCanaries.new()
    every = Stories(stories=[*stories.stories, *canaries.stories()])
    report = run_stories(ctx, every, out_dir=folder / "stories")
    if report.results and all(r.got.startswith(NO_RESULT) for r in report.results):
        return StoryScore(why=report.results[0].got[:400])
    tampered = canaries.judge(report)
    if tampered:
        return StoryScore(why=tampered, tampered=True)
    ours = [r for r in report.results if r.name not in (canaries.good, canaries.bad)]
    return StoryScore(
        passed=sum(r.passed for r in ours),
        total=len(stories.stories),
        failures=[f"story {r.name}: {r.got[:120]}" for r in ours if not r.passed],
    )


def _context(project: Path, executor: ExecConfig, cache_dir: Path | None) -> PhaseContext:
    """The scoring copy's commands: in the sandbox, as a build's are, without the network."""

    def run(command, timeout_s=None, install=None, visible=(), writable=()):
        return run_command(
            command,
            project,
            executor,
            timeout_s=timeout_s,
            path_prefix=[project / ".venv" / "bin"],
            env=project_env(project),
            install=install,
            visible=visible,
            writable=writable,
        )

    return PhaseContext(task="score", workspace=Workspace(project), run=run, cache_dir=cache_dir)
