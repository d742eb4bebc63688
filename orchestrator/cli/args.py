"""What every command group's parser shares: the parser class, argument types, common options.

The parser turns a usage mistake into a :class:`UsageError` (one line, exit status 2)
instead of argparse's usage text and exit. The option groups that several commands take
(``--home``; the model; the matrix; the improve cycle; ``--plugin``) are defined once here
and given to each command as argparse parents, so a flag and its help read the same
everywhere.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import shlex
import sys

from orchestrator.bench import MAX_JOBS, MAX_REPEATS
from orchestrator.errors import CadillacError
from orchestrator.home import ENV_VAR, Home


class UsageError(CadillacError):
    """A malformed command line (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """An argparse parser whose mistakes are one line; a command group (``memory``,
    ``runs`` ...) given an option before its command says to name the command first,
    instead of argparse's "invalid choice" about the option's value."""

    def error(self, message: str):  # one line, not usage + message
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:  # point to the help of the command they were given to, not the root's
            prog = getattr(namespace, "command_prog", self.prog)
            raise UsageError(f"unrecognized arguments: {' '.join(extras)} (see '{prog} --help')")
        return namespace

    def parse_known_args(self, args=None, namespace=None):
        group = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        if group is None:
            return super().parse_known_args(args, namespace)
        args = list(sys.argv[1:] if args is None else args)
        rest = _after_home(args)
        early = bool(rest) and rest[0].startswith("-") and rest[0] not in ("-h", "--help")
        try:
            namespace, extras = super().parse_known_args(args, namespace)
        except UsageError:
            if early:
                raise UsageError(self._command_first(group, args, rest)) from None
            raise
        if early and extras:
            raise UsageError(self._command_first(group, args, rest))
        return namespace, extras

    def _command_first(self, group: argparse._SubParsersAction, args: list[str], rest) -> str:
        """Options given before the command: say where they go, with an example only when
        the example itself parses (``memory --limit 2 list``: ``memory list --limit 2``)."""
        commands = list(group.choices)
        name = self.prog.rpartition(" ")[2]
        home = args[: len(args) - len(rest)]
        at = next((i for i, arg in enumerate(rest) if arg in group.choices), None)
        if at is None:
            argv = [commands[0], *rest, *home]
        else:
            argv = [rest[at], *rest[at + 1 :], *rest[:at], *home]
        example = f"{self.prog} {shlex.join(argv)}" if _parses(group, argv) else None
        if at is not None:
            said = f"e.g. '{example}'; " if example else ""
            what = f"{shlex.join(rest[:at])} goes" if example else "options go"
            who = "" if name == self.prog else f"{name}: "
            return (
                f"{who}{what} after the command {rest[at]!r}, not before it"
                f" ({said}see '{self.prog} {rest[at]} --help')"
            )
        said = f"e.g. '{example}'; " if example and name != self.prog else ""
        return (
            f"{name} needs a command before its options: {', '.join(commands)}"
            f" ({said}see '{self.prog} --help')"
        )


def _parses(group: argparse._SubParsersAction, argv: list[str]) -> bool:
    """Whether ``argv`` (a command and its arguments) is a command line the group takes."""
    try:
        group.choices[argv[0]].parse_args(argv[1:])
    except (UsageError, SystemExit):
        return False
    return True


def _after_home(args: list[str]) -> list[str]:
    """``args`` from the first one that is not ``--home DIR`` (every group's own option)."""
    i = 0
    while i < len(args):
        if args[i] == "--home":
            i += 2
        elif args[i].startswith("--home="):
            i += 1
        else:
            break
    return args[i:]


def folder(value: str) -> str:
    """An argparse type: a folder's path, which cannot be empty (that would mean "here")."""
    if not value.strip():
        raise argparse.ArgumentTypeError("is empty: give a folder (or leave the option out)")
    return value


def _shown(value: str, width: int = 60) -> str:
    """``value`` as the bytes it came as, quoted: ``'caf\\xe9 x'``."""
    from orchestrator.cli.output import short

    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no argv byte makes
        raw = value.encode("utf-8", "backslashreplace")
    return short(repr(raw)[1:], width)


def utf8(value: str) -> str:
    """An argparse type: text that is valid UTF-8. Python hands argv bytes that are not
    over as lone surrogates (``'\\udce9'``), which no JSON file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{_shown(value)} is not valid UTF-8 text") from None
    return value


def words(value: str) -> str:
    """An argparse type: UTF-8 text with something in it besides white space."""
    if not utf8(value).strip():
        raise argparse.ArgumentTypeError("must not be blank")
    return value


def url(value: str) -> str:
    """An argparse type: a model server's URL (http:// or https://, a host, a port that is
    one); every option that takes a URL uses this one check, the check the model's
    configuration makes (:func:`orchestrator.llm.client.check_api_base`)."""
    from orchestrator.llm.client import ModelError, check_api_base

    try:
        check_api_base(value, "the URL")
    except ModelError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("the URL ")) from None
    return value


def model_name(value: str) -> str:
    """An argparse type: a model string as litellm or cadillac takes it (not blank, no blanks
    at its ends, a provider followed by a model: see
    :func:`orchestrator.llm.client.model_name_problem`)."""
    from orchestrator.llm.client import model_name_problem

    problem = model_name_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{_shown(value)} {problem}")
    return value


def one_line(value: str) -> str:
    """An argparse type: :func:`words` on one line (a lesson's trigger): a line break inside
    it (``\\n``, ``\\r``, or any other that ``str.splitlines`` breaks at) is refused, since
    each lesson is one line wherever it is listed."""
    if len(words(value).strip().splitlines()) > 1:
        raise argparse.ArgumentTypeError(f"{_shown(value)} holds a line break: give one line")
    return value


def checked_home(args: argparse.Namespace, write: bool = False, create: bool = False) -> Home:
    """The ``--home`` of a command, checked; only with ``create`` is a missing one made."""
    home = Home.resolve(getattr(args, "home", None))
    if write and not create:
        home.check()  # it must exist: a write that creates nothing
    return home.check(write=write)


def csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def number(cast: type, valid, rule: str):
    """An argparse type: ``cast`` the text, then require ``valid(number)``."""
    kind = "a whole number" if cast is int else "a number"

    def parse(value: str):
        try:
            result = cast(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not {kind}") from None
        if not valid(result):
            raise argparse.ArgumentTypeError(f"{value!r} {rule}")
        return result

    return parse


positive = number(int, lambda n: n >= 1, "must be at least 1")
unit = number(float, lambda n: 0.0 <= n <= 1.0, "is not between 0 and 1")
positive_float = number(float, lambda n: 0 < n < math.inf, "must be a finite number more than 0")
REQUEST_TIMEOUT = (1, 3600)
"""The bounds of ``--request-timeout`` in seconds (a model's default is 600)."""
request_timeout = number(
    float,
    lambda n: REQUEST_TIMEOUT[0] <= n <= REQUEST_TIMEOUT[1],
    f"must be between {REQUEST_TIMEOUT[0]} and {REQUEST_TIMEOUT[1]} seconds",
)


@functools.cache
def home_options() -> Parser:
    """``--home``, accepted before or after the command (SUPPRESS keeps an earlier one)."""
    p = Parser(add_help=False)
    p.add_argument(
        "--home",
        type=folder,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help=f"state folder (default: ${ENV_VAR}, else the current directory)",
    )
    return p


@functools.cache
def model_options() -> Parser:
    p = Parser(add_help=False)
    p.add_argument(
        "--model", type=model_name, help="litellm model string (default: $CADILLAC_MODEL)"
    )
    p.add_argument(
        "--api-base", type=url, metavar="URL", help="server URL of --model (a local server)"
    )
    p.add_argument(
        "--fallback-model",
        action="append",
        type=model_name,
        metavar="MODEL",
        help="tried when the model keeps failing (repeatable)",
    )
    p.add_argument(
        "--fallback-api-base",
        action="append",
        type=url,
        metavar="URL",
        help="server URL of the fallback model given in the same place (repeatable)",
    )
    p.add_argument(
        "--request-timeout",
        type=request_timeout,
        metavar="SECONDS",
        help="give up one model request after this long; it is retried, up to 4 attempts "
        f"(default 600, at most {REQUEST_TIMEOUT[1]})",
    )
    return p


@functools.cache
def verbosity_options() -> Parser:
    """``--quiet`` or ``--verbose``, for the commands that print progress while they work
    (build, enhance, iterate, matrix run, improve, nightly): see
    :func:`orchestrator.cli.output.set_verbosity`."""
    p = Parser(add_help=False)
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const="quiet",
        help="print only the result and errors (no progress lines)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const="verbose",
        help="print each tool call a build makes as well (the commands the model runs)",
    )
    p.set_defaults(verbosity="normal")
    return p


@functools.cache
def sandbox_options() -> Parser:
    p = Parser(add_help=False)
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run the model's commands on this machine without a sandbox (at your own risk)",
    )
    return p


