"""``cadillac memory`` and ``cadillac budgets``: the lesson memory and the phase budgets.

Each command resolves the home, opens the store it needs and prints either a rich table
for people or, with ``--json``, JSON for programs (the same fields as the records on
disk). How memory behaves (dedup, merges, recall, budgets) is decided by :mod:`memory`;
what this module decides is how a command line meets it:

* Text must be text. A ``--trigger`` or ``--fix`` that is empty or only white space is
  refused, and so is any text argument that is not valid UTF-8 (Python hands such argv
  bytes over as lone surrogates, ``'\\udce9'``, which no JSON file can hold): a usage
  error naming the argument (exit 2), before the home is looked at.
* Only ``memory add`` creates a missing home. A command that only reads, ``forget``, and
  any command that fails create nothing: a mistyped ``--home`` is not an empty memory.
* A read names what it read: the listings name the memory file, and a home without
  ``memory.jsonl`` (for ``budgets``: without ``phase_budgets.jsonl``) is said on stderr.
* A write that has begun is finished and reported. Once ``add`` or ``forget`` holds the
  memory's lock, Ctrl-C and SIGTERM are held back until the result is printed; one that
  came meanwhile is then said to have come too late, and the status is 0, for the change
  stands. A Ctrl-C while waiting for the lock still stops the command, nothing changed.
* A merge says what it kept and which of the new wording it dropped, and how to keep
  the new wording instead.
* ``memory`` with an option but no command (``memory --limit 2``) says to name the
  command first, instead of argparse's "invalid choice: '2'".
* A lesson is named by its id or a unique prefix of it, in any case, as git names
  commits (:func:`memory.store.named_by`), in ``show``, ``forget`` and ``restore``; a
  prefix that begins several ids is a usage error listing them. An id that names no
  lesson says where the lesson went when it went somewhere: merged into another (by a
  consolidation: which one), or retired.
* ``import`` puts the notes into the home scope (``--global``: each back into the
  scope it was exported from) and names every note and lesson it replaced, and where
  the replaced one is kept (:mod:`memory.markdown`).
"""

from __future__ import annotations

import argparse
import signal
import threading

from orchestrator.cli import notes, output
from orchestrator.cli.args import (
    UsageError,
    actions,
    checked_home,
    command,
    csv,
    folder,
    one_line,
    positive,
    unit,
    utf8,
    words,
)
from orchestrator.errors import CadillacError
from orchestrator.home import Home

LESSON_TYPES = ("error_pattern", "architecture", "tool_pattern", "dependency", "performance")
"""memory.LESSON_TYPES, repeated so that parsing a command line imports no pydantic."""
SCORER_NAMES = ("default", "seed", "build")
LOCK_POLL = 0.1
"""Seconds between looks at a Ctrl-C while a write waits for the memory's lock."""


# ---------------------------------------------------------------- argument types
def tag_list(value: str) -> list[str]:
    """An argparse type: comma-separated tags, in UTF-8."""
    return csv(utf8(value))


def one_tag(value: str) -> str:
    """An argparse type: one tag (blank is a mistake, not "any tag")."""
    value = utf8(value).strip()
    if not value:
        raise argparse.ArgumentTypeError("is empty: give a tag, e.g. flask (or leave it out)")
    return value


def lesson_id(value: str) -> str:
    """An argparse type: a lesson id as ``memory list`` shows it (blank is a mistake)."""
    value = utf8(value).strip()
    if not value:
        raise argparse.ArgumentTypeError("is empty: give a lesson id from 'cadillac memory list'")
    return value


