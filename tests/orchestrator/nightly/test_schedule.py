"""The nightly schedule: the cron line and systemd units it writes, installed and removed."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from argparse import Namespace
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.errors import CadillacError
from orchestrator.nightly import schedule
from orchestrator.nightly.schedule import ScheduleConfig, cron_line, install, remove, systemd_units


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


@pytest.fixture
def cadillac(tmp_path: Path) -> Path:
    """A stand-in cadillac that writes its arguments, one a line, to argv.txt beside it."""
    out = tmp_path / "bin" / "argv.txt"
    return script(tmp_path / "bin" / "cadillac", f'for a in "$@"; do echo "$a"; done > "{out}"')


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake crontab program; returns the file that holds the 'installed' crontab."""
    table = tmp_path / "crontab.txt"
    fake = script(
        tmp_path / "fakes" / "crontab",
        f'case "$1" in\n'
        f'  -l) if [ -f "{table}" ]; then cat "{table}"; '
        f'else echo "no crontab for user" >&2; exit 1; fi ;;\n'
        f'  -) cat > "{table}" ;;\n'
        f"  *) exit 2 ;;\n"
        f"esac",
    )
    monkeypatch.setenv("CADILLAC_CRONTAB", str(fake))
    return table


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "systemd" / "user"


def cron_command(line: str) -> str:
    """The command of a crontab line as cron hands it to /bin/sh (``\\%`` becomes ``%``)."""
    command = line.split(" ", 5)[5]
    assert "%" not in command.replace("\\%", "")  # a bare % would end the command
    return command.replace("\\%", "%")


# --- the config ---------------------------------------------------------------------------------


def test_config_defaults_and_normalises_the_time(home: Path):
    cfg = ScheduleConfig(home=home, at="3:05")
    assert cfg.at == "03:05"
    assert cfg.hour_minute == (3, 5)
    assert cfg.cadillac.name == "cadillac" and cfg.cadillac.is_absolute()
    assert cfg.randomized_delay == "15m"
    assert cfg.args == []


@pytest.mark.parametrize(
    "fields",
    [
        {"at": "24:00"},
        {"at": "02:60"},
        {"at": "0217"},
        {"home": Path("relative/home")},
        {"cadillac": Path("cadillac")},
        {"randomized_delay": "soon"},
        {"args": ["two\nlines"]},
        {"surprise": 1},
    ],
)
def test_config_rejects(home: Path, fields: dict):
    with pytest.raises(ValidationError):
        ScheduleConfig(**{"home": home, **fields})


# --- cron ---------------------------------------------------------------------------------------


def test_cron_line(home: Path, cadillac: Path):
    cfg = ScheduleConfig(home=home, at="04:30", cadillac=cadillac, args=["--model", "m/x"])
    marker, line = cron_line(cfg).splitlines()
    assert marker == f"# cadillac nightly for {home}"
    assert line.startswith("30 4 * * * ")
    assert shlex.split(cron_command(line)) == [
        "cd", str(home), "&&", "mkdir", "-p", str(home / "runs"), "&&",
        "flock", "-n", str(home / "nightly.cron.lock"),
        str(cadillac), "nightly", "--home", str(home), "--model", "m/x",
        ">>", str(home / "runs" / "nightly-cron.log"), "2>&1",
    ]  # fmt: skip


def test_cron_line_quotes_a_home_with_a_space_and_escapes_percent(tmp_path: Path, cadillac: Path):
    home = tmp_path / "my home"
    args = ["--time-budget", "6h", "--model", "x%y", "--note", "it's"]
    cfg = ScheduleConfig(home=home, cadillac=cadillac, args=args)
    line = cron_line(cfg).splitlines()[1]
    assert f"--home {shlex.quote(str(home))}" in line
    assert "x\\%y" in line
    words = shlex.split(cron_command(line))
    assert words[words.index("nightly") :][:9] == ["nightly", "--home", str(home), *args]
    assert words[1] == str(home)


