"""Re-record the demo session: run the scripted builder for real and keep the model's turns.

    .venv/bin/python examples/wordfreq/record.py

Builds the demo task in a temporary home seeded with the bundled lesson corpus
(as `make demo` is), with the hand-written policy in policy.py as the model,
and writes the responses of its llm.jsonl to session.llm.jsonl (requests are
dropped: a replay needs only the answers); then iterates on the result with
iterate_policy (the --min-length change) and keeps that session as
iterate.llm.jsonl. Run it again whenever a change to the phases or tools changes
what a build asks of the model.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from policy import ITERATE, TASK, iterate_policy, policy  # noqa: E402

from orchestrator.home import Home  # noqa: E402
from orchestrator.llm.backends import register_script  # noqa: E402
from orchestrator.llm.client import LLMConfig  # noqa: E402
from orchestrator.loop.agent import BuildConfig, Builder  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "cadillac_corpus"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp))
        shutil.copy(CORPUS / "lessons.jsonl", home.memory_path)
        shutil.copy(CORPUS / "budget_history.jsonl", home.budgets_path)
        model = register_script("wordfreq", policy)
        builder = Builder.start(home, BuildConfig(llm=LLMConfig(model=model)), TASK)
        summary = builder.build()
        if summary.status != "passed":
            raise SystemExit(f"the scripted build did not pass: {summary.reason}")
        _keep(builder.run.llm_path, HERE / "session.llm.jsonl", summary.llm_calls)
        model = register_script("wordfreq-iterate", iterate_policy)
        config = BuildConfig(llm=LLMConfig(model=model))
        child = Builder.enhance(home, config, ITERATE, builder.run.workspace, parent=builder.run.id)
        summary = child.build()
        if summary.status != "passed":
            raise SystemExit(f"the scripted iterate did not pass: {summary.reason}")
        _keep(child.run.llm_path, HERE / "iterate.llm.jsonl", summary.llm_calls)


def _keep(log: Path, out: Path, calls: int) -> None:
    """The responses of a run's llm.jsonl (a replay needs only the answers)."""
    with out.open("w") as fh:
        for line in log.read_text().splitlines():
            record = json.loads(line)
            record.pop("request", None)
            fh.write(json.dumps(record) + "\n")
    print(f"recorded {calls} responses to {out}")


if __name__ == "__main__":
    main()