@functools.cache
def spend_options() -> Parser:
    """Caps on the spend of a whole matrix, improve cycle or night."""
    p = Parser(add_help=False)
    p.add_argument(
        "--max-cost", type=positive_float, metavar="USD", help="stop before the spend passes this"
    )
    p.add_argument(
        "--max-tokens",
        type=positive,
        metavar="N",
        help="stop once this many tokens were spent (for models without a known price)",
    )
    return p


@functools.cache
def matrix_options() -> Parser:
    p = Parser(add_help=False)
    p.add_argument("--matrix", metavar="DIR", help="a folder of tasks (default: matrices/default)")
    p.add_argument(
        "--jobs",
        type=number(int, lambda n: 1 <= n <= MAX_JOBS, f"is not between 1 and {MAX_JOBS}"),
        default=1,
        metavar="N",
        help=f"builds at once (1 to {MAX_JOBS}, and what the machine holds; default 1)",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where builds run: worker processes here (local, the default) or a Ray cluster",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster (HOST:PORT, or auto for the running one; default: "
        "$CADILLAC_RAY_ADDRESS, else a Ray started for the run)",
    )
    return p


def engine_config(args: argparse.Namespace, executor=None, llm=None):
    """The engine a command line names (``--engine``, ``--ray-address``, ``--jobs``), with
    the local bound checked; UsageError for an address without the ray engine. For Ray,
    the values of the variables ``llm``'s models read go with the builds."""
    from orchestrator.bench.engines import EngineConfig, check_jobs
    from orchestrator.llm.keys import provider_env

    kind = getattr(args, "engine", "local") or "local"
    address = getattr(args, "ray_address", None)
    if address is not None and kind != "ray":
        raise UsageError("--ray-address is for --engine ray")
    if address is not None and not address.strip():
        raise UsageError("--ray-address is empty")
    keys = {}
    if kind == "ray" and llm is not None:
        names = {n for e in llm.endpoints() for n in provider_env(e.model, e.api_base)}
        keys = {n: os.environ[n] for n in sorted(names) if n in os.environ}
    config = EngineConfig(
        kind=kind, jobs=getattr(args, "jobs", 1) or 1, ray_address=address, keys=keys
    )
    if executor is not None:
        check_jobs(config, executor.cgroup_room())
    return config


