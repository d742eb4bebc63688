"""The model's read-only ``knowledge`` tool: the workspace's code index, and what this home
remembers of earlier runs.

A build's model can read files one at a time; what it cannot do cheaply is see a
project whole, or know what was tried before. The tool answers seven questions:

* ``digest``: the index's one-screen overview of the workspace;
* ``search``: symbols, paths and doc lines ranked for the query (BM25 over the index);
* ``symbol``: where a name is defined, its signature and the lines around it;
* ``related``: what a file imports, what imports it, its tests, what changes with it;
* ``tests``: the tests that cover a file or a symbol;
* ``episodes``: earlier runs in this home on similar tasks: outcome, the phase that
  failed and why, the files they made;
* ``rejected``: the ``dont`` lessons and the failed approaches recorded for similar tasks.

What this module decides, and why:

* It never writes anything the model can see, and never fails loudly: a missing,
  partial or stale index gives a best-effort answer that says what is missing. An
  exception here would cost the model a round for nothing.
* The index (``runs/<id>/index/``) is refreshed incrementally before every answer that
  reads it and after every phase, so ``search`` and ``symbol`` see what the model just
  wrote; refreshing costs little (unchanged files are reused by hash).
* Answers are capped like other tools' output (:data:`ANSWER_CHARS`). Every name in
  them that a model made (a path, a symbol, an earlier run's task, files and failed
  check, a lesson's words) is escaped whole (:func:`orchestrator.sandbox.shown.name`):
  one name is one line, and no control character reaches the model raw.
* The earlier runs and lessons are of this home only, and the current run is left out
  of its own episodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from memory import MemoryStore
from memory.tokens import terms
from orchestrator.index import CodeIndex, build_index
from orchestrator.loop.memory_view import rejected_lessons
from orchestrator.loop.runs import RunUnreadable, list_runs
from orchestrator.sandbox import shown
from orchestrator.sandbox.files import UnsafeFile, read_regular

ACTIONS = ("digest", "search", "symbol", "related", "tests", "episodes", "rejected")
ANSWER_CHARS = 8000
CONTEXT_LINES = 6
MAX_SOURCE_BYTES = 2 * 1024 * 1024


class Knowledge:
    """Answers the ``knowledge`` tool for one build."""

    def __init__(
        self,
        workspace: Path,
        index_dir: Path,
        runs_dir: Path,
        store: MemoryStore,
        task: str,
        run_id: str,
        on_error: Callable[[str], None] | None = None,
    ):
        self.workspace, self.index_dir, self.runs_dir = workspace, index_dir, runs_dir
        self.store, self.task, self.run_id = store, task, run_id
        self.on_error = on_error or (lambda message: None)
        self.problem = ""
        """Why the last refresh failed ("" when it did not)."""
        self.refreshes = 0
        """How many times the index was brought up to date in this build (0: never yet)."""

    def refresh(self) -> CodeIndex:
        """Bring the index up to date with the workspace (fail-open) and load it."""
        self.refreshes += 1
        try:
            build_index(self.workspace, self.index_dir)
            self.problem = ""
        except Exception as exc:  # the model's tree may hold anything: never fail the build
            self.problem = f"the index could not be refreshed ({type(exc).__name__}: {exc})"
            self.on_error(self.problem)
        return CodeIndex.load(self.index_dir)

    def latest(self) -> CodeIndex:
        """The index as the last refresh left it: between phases nothing else writes to the
        workspace, so a phase's opening prompt need not index again what the end of the
        last phase just indexed (the first phase refreshes, as nothing has yet)."""
        return self.refresh() if not self.refreshes else CodeIndex.load(self.index_dir)

    def answer(self, action: str, query: str) -> str:
        query = query.strip()
        handler = getattr(self, f"_{action}", None)
        if action not in ACTIONS or handler is None:
            return f"unknown action {action!r}; the actions are: {', '.join(ACTIONS)}"
        try:
            text = handler(query)
        except Exception as exc:  # fail open: say what went wrong, in one line
            text = f"knowledge {action} could not answer: {type(exc).__name__}: {exc}"
            self.on_error(text)
        return _cap(text)

    # ------------------------------------------------------------------ the code index
    def _index(self) -> tuple[CodeIndex, str]:
        index = self.refresh()
        notes = [p for p in [self.problem, *index.problems] if p]
        return index, ("\n(note: " + "; ".join(notes) + ")" if notes else "")

    def _digest(self, query: str) -> str:
        index, note = self._index()
        return (index.digest or "(the index has no digest yet)") + note

    def _search(self, query: str) -> str:
        if not query:
            return "search needs a query: words, a name, or part of a path"
        index, note = self._index()
        hits = index.search(query, limit=12)
        if not hits:
            return f"nothing in the index matches {query!r}{note}"
        lines = []
        for hit in hits:
            record = hit.record
            if hit.kind == "symbol":
                doc = f" — {record.doc}" if record.doc else ""
                lines.append(
                    f"{shown.name(record.path)}:{record.start_line} {record.kind} "
                    f"{shown.name(_qualified(record))} {shown.name(record.signature)}{doc}"
                )
            else:
                lines.append(f"{shown.name(record.path)} ({record.language}, {record.lines} lines)")
        return "\n".join(lines) + note

    def _symbol(self, query: str) -> str:
        if not query:
            return "symbol needs a name, e.g. 'Ledger.deposit' or 'parse_args'"
        index, note = self._index()
        found = index.symbol(query)
        if not found:
            return f"no symbol named {query!r} in the index{note}"
        parts = []
        for symbol in found[:5]:
            head = f"{shown.name(symbol.path)}:{symbol.start_line}-{symbol.end_line} {symbol.kind} "
            head += f"{shown.name(_qualified(symbol))}\n{shown.name(symbol.signature)}"
            if symbol.doc:
                head += f"\n{symbol.doc}"
            parts.append(head + "\n" + self._lines(symbol.path, symbol.start_line))
        more = f"\n({len(found) - 5} more)" if len(found) > 5 else ""
        return "\n\n".join(parts) + more + note

    def _lines(self, path: str, line: int) -> str:
        try:
            text = read_regular(self.workspace / path, MAX_SOURCE_BYTES).decode("utf-8", "replace")
        except (UnsafeFile, OSError):
            return "(the file cannot be read now)"
        rows = text.splitlines()
        start, end = max(0, line - 1), min(len(rows), line - 1 + CONTEXT_LINES * 2)
        return "\n".join(f"{n + 1:5d}  {rows[n]}" for n in range(start, end))

    def _related(self, query: str) -> str:
        if not query:
            return "related needs a file path relative to the workspace"
        index, note = self._index()
        r = index.related(query)
        sections = [
            ("imports", r.imports),
            ("imported by", r.imported_by),
            ("tests", r.tests),
            ("changes with", r.cochanged),
        ]
        lines = [
            f"{title}: " + (", ".join(shown.name(p) for p, _ in items[:15]) if items else "none")
            for title, items in sections
        ]
        if not any(items for _, items in sections):
            lines.insert(0, f"nothing is recorded about {query!r}")
        return "\n".join(lines) + note

    def _tests(self, query: str) -> str:
        if not query:
            return "tests needs a file path or a symbol name"
        index, note = self._index()
        found = index.tests_for(query)
        if not found:
            return f"no test file is known to cover {query!r}{note}"
        return "\n".join(map(shown.name, found[:30])) + note

    # ------------------------------------------------------------------ this home's past
    def _similar_runs(self, query: str) -> list[tuple[float, object, object]]:
        wanted = set(terms(query or self.task))
        scored = []
        for run in list_runs(self.runs_dir):
            if run.id == self.run_id:
                continue
            try:
                task, summary = run.task(), run.summary()
            except RunUnreadable:
                continue
            if summary is None:
                continue
            theirs = set(terms(task.task))
            overlap = len(wanted & theirs)
            if overlap:
                scored.append((overlap / math.sqrt(len(theirs) or 1), task, summary))
        return sorted(scored, key=lambda s: -s[0])

    def _episodes(self, query: str) -> str:
        similar = self._similar_runs(query)[:5]
        if not similar:
            return "no earlier run in this home had a similar task"
        lines = []
        for _, task, s in similar:
            failed = next((p for p in s.phases if p.outcome != "passed"), None)
            why = ""
            if failed:
                why = f"; failed at {shown.name(failed.phase)}: {shown.name(failed.check[:200])}"
            files = ", ".join(map(shown.name, s.files[:12]))
            files += " ..." if len(s.files) > 12 else ""
            head = f"run {shown.name(s.run_id)} ({shown.name(s.status)})"
            lines.append(f"{head}: {shown.name(task.task[:160])}{why}\n  files: {files or 'none'}")
        return "\n".join(lines)

    def _rejected(self, query: str) -> str:
        lessons = rejected_lessons(self.store, query or self.task)
        failures = [
            (s.run_id, p.phase, p.check)
            for _, _, s in self._similar_runs(query)[:8]
            for p in s.phases
            if p.outcome != "passed"
        ][:6]
        if not lessons and not failures:
            return "nothing rejected is recorded for a similar task"
        lines = [f"don't: {shown.name(x.trigger)} — {shown.name(x.fix)}" for x in lessons]
        lines += [
            f"failed in run {shown.name(run)} at {shown.name(phase)}: {shown.name(check[:200])}"
            for run, phase, check in failures
        ]
        return "\n".join(lines)


def _qualified(symbol) -> str:
    return f"{symbol.parent}.{symbol.name}" if symbol.parent else symbol.name


def _cap(text: str) -> str:
    if len(text) <= ANSWER_CHARS:
        return text
    return text[: ANSWER_CHARS - 40] + f"\n[... {len(text) - ANSWER_CHARS + 40} chars cut]"
