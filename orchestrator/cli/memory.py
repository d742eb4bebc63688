"""``cadillac memory`` and ``cadillac budgets``: the lesson memory and the phase budgets.

Each command resolves the home, opens the store it needs and prints either a rich table
for people or, with ``--json``, JSON for programs (the same fields as the records on
disk). Nothing here decides behaviour; :mod:`memory` does.
"""

from __future__ import annotations

import argparse

from orchestrator.cli import output
from orchestrator.cli.args import actions, command, csv, positive, unit
from orchestrator.errors import CadillacError
from orchestrator.home import Home

LESSON_TYPES = ("error_pattern", "architecture", "tool_pattern", "dependency", "performance")
"""memory.LESSON_TYPES, repeated so that parsing a command line imports no pydantic."""
SCORER_NAMES = ("default", "seed")


def add_parsers(commands) -> None:
    memory = command(commands, "memory", "lessons learned from builds (memory.jsonl)")
    memory.set_defaults(run=memory_list, type=None, tag=None, polarity=None, limit=None)
    memory.set_defaults(json=False)
    sub = actions(memory, dest="memory_command")

    p = command(sub, "list", "list lessons", run=memory_list)
    p.add_argument("--type", choices=LESSON_TYPES)
    p.add_argument("--tag", help="only lessons with this tag")
    p.add_argument("--polarity", choices=("do", "dont"))
    p.add_argument("--limit", type=positive, help="show at most N lessons")
    p.add_argument("--json", action="store_true", help="print a JSON array")

    p = command(sub, "show", "show one lesson", run=memory_show)
    p.add_argument("id")
    p.add_argument("--json", action="store_true")

    p = command(sub, "add", "add a lesson by hand", run=memory_add)
    p.add_argument("--type", required=True, choices=LESSON_TYPES)
    p.add_argument("--trigger", required=True, help="the situation, in one line")
    p.add_argument("--fix", required=True, help="what to do (with --dont: what never to do)")
    p.add_argument("--dont", action="store_true", help="an anti-pattern (polarity dont)")
    p.add_argument("--tags", type=csv, help="comma-separated (default: inferred from the text)")
    p.add_argument("--confidence", type=unit, default=0.5, help="0..1 (default 0.5)")
    p.add_argument("--source-task", default="", help="the task it was learned on")
    p.add_argument("--json", action="store_true")

    p = command(sub, "forget", "delete a lesson", run=memory_forget)
    p.add_argument("id")

    p = command(sub, "recall", "the lessons a build of TASK would see", run=memory_recall)
    p.add_argument("task")
    p.add_argument("--limit", type=positive, default=10)
    p.add_argument("--explain", action="store_true", help="show each score's parts and layers")
    p.add_argument("--scorer", choices=SCORER_NAMES, default="default")
    p.add_argument("--json", action="store_true")

    p = command(sub, "stats", "counts, reuse and confidence", run=memory_stats)
    p.add_argument("--json", action="store_true")

    command(sub, "path", "print the memory file's path", run=memory_path)

    p = command(
        commands,
        "budgets",
        "phase budgets learned from history (phase_budgets.jsonl)",
        run=budgets,
    )
    p.add_argument("--tags", type=csv, default=[], help="task tags, e.g. python,flask")
    p.add_argument("--json", action="store_true")
    p.add_argument("--path", action="store_true", help="print the history file's path")


def _home(args: argparse.Namespace, write: bool = False) -> Home:
    return Home.resolve(getattr(args, "home", None)).check(write=write)


def _store(args: argparse.Namespace, write: bool = False):
    from memory import MemoryStore

    return MemoryStore(_home(args, write).memory_path)


def _lesson_table(lessons, title: str):
    table = output.table(title, ())
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


def _get(store, lesson_id: str):
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
        output.print_json([lesson.model_dump(mode="json") for lesson in lessons])
    else:
        output.out().print(_lesson_table(lessons, f"{len(lessons)} lesson(s)"))
    return 0


def memory_show(args: argparse.Namespace) -> int:
    lesson = _get(_store(args), args.id)
    if args.json:
        output.print_json(lesson.model_dump(mode="json"))
        return 0
    table = output.table(None, (), show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in lesson.model_dump(mode="json").items():
        table.add_row(key, ", ".join(value) if isinstance(value, list) else str(value))
    output.out().print(table)
    return 0


def memory_add(args: argparse.Namespace) -> int:
    from memory import Lesson, infer_tags_from_text

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
    stored, merged = _store(args, write=True).add(lesson)
    if args.json:
        output.print_json({"merged": merged, "lesson": stored.model_dump(mode="json")})
    elif merged:
        output.out().print(f"merged into {stored.id}: {output.short(stored.trigger, 80)}")
    else:
        output.out().print(f"added {stored.id} (tags: {', '.join(stored.tags) or 'none'})")
    return 0


def memory_forget(args: argparse.Namespace) -> int:
    store = _store(args, write=True)
    _get(store, args.id)
    lesson = store.forget(args.id)
    output.out().print(f"forgot {lesson.id}: {output.short(lesson.trigger, 80)}")
    return 0


def _recall_table(recalled, explain: bool, title: str):
    table = output.table(title, ("#", "id", "score"), right=("#", "score"))
    table.columns[1].no_wrap = True
    if explain:
        for name in ("relev", "recency", "conf", "usage", "stack", "÷"):
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
            row += [f"{p.usage:.2f}", f"{p.stack:.2f}", f"{p.penalty:g}"]
            row += ["; ".join(p.penalties) or "-"]
        table.add_row(*row, text)
    return table


def memory_recall(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise CadillacError("the task is empty: say what is to be built")
    recalled = _store(args).recall(args.task, limit=args.limit, scorer=args.scorer)
    if args.json:
        output.print_json([r.model_dump(mode="json") for r in recalled])
        return 0
    title = f"{len(recalled)} lesson(s) for this task (scorer: {args.scorer})"
    output.out().print(_recall_table(recalled, args.explain, title))
    return 0


def memory_stats(args: argparse.Namespace) -> int:
    store = _store(args)
    stats = store.stats()
    if args.json:
        output.print_json(stats.model_dump(mode="json"))
        return 0
    output.out().print(stats.headline())
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


def budgets(args: argparse.Namespace) -> int:
    if args.path:
        print(Home.resolve(getattr(args, "home", None)).budgets_path)
        return 0
    from memory import PhaseBudgets
    from phases import DEFAULT_ROUNDS

    history = PhaseBudgets(_home(args).budgets_path, DEFAULT_ROUNDS)
    result = history.compute_budgets(args.tags)
    if args.json:
        output.print_json({phase: b.model_dump(mode="json") for phase, b in result.items()})
        return 0
    tags = ", ".join(args.tags) or "none"
    columns = ("phase", "default", "samples", "p90", "budget", "reason")
    table = output.table(f"phase budgets for tags: {tags}", columns, right=columns[1:5])
    for phase, b in result.items():
        p90 = "-" if b.p90 is None else f"{b.p90:g}"
        table.add_row(phase, str(b.default), str(b.samples), p90, str(b.rounds), b.reason)
    output.out().print(table)
    return 0
