"""``cadillac skills``: the skills builds see (``<home>/skills`` and the global scope).

``list`` shows both scopes (a home skill shadows a global one of its name; ``--global``
shows the global scope alone, ``--all`` adds the skills set aside); ``show NAME`` prints
one skill's record and its SKILL.md; ``forget NAME`` deletes a skill's folder from the
home scope (``--global``: from the global scope), never from the other one by surprise.
Skill files that cannot be read are said as warnings and skipped. A name that cannot be
a skill's is a usage error (exit 2); a skill that is not there is one error line (exit 1).
Nothing here creates a home.
"""

from __future__ import annotations

import argparse
import re
import sys

from orchestrator.cli import output
from orchestrator.cli.args import actions, command
from orchestrator.errors import CadillacError
from orchestrator.home import Home

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
"""memory.skills.NAME, repeated so that parsing a command line imports no pydantic."""


def skill_name(value: str) -> str:
    """An argparse type: a skill's name as ``skills list`` shows it."""
    if not value.strip():
        raise argparse.ArgumentTypeError("is empty: give a skill name from 'cadillac skills list'")
    if not NAME.fullmatch(value):
        shown = output.short(value.encode("utf-8", "backslashreplace").decode(), 60)
        raise argparse.ArgumentTypeError(
            f"{shown!r} is not a skill name (lower-case letters, digits, '.', '_', '-')"
        )
    return value


def add_parsers(commands) -> None:
    skills = command(commands, "skills", "workflows builds reuse (<home>/skills, global)")
    skills.set_defaults(run=skills_list, json=False, all=False, glob=False)
    sub = actions(skills, dest="skills_command")

    p = command(sub, "list", "list skills", run=skills_list)
    p.add_argument("--global", dest="glob", action="store_true", help="the global scope only")
    p.add_argument("--all", action="store_true", help="include the skills set aside")
    p.add_argument("--json", action="store_true", help="print a JSON array")

    p = command(sub, "show", "show one skill", run=skills_show)
    p.add_argument("name", type=skill_name)
    p.add_argument("--json", action="store_true")

    p = command(sub, "forget", "delete a skill", run=skills_forget)
    p.add_argument("name", type=skill_name)
    p.add_argument("--global", dest="glob", action="store_true", help="from the global scope")

    command(sub, "path", "print the skills folders of both scopes", run=skills_path)


def _book(args: argparse.Namespace):
    from memory.skills import SkillBook

    home = Home.resolve(getattr(args, "home", None)).check()
    return SkillBook(home.skills_dir, home.global_skills_dir)


def _warn_problems(book) -> None:
    for problem in book.problems:
        output.warn(f"skipped {problem}")


def _record(book, skill) -> dict:
    return {**skill.model_dump(mode="json"), "path": str(book.path(skill))}


def skills_list(args: argparse.Namespace) -> int:
    book = _book(args)
    skills = book.all(include_set_aside=args.all, scope="global" if args.glob else None)
    _warn_problems(book)
    if args.json:
        output.print_json([_record(book, s) for s in skills])
        return 0
    where = book.dirs.get("global") if args.glob else " and ".join(map(str, book.dirs.values()))
    output.line(f"{len(skills)} skill(s) in {where}")
    if not skills:
        return 0
    columns = ("name", "scope", "uses", "passed", "failed", "conf", "description")
    table = output.table(None, columns, right=("uses", "passed", "failed", "conf"))
    for s in skills:
        name = f"{s.name} (set aside)" if s.set_aside else s.name
        row = (name, s.scope, str(s.uses), str(s.passed), str(s.failed), f"{s.confidence:.2f}")
        table.add_row(*row, output.short(s.description, 80))
    output.out().print(table)
    return 0


def _missing(name: str, scope: str | None = None) -> CadillacError:
    where = f" in the {scope} scope" if scope else ""
    return CadillacError(f"no skill named {name!r}{where} (see 'cadillac skills list --all')")


def skills_show(args: argparse.Namespace) -> int:
    book = _book(args)
    skill = book.get(args.name)
    _warn_problems(book)
    if skill is None:
        raise _missing(args.name)
    if args.json:
        output.print_json(_record(book, skill))
        return 0
    state = "set aside (builds do not see it)" if skill.set_aside else "in use"
    output.line(f"{skill.name}: {skill.scope} scope, {state}, {book.path(skill)}")
    output.line(
        f"uses {skill.uses}, passed {skill.passed}, failed {skill.failed}, "
        f"confidence {skill.confidence:.2f}, origin {skill.origin or 'unknown'}"
    )
    sys.stdout.write("\n" + skill.text())
    return 0


def skills_forget(args: argparse.Namespace) -> int:
    from memory.skills import BadSkill, SkillNotFound

    book = _book(args)
    scope = "global" if args.glob else "home"
    if book.get(args.name, scope) is None:
        other = book.get(args.name, "home" if args.glob else "global")
        if other is not None:
            flag = "without --global" if args.glob else "with --global"
            raise CadillacError(
                f"no skill named {args.name!r} in the {scope} scope; it is a {other.scope} "
                f"skill: forget it {flag}"
            )
        raise _missing(args.name, scope)
    try:
        skill = book.forget(args.name, scope)
    except SkillNotFound:  # another process removed it since it was read
        raise _missing(args.name, scope) from None
    except BadSkill as exc:
        raise CadillacError(str(exc)) from None
    output.line(f"forgot {skill.name} ({skill.scope} scope): {output.short(skill.description, 80)}")
    return 0


def skills_path(args: argparse.Namespace) -> int:
    home = Home.resolve(getattr(args, "home", None))
    print(f"home: {home.skills_dir}")
    print(f"global: {home.global_skills_dir}")
    return 0