# ---------------------------------------------------------------- parsers
def add_parsers(commands) -> None:
    memory = command(commands, "memory", "lessons learned from builds (memory.jsonl)")
    memory.set_defaults(run=memory_list, type=None, tag=None, polarity=None, limit=None)
    memory.set_defaults(json=False)
    sub = actions(memory, dest="memory_command")

    p = command(sub, "list", "list lessons", run=memory_list)
    p.add_argument("--type", choices=LESSON_TYPES)
    p.add_argument("--tag", type=one_tag, help="only lessons with this tag")
    p.add_argument("--polarity", choices=("do", "dont"))
    p.add_argument("--limit", type=positive, help="show at most N lessons")
    p.add_argument("--retired", action="store_true", help="the retired lessons instead")
    p.add_argument("--json", action="store_true", help="print a JSON array")

    p = command(sub, "show", "show a lesson (by id) or a note (by name)", run=memory_show)
    p.add_argument("id", type=lesson_id, metavar="ID_OR_NAME")
    p.add_argument("--json", action="store_true")

    p = command(sub, "add", "add a lesson by hand", run=memory_add)
    p.add_argument("--type", required=True, choices=LESSON_TYPES)
    p.add_argument("--trigger", required=True, type=one_line, help="the situation, in one line")
    p.add_argument(
        "--fix", required=True, type=words, help="what to do (with --dont: what never to do)"
    )
    p.add_argument("--dont", action="store_true", help="an anti-pattern (polarity dont)")
    p.add_argument(
        "--tags", type=tag_list, help="comma-separated (default: inferred from the text)"
    )
    p.add_argument("--confidence", type=unit, default=0.5, help="0..1 (default 0.5)")
    p.add_argument("--source-task", type=utf8, default="", help="the task it was learned on")
    p.add_argument("--json", action="store_true")

    p = command(sub, "forget", "delete a lesson (by id) or a note (by name)", run=memory_forget)
    p.add_argument("id", type=lesson_id, metavar="ID_OR_NAME")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--note", action="store_true", help="forget the note of that name")
    which.add_argument("--lesson", action="store_true", help="forget the lesson of that id")
    p.add_argument("--global", dest="global_", action="store_true", help="the global scope's note")

    notes.add_parsers(sub)

    p = command(sub, "export", "write lessons and notes as markdown files", run=memory_export)
    p.add_argument("--markdown", required=True, type=folder, metavar="DIR")

    p = command(sub, "import", "read a markdown export back", run=memory_import)
    p.add_argument("src", type=folder, metavar="DIR")
    p.add_argument(
        "--global",
        dest="global_",
        action="store_true",
        help="the export's global notes into the global scope (default: all into the home's)",
    )
    p.add_argument("--json", action="store_true")

    p = command(sub, "recall", "the lessons a build of TASK would see", run=memory_recall)
    p.add_argument("task", type=utf8)
    p.add_argument("--limit", type=positive, default=10)
    p.add_argument("--explain", action="store_true", help="show each score's parts and layers")
    p.add_argument("--scorer", choices=SCORER_NAMES, default="default")
    p.add_argument("--json", action="store_true")

    p = command(sub, "stats", "counts, reuse and confidence", run=memory_stats)
    p.add_argument("--json", action="store_true")

    p = command(
        sub,
        "consolidate",
        "merge near-duplicate lessons and retire those that keep backfiring",
        run=memory_consolidate,
    )
    p.add_argument("--dry-run", action="store_true", help="say what it would do; write nothing")
    p.add_argument("--json", action="store_true")

    p = command(sub, "restore", "bring a retired lesson back", run=memory_restore)
    p.add_argument("id", type=lesson_id)

    command(sub, "path", "print the memory file's path", run=memory_path)

    p = command(
        commands,
        "budgets",
        "phase budgets learned from history (phase_budgets.jsonl)",
        run=budgets,
    )
    p.add_argument("--tags", type=tag_list, default=[], help="task tags, e.g. python,flask")
    p.add_argument("--json", action="store_true")
    p.add_argument("--path", action="store_true", help="print the history file's path")


# ---------------------------------------------------------------- the home and its store
def _store(args: argparse.Namespace, write: bool = False, create: bool = False, note: bool = False):
    """The home and its store; ``note``: say on stderr when the home has no memory yet."""
    from memory import MemoryStore

    home = checked_home(args, write, create)
    if note and not home.memory_path.exists():
        output.warn(
            f"{home.root} has no memory.jsonl: no lessons yet"
            " (builds and 'cadillac memory add' write it)"
        )
    return home, MemoryStore(home.memory_path)


