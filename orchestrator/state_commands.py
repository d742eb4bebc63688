"""The ``cadillac memory`` and ``cadillac budgets`` commands.

Each command resolves the home, opens the store it needs and prints either a
rich table for people or, with ``--json``, JSON for programs (the same fields
as the records on disk). Nothing here decides behaviour; :mod:`memory` does.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console
from rich.table import Table

from memory import Lesson, MemoryStore, PhaseBudgets, infer_tags_from_text
from memory.recall import Recalled
from orchestrator.errors import CadillacError
from orchestrator.home import Home

# Piped output gets a wide table instead of rich's 80-column default.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)


def _home(args: argparse.Namespace, write: bool = False) -> Home:
    return Home.resolve(getattr(args, "home", None)).check(write=write)


def _store(args: argparse.Namespace, write: bool = False) -> MemoryStore:
    return MemoryStore(_home(args, write).memory_path)


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _lesson_table(lessons: list[Lesson], title: str) -> Table:
    table = Table(title=title, title_justify="left")
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
            _short(lesson.trigger, 100),
        )
    return table


def _get(store: MemoryStore, lesson_id: str) -> Lesson:
    lesson = store.get(lesson_id)
    if lesson is None:
        raise CadillacError(f"no lesson with id {lesson_id!r} (see 'cadillac memory list')")
    return lesson


def memory_list(args: argparse.Namespace) -> int:
    lessons = _store(args).all()
    if args.type:
        lessons = [lesson for lesson in lessons if lesson.type == args.type]
    if args.tag:
        lessons = [lesson for lesson in lessons if args.tag.lower() in lesson.tags]
    if args.polarity:
        lessons = [lesson for lesson in lessons if lesson.polarity == args.polarity]
    if args.limit:
        lessons = lessons[: args.limit]
    if args.json:
        _print_json([lesson.model_dump(mode="json") for lesson in lessons])
    else:
        console.print(_lesson_table(lessons, f"{len(lessons)} lesson(s)"))
    return 0


def memory_show(args: argparse.Namespace) -> int:
    lesson = _get(_store(args), args.id)
    if args.json:
        _print_json(lesson.model_dump(mode="json"))
        return 0
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in lesson.model_dump(mode="json").items():
        table.add_row(key, ", ".join(value) if isinstance(value, list) else str(value))
    console.print(table)
    return 0


def memory_add(args: argparse.Namespace) -> int:
    tags = (
        args.tags
        if args.tags is not None
        else sorted(infer_tags_from_text(f"{args.trigger} {args.fix}"))
    )
    lesson = Lesson(
        type=args.type,
        trigger=args.trigger.strip(),
        fix=args.fix.strip(),
        polarity="dont" if args.dont else "do",
        tags=tags,
        confidence=args.confidence,
        source_task=args.source_task,
    )
    store = _store(args, write=True)
    stored, merged = store.add(lesson)
    if args.json:
        _print_json({"merged": merged, "lesson": stored.model_dump(mode="json")})
    elif merged:
        console.print(f"merged into {stored.id}: {_short(stored.trigger, 80)}")
    else:
        console.print(f"added {stored.id} (tags: {', '.join(stored.tags) or 'none'})")
    return 0


def memory_forget(args: argparse.Namespace) -> int:
    store = _store(args, write=True)
    _get(store, args.id)
    lesson = store.forget(args.id)
    console.print(f"forgot {lesson.id}: {_short(lesson.trigger, 80)}")
    return 0


def _recall_table(recalled: list[Recalled], explain: bool, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("id", no_wrap=True)
    table.add_column("score", justify="right")
    if explain:
        for name in ("relev", "recency", "conf", "usage", "stack", "÷"):
            table.add_column(name, justify="right")
        table.add_column("layers")
    table.add_column("lesson", overflow="fold")
    for rank, r in enumerate(recalled, 1):
        lesson = r.lesson
        marker = "NEVER: " if lesson.polarity == "dont" else ""
        text = f"{marker}{_short(lesson.trigger, 60)}"
        if not explain:
            text += f" -> {_short(lesson.fix, 60)}"
        row = [str(rank), lesson.id, f"{r.score:.3f}"]
        if explain:
            p = r.parts
            row += [f"{p.relevance:.3f}", f"{p.recency:.3f}", f"{p.confidence:.2f}"]
            row += [f"{p.usage:.2f}", f"{p.stack:.2f}", f"{p.penalty:g}"]
            row += ["; ".join(p.penalties) or "-"]
        table.add_row(*row, text)
    return table


def memory_recall(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise CadillacError("the task is empty: say what is to be built")
    recalled = _store(args).recall(args.task, limit=args.limit, scorer=args.scorer)
    if args.json:
        _print_json([r.model_dump(mode="json") for r in recalled])
        return 0
    title = f"{len(recalled)} lesson(s) for this task (scorer: {args.scorer})"
    console.print(_recall_table(recalled, args.explain, title))
    return 0


def memory_stats(args: argparse.Namespace) -> int:
    store = _store(args)
    stats = store.stats()
    if args.json:
        _print_json(stats.model_dump(mode="json"))
        return 0
    console.print(stats.headline())
    table = Table()
    for name in ("type", "lessons", "do", "dont", "used > 0", "avg conf"):
        table.add_column(name, justify="left" if name == "type" else "right")
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
    console.print(table)
    return 0


def memory_path(args: argparse.Namespace) -> int:
    print(Home.resolve(getattr(args, "home", None)).memory_path)
    return 0


def budgets(args: argparse.Namespace) -> int:
    if args.path:
        print(Home.resolve(getattr(args, "home", None)).budgets_path)
        return 0
    history = PhaseBudgets(_home(args).budgets_path)
    result = history.compute_budgets(args.tags)
    if args.json:
        _print_json({phase: b.model_dump(mode="json") for phase, b in result.items()})
        return 0
    tags = ", ".join(args.tags) or "none"
    table = Table(title=f"phase budgets for tags: {tags}", title_justify="left")
    for name in ("phase", "default", "samples", "p90", "budget", "reason"):
        table.add_column(name, justify="left" if name in ("phase", "reason") else "right")
    for phase, b in result.items():
        p90 = "-" if b.p90 is None else f"{b.p90:g}"
        table.add_row(phase, str(b.default), str(b.samples), p90, str(b.rounds), b.reason)
    console.print(table)
    return 0