@functools.cache
def cycle_options() -> Parser:
    """What improve and nightly share."""
    p = Parser(add_help=False)
    p.add_argument("--iterations", type=positive, default=5, metavar="N")
    p.add_argument(
        "--repeats",
        type=number(int, lambda n: 2 <= n <= MAX_REPEATS, f"is not between 2 and {MAX_REPEATS}"),
        metavar="K",
        help="the candidate's builds per train task after the full stage (the screen's "
        f"included), and as many more in the confirmation (2 to {MAX_REPEATS}; default 3 "
        "and 6)",
    )
    p.add_argument(
        "--improver-model", type=model_name, metavar="M", help="model that writes patches"
    )
    p.add_argument(
        "--improver-api-base",
        type=url,
        metavar="URL",
        help="server URL of --improver-model (a local server)",
    )
    p.add_argument(
        "--repo", metavar="PATH", help="the repository to patch (default: cadillac's own)"
    )
    p.add_argument(
        "--apply", action="store_true", help="fast-forward the checkout to the kept patches"
    )
    return p


@functools.cache
def plugin_options() -> Parser:
    """``--plugin``: a plugin of the user's own, besides the installed ones (entry points)."""
    p = Parser(add_help=False)
    p.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE[:OBJECT]",
        help="load a plugin (a module, or a class, instance or function in it) besides the "
        "installed ones (repeatable)",
    )
    return p


def load_hooks(args: argparse.Namespace):
    """The plugins of a command line: the installed ones and each ``--plugin`` (CadillacError
    for one of those that cannot be loaded); an installed one that cannot be loaded is
    skipped with a warning line."""
    from orchestrator.hooks import Hooks

    hooks = Hooks.load(getattr(args, "plugin", None) or ())
    hooks.report(hooks.load_errors, None)
    return hooks


def command(commands, name: str, help: str, *parents: Parser, run=None, **defaults):
    """Add one (sub)command with ``--home`` and the given option groups; ``run`` handles it."""
    p = commands.add_parser(name, parents=[home_options(), *parents], help=help)
    p.set_defaults(command_prog=p.prog)
    if run is not None:
        p.set_defaults(run=run, **defaults)
    return p


def actions(parser: Parser, required: bool = False, dest: str = "action"):
    """The subcommands of a command group (``memory list``, ``runs show`` ...)."""
    sub = parser.add_subparsers(dest=dest, metavar="ACTION", parser_class=Parser)
    sub.required = required
    return sub
