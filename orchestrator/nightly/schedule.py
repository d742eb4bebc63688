"""When ``cadillac nightly`` runs: a cron entry or a systemd user timer, written and removed.

This module decides only the schedule around the nightly command, never what a
night does. Both schedulers start the job with no login shell, so every path in
what they run is absolute: the cadillac script beside this Python (a venv's
``bin/cadillac``), the home, the lock and the log. Cron gets one line under a
marker comment naming the home (``# cadillac nightly for <home>``), so a home has
at most one entry and the user's other lines are kept; ``flock -n`` on
``<home>/nightly.cron.lock`` skips a night that would overlap the last one
(nightly takes its own lock as well; this one just keeps cron from piling up
waiting processes), and its output goes to ``<home>/runs/nightly-cron.log``, whose
folder the line makes first (``mkdir -p``: the shell opens the redirect before
cadillac starts, so on a fresh home it would fail every night with nothing logged).
The notes after an install name the key variable of the ``--model``'s provider
(:func:`orchestrator.llm.keys.provider_env`).
systemd gets ``cadillac-nightly.service`` (oneshot, so a timer never starts a
second run while one is active) and ``cadillac-nightly.timer`` (daily,
``Persistent=true`` so a night missed while the machine was off runs at boot,
with a random delay). Words are quoted for the program that reads them:
``shlex.quote`` and ``\\%`` for cron, double quotes with ``%%`` and ``$$`` for
systemd. The crontab program is ``$CADILLAC_CRONTAB`` (default ``crontab``), so
tests use a fake one.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.sandbox.files import replace_file

Kind = Literal["cron", "systemd"]
SERVICE = "cadillac-nightly.service"
TIMER = "cadillac-nightly.timer"
MARKER = "# cadillac nightly for "
CRON_LOCK = "nightly.cron.lock"
CRON_LOG = "runs/nightly-cron.log"
_AT = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")
_TIMESPAN = re.compile(r"\d+(\.\d+)?\s*(us|ms|s|sec|m|min|h|hr|d|w)?(\s*\d+(\.\d+)?\s*[a-z]+)*")
_SYSTEMD_SAFE = re.compile(r"[\w@+=:,./%$-]+")


def _default_cadillac() -> Path:
    return Path(sys.executable).parent / "cadillac"


class ScheduleConfig(BaseModel):
    """What to run every night, and when."""

    model_config = ConfigDict(extra="forbid")

    home: Path
    """The cadillac home the nightly runs in (absolute)."""
    at: str = "02:17"
    """Local time of day, HH:MM (off the hour, so not every machine calls the API at once)."""
    cadillac: Path = Field(default_factory=_default_cadillac)
    """The cadillac executable (absolute); by default the script beside this Python."""
    args: list[str] = Field(default_factory=list)
    """More ``cadillac nightly`` arguments, e.g. ``["--model", "openai/gpt-4o"]``."""
    randomized_delay: str = "15m"
    """systemd only: the timer waits up to this long (a systemd time span) after ``at``."""

    @field_validator("home", "cadillac")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        if not value.is_absolute():
            raise ValueError(f"{value} is not an absolute path")
        if "\n" in str(value):
            raise ValueError("a path with a line break cannot be scheduled")
        return value

    @field_validator("at")
    @classmethod
    def _clock(cls, value: str) -> str:
        match = _AT.fullmatch(value.strip())
        if not match:
            raise ValueError(f"{value!r} is not a time of day as HH:MM (e.g. 02:17)")
        return f"{int(match[1]):02d}:{match[2]}"

    @field_validator("args")
    @classmethod
    def _one_line(cls, value: list[str]) -> list[str]:
        for arg in value:
            if "\n" in arg or "\r" in arg:
                raise ValueError(
                    f"the nightly argument {arg!r} holds a line break, which a schedule "
                    "cannot carry"
                )
        return value

    @field_validator("randomized_delay")
    @classmethod
    def _timespan(cls, value: str) -> str:
        if not _TIMESPAN.fullmatch(value.strip()):
            raise ValueError(f"{value!r} is not a time span (e.g. 15m, 1h 30m, 0)")
        return value.strip()

    @property
    def hour_minute(self) -> tuple[int, int]:
        hour, minute = self.at.split(":")
        return int(hour), int(minute)

    def option(self, name: str) -> str | None:
        """The value of the nightly argument ``name`` (``--model``), the last one given."""
        found = None
        for i, arg in enumerate(self.args):
            if arg == name and i + 1 < len(self.args):
                found = self.args[i + 1]
            elif arg.startswith(f"{name}="):
                found = arg.partition("=")[2]
        return found

    def key_variables(self) -> tuple[str, ...]:
        """The variables the nightly's ``--model`` reads (its provider's key first; none for a
        model built into cadillac), which the scheduler's bare environment lacks."""
        from orchestrator.llm.keys import provider_env

        model = self.option("--model")
        return provider_env(model, self.option("--api-base")) if model else ()

    def nightly_command(self) -> list[str]:
        return [str(self.cadillac), "nightly", "--home", str(self.home), *self.args]