class _Commit:
    """A write that, once begun, is finished and reported (see the module docstring).

    ``run`` takes the store's lock, watching for a Ctrl-C while it waits (nothing is
    changed yet: the command stops), then makes the change. From entering the block to
    leaving it Ctrl-C and SIGTERM are held back, so the caller prints its result inside
    the block; one that came is then reported as too late, with ``outcome``.
    """

    def __init__(self, store):
        self.store = store
        self.caught: list[int] = []
        self.outcome = "stored"
        self._saved: dict[int, object] = {}

    def __enter__(self) -> _Commit:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._saved[signum] = signal.signal(signum, self._hold)
        return self

    def _hold(self, signum, frame) -> None:
        self.caught.append(signum)

    def run(self, change, *args):
        from filelock import Timeout

        lock = self.store.file.lock
        while True:
            if self.caught:
                raise KeyboardInterrupt  # still waiting for the lock: nothing was changed
            try:
                lock.acquire(timeout=LOCK_POLL)
                break
            except Timeout:
                continue
        try:
            return change(*args)
        finally:
            lock.release()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None and self.caught:
                output.warn(f"interrupted too late: the lesson is {self.outcome}")
        finally:
            for signum, handler in self._saved.items():
                signal.signal(signum, handler)


# ---------------------------------------------------------------- lessons
def _lesson_table(lessons):
    table = output.table(None, ())
    for name, kw in (
        ("id", {"no_wrap": True}),
        ("type", {}),
        ("pol", {}),
        ("conf", {"justify": "right"}),
        ("used", {"justify": "right"}),
        ("tags", {}),
        ("trigger", {"overflow": "fold"}),
    ):
        table.add_column(name, **kw)
    for lesson in lessons:
        table.add_row(
            lesson.id,
            lesson.type,
            lesson.polarity,
            f"{lesson.confidence:.2f}",
            str(lesson.used),
            ",".join(lesson.tags),
            output.short(lesson.trigger, 100),
        )
    return table


def _ambiguous(given: str, ids: list[str], more: str = "") -> UsageError:
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return UsageError(f"lesson id {given!r} is ambiguous: it begins {shown}{more}")


def _lesson(home: Home, store, given: str, required: bool = True):
    """The lesson ``given`` names (its id or a unique prefix, as git takes commits), or
    None when none does and it is not ``required``; an ambiguous prefix is exit 2."""
    found = store.find(given)
    if len(found) > 1:
        raise _ambiguous(given, [lesson.id for lesson in found])
    if found:
        return found[0]
    if required:
        raise _no_lesson(home, store, given)
    return None


def _no_lesson(home: Home, store, given: str) -> CadillacError:
    """No lesson has that id: say where it went, if it was merged away or retired."""
    from memory.consolidate import side_path
    from memory.jsonl import JsonlFile
    from memory.lesson import Lesson
    from memory.store import named_by

    if not store.path.exists():
        return CadillacError(f"no lesson with id {given!r}: {home.root} has no memory.jsonl")
    merged = JsonlFile(side_path(store.file, "merged"), Lesson)
    merged.refresh()
    into = {x.id: getattr(x, "merged_into", None) for x in merged.records}
    ids = named_by(into, given)
    if len(ids) == 1 and into[ids[0]]:
        kept = into[ids[0]]
        for _ in range(len(into)):  # a lesson merged into one merged later: the last one
            if store.get(kept) is not None or not into.get(kept):
                break
            kept = into[kept]
        return CadillacError(
            f"lesson {ids[0]} was merged into {kept} by a consolidation"
            f" (see 'cadillac memory show {kept}')"
        )
    ids = named_by([x.id for x in store.retired()], given)
    if len(ids) == 1:
        return CadillacError(
            f"lesson {ids[0]} is retired (see 'cadillac memory list --retired';"
            f" 'cadillac memory restore {ids[0]}' brings it back)"
        )
    return CadillacError(f"no lesson with id {given!r} (see 'cadillac memory list')")


