"""Running the stories: the story driver in the sandbox, its signed verdict read on the host.

What this module decides, and why:

* **The verdict comes from the signed line only.** :func:`run_stories` copies the driver
  (:mod:`phases.stories.driver`), the judge's files it signs with
  (:data:`orchestrator.sandbox.signing.JUDGE_FILES`) and the stories into a fresh folder
  of the host's, bound read-only in the sandbox (for a browser story, also the folders of
  cadillac's own modules and Playwright's, :func:`phases.stories.browser.driver_paths`,
  never the whole ``site-packages`` or checkout); hands
  the driver a fresh key in a file it removes before any project code runs; and reads the
  one result line signed with that key. No such line (the driver was killed, the project
  ended the sandbox early) fails every story with :data:`NO_RESULT`: nothing the project
  prints can pass a story. The driver writes the line to a file of a folder of its own too
  (:data:`RESULT`), read first: the command's output is capped, and the line of many
  stories is longer than the cap.
* **Screenshots come back as files, never links.** The driver writes them into a fresh
  folder the sandbox may write; the host copies into ``out_dir`` only the ones the signed
  report names, each a regular file of at most :data:`SHOT_BYTES` (never what else the
  project wrote there).
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel

from orchestrator.sandbox.files import read_regular
from orchestrator.sandbox.signing import JUDGE_FILES, JUDGE_PYTHON, hand_key, last_report, new_key
from phases.base import CheckResult, PhaseContext
from phases.stories import browser
from phases.stories.schema import Stories

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "driver.py"
NO_RESULT = "the story driver printed no result"
SLACK_S = 30.0
"""The driver's own time beyond its stories' time limits."""
RESULT = "result.json"
"""The file the driver also writes its signed line to: the command's output is capped
(``ExecConfig.output_cap_bytes``), so the line of many stories would be cut there."""
RESULT_BYTES = 64 * 1024**2
SHOT_BYTES = 20 * 1024**2
"""The largest screenshot kept."""
DETAIL_CHARS = 2500
"""How much of what was sent and what came back a failing story shows the model."""
DETAIL_STORIES = 8
"""How many failing stories the model is shown in full (the others by name)."""


class StoryResult(BaseModel):
    name: str
    kind: str
    passed: bool
    sent: str = ""
    got: str = ""
    screenshot: str | None = None
    """Where the story's screenshot is, on the host (in ``out_dir``)."""


class StoryReport(BaseModel):
    results: list[StoryResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def failed(self) -> list[StoryResult]:
        return [r for r in self.results if not r.passed]

    def check(self) -> CheckResult | None:
        """None when every story held; else what each failing one sent and got back."""
        failed = self.failed()
        if not failed:
            return None
        names = ", ".join(r.name for r in failed[:5])
        details = "\n\n".join(
            f"story {r.name} ({r.kind}) failed\nsent:\n{r.sent[:DETAIL_CHARS]}\n"
            f"got:\n{r.got[:DETAIL_CHARS]}"
            for r in failed[:DETAIL_STORIES]
        )
        if len(failed) > DETAIL_STORIES:
            rest = ", ".join(r.name for r in failed[DETAIL_STORIES:])
            details += f"\n\n{len(failed) - DETAIL_STORIES} more failing: {rest}"
        return CheckResult(
            passed=False,
            summary=f"{len(failed)} of {len(self.results)} user stories fail: {names}",
            details="cadillac ran the plan's user stories against the artifact, as a user "
            "would; fix the program (not the stories):\n\n" + details,
        )


def time_of(stories: Stories) -> float:
    total = SLACK_S
    for story in stories.stories:
        total += getattr(story, "timeout_s", 60) * (2 if story.kind in ("http", "browser") else 1)
    return total


def run_stories(ctx: PhaseContext, stories: Stories, *, out_dir: Path | None = None) -> StoryReport:
    """Drive the artifact in ``ctx``'s workspace through ``stories``, in the sandbox."""
    root = ctx.workspace.root
    with tempfile.TemporaryDirectory() as tmp:  # a name that does not say what it is for
        folder = Path(tmp)
        folder.chmod(0o755)  # the sandbox's user reads it (cadillac may run as root)
        judge, shots, verdict = folder / "judge", folder / "out", folder / "verdict"
        judge.mkdir(mode=0o755)
        shots.mkdir()
        verdict.mkdir()
        for source in (DRIVER, *JUDGE_FILES):
            shutil.copy(source, judge / source.name)
        (judge / "stories.json").write_text(stories.model_dump_json(by_alias=True), "utf-8")
        browsing = any(s.kind == "browser" for s in stories.stories)
        shown = browser.driver_paths() if browsing else None
        sites = shown.sys_path if shown else []
        key = new_key()
        key_file = hand_key(root, key, prefix=".")
        settings = {
            "stories": str(judge / "stories.json"),
            "key_file": str(key_file),
            "python": str(root / ".venv" / "bin" / "python"),
            "out": str(shots),
            "result": str(verdict / RESULT),
            "sites": [str(site) for site in sites],
        }
        (judge / "settings.json").write_text(json.dumps(settings), "utf-8")
        argv = [JUDGE_PYTHON, "-I", "-S", judge / DRIVER.name, judge / "settings.json"]
        try:
            result = ctx.run(
                shlex.join(map(str, argv)),
                timeout_s=time_of(stories),
                visible=[judge, *(shown.visible if shown else [])],
                writable=[shots, verdict],
            )
        finally:
            key_file.unlink(missing_ok=True)
        report = last_report(_result_file(verdict / RESULT), key) or last_report(result.output, key)
        named = {r.get("screenshot") for r in (report or {}).get("results", [])}
        saved = _keep_shots(shots, out_dir, {n for n in named if isinstance(n, str)})
    if report is None:
        why = f"{NO_RESULT}: {result.for_model()[-300:]}"
        return StoryReport(
            results=[
                StoryResult(name=s.name, kind=s.kind, passed=False, got=why)
                for s in stories.stories
            ]
        )
    return StoryReport(results=[_result(r, saved) for r in report.get("results", [])])


def _result_file(path: Path) -> str:
    """The driver's signed line, from the file it wrote ("" when there is none, or it is
    not a regular file under :data:`RESULT_BYTES`)."""
    try:
        return read_regular(path, RESULT_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _keep_shots(shots: Path, out_dir: Path | None, names: set[str]) -> dict[str, str]:
    """Copy the screenshots the signed report ``names`` (regular files of at most
    :data:`SHOT_BYTES`) into ``out_dir``: name -> where it is now. Whatever else the
    sandbox left in the folder (it is the project's to write) stays behind."""
    if out_dir is None:
        return {}
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    saved = {}
    for name in sorted(names):
        if "/" in name or name in ("", ".", ".."):
            continue
        try:
            data = read_regular(shots / name, SHOT_BYTES + 1)
        except OSError:
            continue
        if len(data) <= SHOT_BYTES:
            (out_dir / name).write_bytes(data)
            saved[name] = str(out_dir / name)
    return saved


def _result(raw: dict, saved: dict[str, str]) -> StoryResult:
    shot = raw.get("screenshot")
    return StoryResult(
        name=str(raw.get("name")),
        kind=str(raw.get("kind")),
        passed=raw.get("passed") is True,
        sent=str(raw.get("sent", "")),
        got=str(raw.get("got", "")),
        screenshot=saved.get(shot) if isinstance(shot, str) else None,
    )