# --- cron ---------------------------------------------------------------------------------------


def _cron_escape(text: str) -> str:
    """Cron turns an unescaped ``%`` into a line break; ``\\%`` is a literal ``%``."""
    if "\\%" in text:  # cron cannot express a backslash followed by a percent sign
        raise CadillacError(f"cannot write {text!r} in a crontab (a backslash before '%')")
    return text.replace("%", "\\%")


def cron_line(cfg: ScheduleConfig) -> str:
    """The marker comment and the crontab line under it (no trailing newline)."""
    hour, minute = cfg.hour_minute
    home = cfg.home
    command = " ".join(
        [
            "cd",
            shlex.quote(str(home)),
            "&&",
            "mkdir -p",  # the log's folder: the redirect is opened before cadillac starts
            shlex.quote(str((home / CRON_LOG).parent)),
            "&&",
            "flock -n",
            shlex.quote(str(home / CRON_LOCK)),
            shlex.join(cfg.nightly_command()),
            ">>",
            shlex.quote(str(home / CRON_LOG)),
            "2>&1",
        ]
    )
    return f"{MARKER}{home}\n{minute} {hour} * * * {_cron_escape(command)}"


def _crontab(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    program = os.environ.get("CADILLAC_CRONTAB", "crontab")
    try:
        return subprocess.run(
            [program, *args], input=stdin, capture_output=True, text=True, timeout=60
        )
    except FileNotFoundError:
        raise CadillacError("crontab is not installed: use --systemd, or install cron") from None


def _read_crontab() -> list[str]:
    done = _crontab("-l")
    if done.returncode == 0:
        return done.stdout.splitlines()
    if "no crontab" in done.stderr.lower():
        return []
    raise CadillacError(f"crontab -l failed: {_first_line(done)}")


def _write_crontab(lines: list[str]) -> None:
    done = _crontab("-", stdin="".join(f"{line}\n" for line in lines))
    if done.returncode != 0:
        raise CadillacError(f"crontab could not be written: {_first_line(done)}")


def _without_block(lines: list[str], home: Path) -> tuple[list[str], list[str]]:
    """(the lines without this home's marker and the line after it, the lines dropped)."""
    kept: list[str] = []
    dropped: list[str] = []
    skip_next = False
    for line in lines:
        if skip_next:
            dropped.append(line)
            skip_next = False
        elif line.rstrip() == f"{MARKER}{home}":
            dropped.append(line)
            skip_next = True
        else:
            kept.append(line)
    return kept, dropped


def _install_cron(cfg: ScheduleConfig) -> list[str]:
    block = cron_line(cfg).splitlines()
    kept, dropped = _without_block(_read_crontab(), cfg.home)
    if dropped == block:
        return [f"the cron entry for {cfg.home} is already installed; nothing changed"]
    Home(cfg.home).check(write=True)  # made only now that crontab answered
    (cfg.home / "runs").mkdir(parents=True, exist_ok=True)  # the log redirect needs it
    _write_crontab([*kept, *block])
    verb = "replaced" if dropped else "added"
    return [
        f"{verb} the cron entry for {cfg.home}: cadillac nightly every day at {cfg.at}",
        f"output goes to {cfg.home / CRON_LOG}",
        *[
            "note: cron passes no login environment; put the provider key "
            f"({key}=...) on a line of its own at the top of 'crontab -e'"
            for key in cfg.key_variables()[:1]
        ],
    ]


def _remove_cron(cfg: ScheduleConfig) -> list[str]:
    kept, dropped = _without_block(_read_crontab(), cfg.home)
    if not dropped:
        return [f"no cron entry for {cfg.home}; nothing changed"]
    _write_crontab(kept)
    return [f"removed the cron entry for {cfg.home}"]


# --- systemd ------------------------------------------------------------------------------------


def _systemd_word(word: str) -> str:
    """One ExecStart word: specifiers (%) and variables ($) escaped, quoted if it needs it."""
    escaped = word.replace("%", "%%").replace("$", "$$")
    if _SYSTEMD_SAFE.fullmatch(word):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_units(cfg: ScheduleConfig) -> dict[str, str]:
    """The unit file texts, by file name: the oneshot service and the daily timer."""
    home = str(cfg.home).replace("%", "%%")
    hour, minute = cfg.hour_minute
    service = (
        "[Unit]\n"
        f"Description=cadillac nightly for {home}\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"WorkingDirectory={home}\n"
        f"ExecStart={' '.join(_systemd_word(w) for w in cfg.nightly_command())}\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=Run cadillac nightly for {home} every day at {cfg.at}\n"
        "\n"
        "[Timer]\n"
        f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\n"
        "Persistent=true\n"
        f"RandomizedDelaySec={cfg.randomized_delay}\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return {SERVICE: service, TIMER: timer}


def unit_dir() -> Path:
    """Where user units go: ``$XDG_CONFIG_HOME/systemd/user`` (default ``~/.config/...``)."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def _installed_home(service: Path) -> str | None:
    """The home an installed service runs in (its WorkingDirectory), if it is there."""
    if not service.is_file():
        return None
    for line in service.read_text(encoding="utf-8").splitlines():
        if line.startswith("WorkingDirectory="):
            return line.removeprefix("WorkingDirectory=").replace("%%", "%")
    return None


def _user_manager() -> bool:
    """True if ``systemctl --user`` can reach a running user manager."""
    if shutil.which("systemctl") is None:
        return False
    try:
        done = subprocess.run(
            ["systemctl", "--user", "show-environment"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _systemctl(*args: str) -> str:
    command = ["systemctl", "--user", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CadillacError(f"{shlex.join(command)} failed: {_first_line(done)}")
    return shlex.join(command)


def _install_systemd(cfg: ScheduleConfig) -> list[str]:
    folder = unit_dir()
    previous = _installed_home(folder / SERVICE)
    Home(cfg.home).check(write=True)  # the service's WorkingDirectory
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    if previous is not None and previous != str(cfg.home):
        lines.append(f"replaced the nightly schedule for {previous} (one timer per user)")
    for name, text in systemd_units(cfg).items():
        replace_file(folder / name, text)  # a unit is never half written
        lines.append(f"wrote {folder / name}")
    commands = [("daemon-reload",), ("enable", "--now", TIMER)]
    if _user_manager():
        lines += [f"ran {_systemctl(*command)}" for command in commands]
        lines.append(
            f"cadillac nightly runs every day at {cfg.at} (after up to "
            f"{cfg.randomized_delay}); see 'systemctl --user list-timers'"
        )
    else:
        lines.append("no systemd user manager answered; to start the timer, run:")
        lines += [f"  {shlex.join(['systemctl', '--user', *command])}" for command in commands]
    lines.append(
        "note: the timer runs only while you are logged in unless you run 'loginctl enable-linger'"
    )
    lines += [
        "note: the service sees no login environment; add the provider key with "
        f"'systemctl --user edit {SERVICE}' ([Service] Environment={key}=...)"
        for key in cfg.key_variables()[:1]
    ]
    return lines


def _remove_systemd(cfg: ScheduleConfig) -> list[str]:
    folder = unit_dir()
    files = [folder / name for name in (SERVICE, TIMER) if (folder / name).exists()]
    if not files:
        return [f"no cadillac nightly units in {folder}; nothing changed"]
    previous = _installed_home(folder / SERVICE)
    if previous is not None and previous != str(cfg.home):
        raise CadillacError(
            f"the installed {SERVICE} runs in {previous}, not {cfg.home}: use --home {previous}"
        )
    manager = _user_manager()
    lines = [f"ran {_systemctl('disable', '--now', TIMER)}"] if manager else []
    for path in files:
        path.unlink()
        lines.append(f"removed {path}")
    if manager:
        lines.append(f"ran {_systemctl('daemon-reload')}")
    else:
        lines.append("no systemd user manager answered; if the timer was running, run:")
        lines += [f"  systemctl --user disable --now {TIMER}", "  systemctl --user daemon-reload"]
    return lines


# --- entry points -------------------------------------------------------------------------------


def install(cfg: ScheduleConfig, kind: Kind) -> list[str]:
    """Schedule the nightly (replacing this home's earlier schedule); lines saying what changed."""
    if not os.access(cfg.cadillac, os.X_OK) or not cfg.cadillac.is_file():
        raise CadillacError(f"{cfg.cadillac} is not an executable file (the cadillac to schedule)")
    if cfg.home.exists():
        Home(cfg.home).check(write=True)
    return _install_cron(cfg) if kind == "cron" else _install_systemd(cfg)


def remove(cfg: ScheduleConfig, kind: Kind) -> list[str]:
    """Unschedule this home's nightly; lines saying what changed (or that nothing was there)."""
    return _remove_cron(cfg) if kind == "cron" else _remove_systemd(cfg)


def _first_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stderr or done.stdout or "").strip()
    return text.splitlines()[0] if text else f"exit status {done.returncode}"


def config_from_args(args) -> ScheduleConfig:
    """The ScheduleConfig a ``cadillac schedule`` command line asks for."""
    fields: dict = {
        "home": Home.resolve(getattr(args, "home", None)).root,
        "args": list(getattr(args, "nightly_args", None) or []),
    }
    for name in ("at", "cadillac", "randomized_delay"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    try:
        return ScheduleConfig(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else ""
        if field in ("home", "at"):  # the fields a command line sets by a flag of that name
            raise CadillacError(f"schedule --{field}: {message}") from None
        raise CadillacError(f"schedule: {message}") from None


def handle(args) -> int:
    """``cadillac schedule print|install|remove`` with ``--cron`` or ``--systemd``."""
    cfg = config_from_args(args)
    kind: Kind = args.kind
    if args.action == "print":
        if kind == "cron":
            print(cron_line(cfg))
        else:
            units = systemd_units(cfg).items()
            print("\n".join(f"# file: {unit_dir() / name}\n{text}" for name, text in units), end="")
        return 0
    for line in (install if args.action == "install" else remove)(cfg, kind):
        print(line)
    return 0