def memory_list(args: argparse.Namespace) -> int:
    _, store = _store(args, note=True)
    lessons = store.retired() if getattr(args, "retired", False) else store.all()
    if args.type:
        lessons = [lesson for lesson in lessons if lesson.type == args.type]
    if args.tag:
        lessons = [lesson for lesson in lessons if args.tag.lower() in lesson.tags]
    if args.polarity:
        lessons = [lesson for lesson in lessons if lesson.polarity == args.polarity]
    if args.limit:
        lessons = lessons[: args.limit]
    if args.json:
        output.print_json([lesson.model_dump(mode="json") for lesson in lessons])
    else:
        where = "retired from" if getattr(args, "retired", False) else "in"
        output.line(f"{len(lessons)} lesson(s) {where} {store.path}")
        if lessons:
            output.out().print(_lesson_table(lessons))
    return 0


def memory_show(args: argparse.Namespace) -> int:
    home, store = _store(args)
    note = notes.named(home, args.id)
    lesson = _lesson(home, store, args.id, required=note is None)
    if args.json:
        shown = {"lesson": lesson, "note": note}
        dumps = {k: v.model_dump(mode="json") for k, v in shown.items() if v is not None}
        output.print_json(dumps if len(dumps) == 2 else next(iter(dumps.values())))
        return 0
    if lesson is not None:
        if note is not None:
            output.line(f"lesson {lesson.id}:")
        output.fields(lesson.model_dump(mode="json"))
    if note is not None:
        if lesson is not None:
            output.line(f"note {note.name} ({note.scope} scope):")
        notes.show(note)
    return 0


def memory_add(args: argparse.Namespace) -> int:
    from memory import Lesson, infer_tags_from_text
    from memory.dedup import dropped_by_merge

    trigger, fix = args.trigger.strip(), args.fix.strip()
    tags = args.tags if args.tags is not None else sorted(infer_tags_from_text(f"{trigger} {fix}"))
    lesson = Lesson(
        type=args.type,
        trigger=trigger,
        fix=fix,
        polarity="dont" if args.dont else "do",
        tags=tags,
        confidence=args.confidence,
        source_task=args.source_task,
    )
    _, store = _store(args, write=True, create=True)
    with _Commit(store) as commit:
        stored, merged = commit.run(store.add, lesson)
        dropped = dropped_by_merge(stored, lesson) if merged else {}
        if merged:
            commit.outcome = f"merged into {stored.id}"
        if args.json:
            made = {"merged": merged, "lesson": stored.model_dump(mode="json")}
            output.print_json({**made, "dropped": dropped} if merged else made)
        elif merged:
            _report_merge(stored, dropped)
        else:
            output.line(f"added {stored.id} (tags: {', '.join(stored.tags) or 'none'})")
    return 0


def _report_merge(stored, dropped: dict[str, str]) -> None:
    """What a merge kept, and what of the new lesson it dropped (see :mod:`memory.dedup`)."""
    output.line(f"merged into {stored.id}: {output.short(stored.trigger, 80)}")
    if not dropped:
        return
    output.line(f"  kept its fix: {output.short(stored.fix, 100)}")
    for name, text in dropped.items():
        output.line(f"  dropped your --{name}: {output.short(text, 100)}")
    output.line(
        f"  to keep yours instead: cadillac memory forget {stored.id}, then add it again"
        " (its confidence and uses go with it)"
    )


