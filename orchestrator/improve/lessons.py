"""The improve cycle's memory of itself: what moved the score, and what was rejected.

What the improver reads of a rejection (the cycle's list of attempts already rejected,
and the ``dont`` lessons) is :func:`told`: the decision's reason, except that the holdout
is named only for having vetoed, never by how much or on which task (the holdout stays
held out: a patch shaped to its numbers would be fitted to it).

These lessons are about cadillac, not about building projects, so they live apart from
the build lessons, in ``self_memory.jsonl`` (:attr:`~orchestrator.home.Home.self_memory_path`),
and only the improver is shown them: a build never recalls them, so a candidate's builds
never see a lesson the baseline's did not. Lessons tagged ``self`` that earlier versions
wrote into ``memory.jsonl`` are still read for the improver (and build recall leaves them
out by their tag).
"""

from __future__ import annotations

from memory import Lesson, MemoryStore
from orchestrator.home import Home
from orchestrator.improve.records import IterationRecord
from orchestrator.improve.weaknesses import Weakness

SELF_TAGS = ["cadillac", "self"]
SOURCE = "cadillac improve cycle"
VETOED = (
    "the holdout vetoed it: the held-out tasks did credibly worse with the patch, so it "
    "would not generalise"
)


def _redacted(fix: str) -> str:
    """A lesson's fix as the improver is shown it: one that earlier versions wrote with the
    holdout's figures ("... train delta +0.3: confirm: the holdout fell by ...") says only
    that the holdout vetoed."""
    if "holdout" not in fix.lower() or VETOED in fix:
        return fix
    head, sep, _ = fix.partition(": ")
    return f"{head}: {VETOED}" if sep else VETOED


def told(record: IterationRecord) -> str:
    """Why a patch was rejected, as the improver may read it: the reason, or, when the
    decision's reason spoke of the holdout (a rejection does only to veto), only that the
    holdout vetoed."""
    last = record.stages[-1] if record.stages else None
    if last is not None and record.reason == last.reason and "holdout" in last.reason.lower():
        return VETOED
    return record.reason


class SelfLessons:
    def __init__(self, home: Home):
        self.store = MemoryStore(home.self_memory_path)
        self.legacy = MemoryStore(home.memory_path) if home.memory_path.is_file() else None

    def _all(self) -> list[Lesson]:
        old = self.legacy.all() if self.legacy is not None else []
        return [*self.store.all(), *(x for x in old if "self" in x.tags)]

    def for_improver(self, weakness: Weakness) -> list[str]:
        """What moved the score before and what did not, most relevant to ``weakness`` first."""
        query = f"cadillac improve weakness {weakness.signature} {' '.join(weakness.targets)}"
        found = [r.lesson for r in self.store.recall(query, limit=20)]
        if self.legacy is not None:
            found += [
                r.lesson for r in self.legacy.recall(query, limit=20) if "self" in r.lesson.tags
            ]
        out = []
        for lesson in found:
            verb = "NEVER" if lesson.polarity == "dont" else "worked"
            out.append(f"{verb}: {lesson.trigger} -> {_redacted(lesson.fix)}")
        return list(dict.fromkeys(out))[:10]

    def rejected_for(self, weakness: Weakness) -> list[str]:
        return [
            f"{x.trigger} -> {_redacted(x.fix)}"
            for x in self._all()
            if x.polarity == "dont" and weakness.id in x.trigger
        ]

    def kept(self, weakness: Weakness, target: str, lift: float, i: int, reason: str) -> None:
        self.store.save(
            Lesson(
                type="architecture",
                trigger=f"weakness {weakness.id} in {target}",
                fix=f"matrix score improved by +{lift:.3f} on iter {i}: {reason}",
                confidence=0.6,
                polarity="do",
                tags=SELF_TAGS,
                source_task=SOURCE,
            )
        )

    def rejected(self, weakness: Weakness, reason: str, delta: str, why: str, i: int) -> None:
        self.store.save(
            Lesson(
                type="architecture",
                trigger=f"weakness {weakness.id}: {reason}"[:300],
                fix=f"rejected on iter {i}, train delta {delta}: {why}",
                confidence=0.5,
                polarity="dont",
                tags=SELF_TAGS,
                source_task=SOURCE,
            )
        )