def test_cron_line_refuses_what_cron_cannot_say(home: Path):
    cfg = ScheduleConfig(home=home, args=["--note", "a\\%b"])
    with pytest.raises(CadillacError, match="backslash"):
        cron_line(cfg)


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock is not installed")
def test_cron_command_runs_as_cron_would(tmp_path: Path, cadillac: Path):
    home = tmp_path / "a 50% home"
    (home / "runs").mkdir(parents=True)
    args = ["--model", "openai/gpt-4o", "--note", "$HOME; 'x'"]
    line = cron_line(ScheduleConfig(home=home, cadillac=cadillac, args=args)).splitlines()[1]
    done = subprocess.run(["/bin/sh", "-c", cron_command(line)], cwd="/", timeout=30)
    assert done.returncode == 0
    argv = (cadillac.parent / "argv.txt").read_text(encoding="utf-8").splitlines()
    assert argv == ["nightly", "--home", str(home), *args]
    assert (home / "runs" / "nightly-cron.log").exists()
    assert (home / "nightly.cron.lock").exists()


def test_cron_install_twice_keeps_one_block_and_other_lines(
    home: Path, cadillac: Path, crontab: Path
):
    crontab.write_text("MAILTO=me@example.com\n0 5 * * * /usr/bin/backup\n", encoding="utf-8")
    cfg = ScheduleConfig(home=home, cadillac=cadillac)

    first = install(cfg, "cron")
    assert first[0].startswith(f"added the cron entry for {home}")
    assert install(cfg, "cron") == [
        f"the cron entry for {home} is already installed; nothing changed"
    ]
    later = install(cfg.model_copy(update={"at": "03:00"}), "cron")
    assert later[0].startswith("replaced")

    lines = crontab.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["MAILTO=me@example.com", "0 5 * * * /usr/bin/backup"]
    assert lines.count(f"# cadillac nightly for {home}") == 1
    assert len(lines) == 4 and lines[3].startswith("0 3 * * * ")
    assert (home / "runs").is_dir()  # the log redirect needs it

    assert remove(cfg, "cron") == [f"removed the cron entry for {home}"]
    assert crontab.read_text(encoding="utf-8") == (
        "MAILTO=me@example.com\n0 5 * * * /usr/bin/backup\n"
    )
    assert remove(cfg, "cron") == [f"no cron entry for {home}; nothing changed"]


def test_cron_keeps_other_homes(tmp_path: Path, home: Path, cadillac: Path, crontab: Path):
    other = ScheduleConfig(home=tmp_path / "other", cadillac=cadillac)
    mine = ScheduleConfig(home=home, cadillac=cadillac)
    install(other, "cron")
    install(mine, "cron")
    remove(mine, "cron")
    assert crontab.read_text(encoding="utf-8") == cron_line(other) + "\n"


def test_cron_remove_without_a_crontab_changes_nothing(home: Path, crontab: Path):
    assert remove(ScheduleConfig(home=home), "cron") == [
        f"no cron entry for {home}; nothing changed"
    ]
    assert not crontab.exists()