def memory_forget(args: argparse.Namespace) -> int:
    if args.note or args.global_:
        return notes.forget(args)
    home, store = _store(args, write=True)
    note = None if args.lesson else notes.named(home, args.id, "home")
    lesson = _lesson(home, store, args.id, required=False)
    if lesson is None and note is not None:
        return notes.forget(args)
    if lesson is None:
        if not args.lesson:
            notes.refuse_global_only(home, args.id, "forget")
        raise _no_lesson(home, store, args.id)
    if note is not None and lesson.id.lower() != args.id.lower():
        raise UsageError(
            f"{args.id!r} is note {note.name}'s name and begins lesson {lesson.id}'s id:"
            " say --note or --lesson"
        )
    _forget_lesson(home, store, lesson.id)
    if note is not None:
        output.line(
            f"kept note {note.name!r} ({note.scope} scope), which has the same name:"
            f" remove it with 'cadillac memory forget {note.name} --note'"
        )
    return 0


def memory_consolidate(args: argparse.Namespace) -> int:
    _, store = _store(args, write=not args.dry_run, note=True)
    with _Commit(store) as commit:
        commit.outcome = "consolidated"
        report = commit.run(store.consolidate, None, args.dry_run)
        if args.json:
            output.print_json(report.model_dump(mode="json"))
            return 0
        output.line(report.line())
        for kept, merged in report.merged:
            output.line(f"  {kept} <- {', '.join(merged)}")
        if report.retired:
            output.line(
                f"  retired: {', '.join(report.retired)} (see 'cadillac memory list --retired')"
            )
    return 0


def memory_restore(args: argparse.Namespace) -> int:
    from memory import LessonNotFound
    from memory.store import named_by

    home, store = _store(args, write=True)
    ids = list(dict.fromkeys(named_by([x.id for x in store.retired()], args.id)))
    if len(ids) > 1:
        raise _ambiguous(args.id, ids, " (retired lessons)")
    live = _lesson(home, store, args.id, required=False) if not ids else None
    if live is not None:
        raise CadillacError(
            f"no retired lesson with id {args.id!r}: lesson {live.id} is in use ({store.path})"
        )
    with _Commit(store) as commit:
        commit.outcome = "restored"
        try:
            lesson = commit.run(store.restore, ids[0] if ids else args.id)
        except LessonNotFound:
            message = (
                f"no retired lesson with id {args.id!r} (see 'cadillac memory list --retired')"
            )
            raise CadillacError(message) from None
        output.line(
            f"restored {lesson.id} at confidence {lesson.confidence:g}: "
            f"{output.short(lesson.trigger, 80)}"
        )
    return 0


def _forget_lesson(home: Home, store, lesson_id: str) -> None:
    from memory import LessonNotFound

    with _Commit(store) as commit:
        try:
            lesson = commit.run(store.forget, lesson_id)
        except LessonNotFound:  # another process forgot it since it was read
            message = f"no lesson with id {lesson_id!r} (see 'cadillac memory list')"
            raise CadillacError(message) from None
        commit.outcome = "forgotten"
        output.line(f"forgot {lesson.id}: {output.short(lesson.trigger, 80)}")


def _recall_table(recalled, explain: bool):
    table = output.table(None, ("#", "id", "score"), right=("#", "score"))
    table.columns[1].no_wrap = True
    if explain:
        for name in ("relev", "recency", "conf", "usage", "stack", "prior", "÷"):
            table.add_column(name, justify="right")
        table.add_column("layers")
    table.add_column("lesson", overflow="fold")
    for rank, r in enumerate(recalled, 1):
        lesson = r.lesson
        marker = "NEVER: " if lesson.polarity == "dont" else ""
        text = f"{marker}{output.short(lesson.trigger, 60)}"
        if not explain:
            text += f" -> {output.short(lesson.fix, 60)}"
        row = [str(rank), lesson.id, f"{r.score:.3f}"]
        if explain:
            p = r.parts
            row += [f"{p.relevance:.3f}", f"{p.recency:.3f}", f"{p.confidence:.2f}"]
            row += [f"{p.usage:.2f}", f"{p.stack:.2f}", f"{p.prior:.2f}", f"{p.penalty:g}"]
            row += ["; ".join(p.penalties) or "-"]
        table.add_row(*row, text)
    return table


def memory_recall(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise CadillacError("the task is empty: say what is to be built")
    _, store = _store(args, note=True)
    recalled = store.recall(args.task, limit=args.limit, scorer=args.scorer)
    if args.json:
        output.print_json([r.model_dump(mode="json") for r in recalled])
        return 0
    output.line(
        f"{len(recalled)} lesson(s) for this task from {store.path} (scorer: {args.scorer})"
    )
    if recalled:
        output.out().print(_recall_table(recalled, args.explain))
    return 0


def memory_stats(args: argparse.Namespace) -> int:
    _, store = _store(args, note=True)
    stats = store.stats()
    if args.json:
        output.print_json(stats.model_dump(mode="json"))
        return 0
    output.line(stats.headline())
    output.line(f"from {store.path}")
    if not stats.count:
        return 0
    columns = ("type", "lessons", "do", "dont", "used > 0", "avg conf")
    table = output.table(None, columns, right=columns[1:])
    lessons = store.all()
    for kind, count in stats.by_type.items():
        group = [lesson for lesson in lessons if lesson.type == kind]
        table.add_row(
            kind,
            str(count),
            str(sum(1 for x in group if x.polarity == "do")),
            str(sum(1 for x in group if x.polarity == "dont")),
            f"{sum(1 for x in group if x.used > 0) / count:.0%}",
            f"{sum(x.confidence for x in group) / count:.3f}",
        )
    output.out().print(table)
    return 0


def memory_path(args: argparse.Namespace) -> int:
    print(Home.resolve(getattr(args, "home", None)).memory_path)
    return 0


# ---------------------------------------------------------------- notes
def memory_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memory.markdown import export_markdown

    home, store = _store(args)
    with notes.NoteErrors():
        report = export_markdown(store, notes.notebook_of(home), Path(args.markdown).absolute())
    output.line(report.headline())
    return 0


def memory_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memory.markdown import import_markdown

    home, store = _store(args, write=True, create=True)
    with notes.NoteErrors():
        scope = None if args.global_ else "home"  # --global: each note to its own scope
        src = Path(args.src).absolute()
        report = import_markdown(store, notes.notebook_of(home), src, scope)
    if args.json:
        output.print_json(report.model_dump(mode="json"))
        return 0
    for problem in report.problems:
        output.warn(f"skipped {problem}")
    for notice in report.notices:
        output.warn(notice)
    output.line(report.headline())
    if report.replaced_lessons:
        ids = report.replaced_lessons
        more = f" and {len(ids) - 10} more" if len(ids) > 10 else ""
        output.line(
            f"  replaced lesson(s) {', '.join(ids[:10])}{more}:"
            f" the old ones are kept in {report.lessons_kept}"
        )
    for replaced in report.replaced:
        output.line(f"  {replaced.said()}")
    return 0


def budgets(args: argparse.Namespace) -> int:
    if args.path:
        print(Home.resolve(getattr(args, "home", None)).budgets_path)
        return 0
    from memory import PhaseBudgets
    from phases import DEFAULT_ROUNDS

    home = checked_home(args)
    if not home.budgets_path.exists():
        output.warn(f"{home.root} has no phase_budgets.jsonl: every phase gets its default")
    history = PhaseBudgets(home.budgets_path, DEFAULT_ROUNDS)
    result = history.compute_budgets(args.tags)
    if args.json:
        output.print_json({phase: b.model_dump(mode="json") for phase, b in result.items()})
        return 0
    output.line(
        f"phase budgets for tags: {', '.join(args.tags) or 'none'}, from {home.budgets_path}"
    )
    columns = ("phase", "default", "samples", "p90", "budget", "reason", "rows used")
    table = output.table(None, columns, right=columns[1:5])
    for phase, b in result.items():
        p90 = "-" if b.p90 is None else f"{b.p90:g}"
        row = (str(b.default), str(b.samples), p90, str(b.rounds), b.reason, b.sources())
        table.add_row(phase, *row)
    output.out().print(table)
    return 0