def test_cron_missing(tmp_path: Path, home: Path, cadillac: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CADILLAC_CRONTAB", str(tmp_path / "no-such-crontab"))
    with pytest.raises(CadillacError, match="crontab is not installed: use --systemd"):
        install(ScheduleConfig(home=home, cadillac=cadillac), "cron")


def test_cron_failure_is_one_line(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch):
    fake = script(tmp_path / "crontab", 'echo "crontab: permission denied" >&2; exit 1')
    monkeypatch.setenv("CADILLAC_CRONTAB", str(fake))
    with pytest.raises(CadillacError, match="^crontab -l failed: crontab: permission denied$"):
        remove(ScheduleConfig(home=home), "cron")


def test_install_needs_an_executable_cadillac(tmp_path: Path, home: Path, crontab: Path):
    cfg = ScheduleConfig(home=home, cadillac=tmp_path / "missing" / "cadillac")
    with pytest.raises(CadillacError, match="is not an executable file"):
        install(cfg, "cron")
    assert not crontab.exists()


# --- systemd ------------------------------------------------------------------------------------


def test_systemd_units(home: Path, cadillac: Path):
    args = ["--time-budget", "6h", "--model", "openai/gpt-4o"]
    cfg = ScheduleConfig(home=home, at="2:17", cadillac=cadillac, args=args)
    units = systemd_units(cfg)
    assert set(units) == {"cadillac-nightly.service", "cadillac-nightly.timer"}
    service = units["cadillac-nightly.service"].splitlines()
    assert "Type=oneshot" in service
    assert f"WorkingDirectory={home}" in service
    assert f"ExecStart={cadillac} nightly --home {home} {' '.join(args)}" in service
    assert any(line.startswith("Description=") for line in service)
    timer = units["cadillac-nightly.timer"].splitlines()
    assert "OnCalendar=*-*-* 02:17:00" in timer
    assert "Persistent=true" in timer
    assert "RandomizedDelaySec=15m" in timer
    assert timer[-2:] == ["[Install]", "WantedBy=timers.target"]


def test_systemd_quotes_exec_start(tmp_path: Path, cadillac: Path):
    home = tmp_path / "50% of $HOME"
    cfg = ScheduleConfig(home=home, cadillac=cadillac, args=["--note", 'say "hi" \\o/'])
    service = systemd_units(cfg)["cadillac-nightly.service"]
    assert f"WorkingDirectory={tmp_path}/50%% of $HOME\n" in service
    assert f'--home "{tmp_path}/50%% of $$HOME"' in service
    assert '"say \\"hi\\" \\\\o/"' in service


def _verify(units: dict[str, Path], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    runtime = tmp_path / "xdg-runtime"  # the user manager it simulates needs one
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime)}
    command = ["systemd-analyze", "verify", "--user", "--man=no", "--generators=no"]
    return subprocess.run(
        [*command, *map(str, units.values())], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path: Path, cadillac: Path):
    # Probe with a unit known to be good: if even that fails, this machine cannot verify.
    probe = script(tmp_path / "probe" / "true", "exit 0")
    good = probe.parent / "probe.service"
    good.write_text(f"[Service]\nType=oneshot\nExecStart={probe}\n", encoding="utf-8")
    done = _verify({"probe.service": good}, tmp_path)
    if done.returncode != 0:
        pytest.skip(f"systemd-analyze verify cannot run here: {done.stderr.strip()[:200]}")

    home = tmp_path / "a home with 50% spaces"
    spaced = script(home / "bin dir" / "cadillac", "exit 0")
    args = ["--model", "openai/gpt-4o", "--time-budget", "6h", "--note", 'it\'s $5 "off"']
    cfg = ScheduleConfig(home=home, cadillac=spaced, args=args, randomized_delay="1h 30m")
    folder = tmp_path / "units"
    folder.mkdir()
    paths = {}
    for name, text in systemd_units(cfg).items():
        paths[name] = folder / name
        paths[name].write_text(text, encoding="utf-8")
    done = _verify(paths, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""

    # and it does catch a broken unit, so the pass above means something
    broken = folder / "cadillac-nightly.service"
    broken.write_text(broken.read_text().replace("dir/cadillac", "dir/missing"), encoding="utf-8")
    assert _verify(paths, tmp_path).returncode != 0


def test_systemd_install_and_remove_without_systemctl(
    tmp_path: Path, home: Path, cadillac: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    cfg = ScheduleConfig(home=home, cadillac=cadillac)
    lines = install(cfg, "systemd")
    for name, text in systemd_units(cfg).items():
        assert (config_home / name).read_text(encoding="utf-8") == text
    assert "  systemctl --user daemon-reload" in lines
    assert "  systemctl --user enable --now cadillac-nightly.timer" in lines

    lines = remove(cfg, "systemd")
    assert not list(config_home.iterdir())
    assert f"removed {config_home / 'cadillac-nightly.timer'}" in lines
    assert "  systemctl --user disable --now cadillac-nightly.timer" in lines
    assert remove(cfg, "systemd") == [
        f"no cadillac nightly units in {config_home}; nothing changed"
    ]


def test_systemd_install_when_the_user_manager_does_not_answer(
    tmp_path: Path, home: Path, cadillac: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = tmp_path / "calls.txt"
    script(tmp_path / "fake-bin" / "systemctl", f'echo "$*" >> "{calls}"; exit 1')
    monkeypatch.setenv("PATH", str(tmp_path / "fake-bin"))
    lines = install(ScheduleConfig(home=home, cadillac=cadillac), "systemd")
    assert (config_home / "cadillac-nightly.timer").is_file()
    assert "no systemd user manager answered; to start the timer, run:" in lines
    assert "  systemctl --user enable --now cadillac-nightly.timer" in lines
    assert calls.read_text(encoding="utf-8").splitlines() == ["--user show-environment"]


def test_systemd_install_and_remove_with_a_user_manager(
    tmp_path: Path, home: Path, cadillac: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = tmp_path / "calls.txt"
    script(tmp_path / "fake-bin" / "systemctl", f'echo "$*" >> "{calls}"')
    monkeypatch.setenv("PATH", str(tmp_path / "fake-bin"))
    cfg = ScheduleConfig(home=home, cadillac=cadillac)
    lines = install(cfg, "systemd")
    assert "ran systemctl --user enable --now cadillac-nightly.timer" in lines
    remove(cfg, "systemd")
    assert not (config_home / "cadillac-nightly.service").exists()
    assert calls.read_text(encoding="utf-8").splitlines() == [
        "--user show-environment",
        "--user daemon-reload",
        "--user enable --now cadillac-nightly.timer",
        "--user show-environment",
        "--user disable --now cadillac-nightly.timer",
        "--user daemon-reload",
    ]


def test_systemd_remove_leaves_another_homes_units(
    tmp_path: Path, home: Path, cadillac: Path, config_home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    install(ScheduleConfig(home=tmp_path / "other", cadillac=cadillac), "systemd")
    with pytest.raises(CadillacError, match="runs in .*other, not"):
        remove(ScheduleConfig(home=home), "systemd")
    assert (config_home / "cadillac-nightly.service").exists()
    lines = install(ScheduleConfig(home=home, cadillac=cadillac), "systemd")
    assert (
        lines[0] == f"replaced the nightly schedule for {tmp_path / 'other'} (one timer per user)"
    )


# --- the command --------------------------------------------------------------------------------


def test_handle_print_cron(home: Path, capsys: pytest.CaptureFixture[str]):
    args = Namespace(action="print", kind="cron", at="01:02", nightly_args=["--model", "m"])
    assert schedule.handle(args) == 0  # no args.home: CADILLAC_HOME decides
    out = capsys.readouterr().out
    assert out.startswith(f"# cadillac nightly for {home}\n2 1 * * * cd ")
    assert "nightly --home" in out and out.rstrip().endswith("2>&1")


def test_handle_print_systemd(home: Path, config_home: Path, capsys: pytest.CaptureFixture[str]):
    args = Namespace(action="print", kind="systemd", at=None, home=str(home), nightly_args=[])
    assert schedule.handle(args) == 0
    out = capsys.readouterr().out
    assert f"# file: {config_home / 'cadillac-nightly.service'}\n[Unit]\n" in out
    assert f"# file: {config_home / 'cadillac-nightly.timer'}\n[Unit]\n" in out
    assert "OnCalendar=*-*-* 02:17:00" in out


def test_handle_install_and_remove(
    home: Path, cadillac: Path, crontab: Path, capsys: pytest.CaptureFixture[str]
):
    args = Namespace(action="install", kind="cron", at="05:00", nightly_args=[], cadillac=cadillac)
    assert schedule.handle(args) == 0
    assert capsys.readouterr().out.startswith(f"added the cron entry for {home}")
    args.action = "remove"
    assert schedule.handle(args) == 0
    assert capsys.readouterr().out == f"removed the cron entry for {home}\n"


def test_handle_bad_time_is_one_line(home: Path):
    args = Namespace(action="print", kind="cron", at="25:00", nightly_args=[])
    with pytest.raises(CadillacError, match="^schedule --at: '25:00' is not a time of day"):
        schedule.handle(args)
