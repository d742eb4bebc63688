"""What a sandboxed command sees besides its workspace: its own host name and IPC, the package
managers' configuration only during cadillac's installs, and toolchains under a home bound by
their own folders.

(Reading other processes' environments through ``/proc`` is in ``test_executor.py``.)
"""

from __future__ import annotations

import ctypes
import os
import re
import tempfile
import uuid
from pathlib import Path

import pytest

from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import InstallStep, _issue

CANARY = "cadillac-canary-51ab"
REFUSED = re.compile("Read-only file system|Permission denied")
"""How a write to a read-only bind fails: as the files' owner, or as another user."""
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


def test_a_command_has_its_own_host_name(ws):
    result = run_command("hostname; cat /proc/sys/kernel/hostname", ws, ExecConfig())
    assert result.ok and result.output == "sandbox\nsandbox\n", result.output
    assert os.uname().nodename != "sandbox"


def test_a_command_sees_no_shared_memory_of_the_host(ws):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o666)
    assert segment >= 0, os.strerror(ctypes.get_errno())
    posix = Path("/dev/shm") / f"cadillac-{uuid.uuid4().hex}"
    try:
        posix.write_text(CANARY)
        assert str(segment) in Path("/proc/sysvipc/shm").read_text()  # the host sees both
        attach = (
            "import ctypes; l = ctypes.CDLL(None); l.shmat.restype = ctypes.c_void_p; "
            f'print("attached" if l.shmat({segment}, None, 0) not in (None, 2**64 - 1) else "no")'
        )
        result = run_command(
            f"cat /proc/sysvipc/shm; ls -a /dev/shm; cat {posix}; python3 -c '{attach}'",
            ws,
            ExecConfig(),
        )
        assert result.sandboxed
        rows = [line.split() for line in result.output.splitlines() if line.strip()]
        listed = [row[1] for row in rows if len(row) > 6 and row[1].isdigit()]
        seen = result.output.replace(f"cat: {posix}: No such file or directory", "")
        assert str(segment) not in listed and posix.name not in seen, result.output
        assert CANARY not in result.output and "attached" not in result.output
        assert result.output.rstrip().endswith("no"), result.output
    finally:
        libc.shmctl(segment, IPC_RMID, None)
        posix.unlink(missing_ok=True)


# ---------------------------------------------------------------------------- package config
@pytest.fixture
def package_config(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A user's pip, npm and cargo configuration, as files and as variables."""
    user = tmp_path / "user"
    files = {
        "npmrc": user / ".npmrc",
        "pip": user / ".config" / "pip" / "pip.conf",
        "cargo": user / ".cargo" / "config.toml",
        "file": tmp_path / "pip-config-file.conf",
    }
    for name, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {CANARY}-{name}\n")
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(files["file"]))
    monkeypatch.setenv("PIP_INDEX_URL", f"https://{CANARY}-pip/simple")
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", f"https://{CANARY}-npm/")
    monkeypatch.setenv("CARGO_NET_RETRY", "7")
    monkeypatch.setenv("CARGO_REGISTRIES_X_TOKEN", f"{CANARY}-token")
    return files


def _as_install(command: str, ws: Path, tool: str):
    """``command`` run as an install step cadillac issued for ``tool`` (the test issues it)."""
    step = _issue(InstallStep("test", command, network=True, tool=tool))
    return run_command(command, ws, ExecConfig(), install=step)


SHOW = (
    "cat /tmp/home/.npmrc /tmp/home/.config/pip/pip.conf {file} {cargo} "
    "/tmp/home/.cargo/config.toml;"
    " env | grep -E '^(PIP|NPM_CONFIG|CARGO)_' | grep -v '^CARGO_HOME='; "
    "for f in /tmp/home/.npmrc /tmp/home/.config/pip/pip.conf {file}; do "
    "echo x >> $f && echo wrote $f; done"
)


def test_installs_read_the_package_configuration_and_cannot_change_it(ws, package_config):
    files = package_config
    show = SHOW.format(file=files["file"], cargo=files["cargo"])
    seen = {tool: _as_install(show, ws, tool).output
            for tool in ("pip", "npm", "cargo")}  # fmt: skip
    pip, npm, cargo = seen["pip"], seen["npm"], seen["cargo"]
    for name in ("pip", "file"):
        assert f"{CANARY}-{name}" in pip, pip
    assert f"PIP_INDEX_URL=https://{CANARY}-pip/simple" in pip
    assert f"{CANARY}-npmrc" in npm and f"NPM_CONFIG_REGISTRY=https://{CANARY}-npm/" in npm
    assert "CARGO_NET_RETRY=7" in cargo
    for out in seen.values():
        assert f"{CANARY}-token" not in out  # a variable named as a secret stays out
        assert f"{CANARY}-cargo" not in out  # ~/.cargo is not bound: CARGO_HOME is the project's
    assert "wrote /tmp/home/.config/pip/pip.conf" not in pip and f"wrote {files['file']}" not in pip
    assert "wrote /tmp/home/.npmrc" not in npm  # (what is not bound lands in the own /tmp)
    assert len(REFUSED.findall(pip)) == 2 and REFUSED.search(npm)
    for name, path in files.items():
        assert path.read_text() == f"# {CANARY}-{name}\n"


def test_a_user_s_private_configuration_reaches_the_install_and_is_not_left_behind(
    ws, package_config
):
    """As root the step runs as an unprivileged user, who cannot read root's 0600 files:
    the step gets a private copy of each, readable by it alone, removed when it ends."""
    files = package_config
    for path in (files["npmrc"], files["pip"], files["file"]):
        path.chmod(0o600)
    before = set(Path(tempfile.gettempdir()).glob("cadillac-config-*"))
    show = (
        SHOW.format(file=files["file"], cargo=files["cargo"]) + "; stat -c '%a %u' /tmp/home/.npmrc"
    )
    npm = _as_install(show, ws, "npm").output
    pip = _as_install(show, ws, "pip").output
    assert f"{CANARY}-npmrc" in npm, npm
    assert f"{CANARY}-pip" in pip and f"{CANARY}-file" in pip, pip
    assert f"{CANARY}-npmrc" not in pip and f"{CANARY}-pip" not in npm
    if os.geteuid() == 0:
        assert f"400 {ExecConfig().sandbox_uid}" in npm, npm  # the copy, the sandbox user's
    assert set(Path(tempfile.gettempdir()).glob("cadillac-config-*")) == before
    for name, path in files.items():
        assert path.read_text() == f"# {CANARY}-{name}\n"


def test_an_install_step_sees_only_its_own_program_s_settings(ws, package_config):
    """The pip step cannot read the npm token, nor the npm step pip's index password."""
    files = package_config
    show = SHOW.format(file=files["file"], cargo=files["cargo"])
    pip = _as_install(show, ws, "pip").output
    npm = _as_install(show, ws, "npm").output
    cargo = _as_install(show, ws, "cargo").output
    assert f"{CANARY}-npmrc" not in pip and "NPM_CONFIG" not in pip, pip
    assert f"{CANARY}-pip" not in npm and f"{CANARY}-file" not in npm and "PIP_" not in npm, npm
    assert CANARY not in cargo and "PIP_" not in cargo and "NPM_CONFIG" not in cargo, cargo
    with pytest.raises(ValueError, match="no install program"):
        _as_install("true", ws, "everything")


def test_a_model_command_sees_no_package_configuration(ws, package_config):
    files = package_config
    show = SHOW.format(file=files["file"], cargo=files["cargo"])
    result = run_command(show, ws, ExecConfig())
    assert result.sandboxed
    assert CANARY not in result.output and "CARGO_NET_RETRY" not in result.output, result.output
    # what it writes at those names lands in the sandbox's own /tmp, gone with the command
    for name, path in files.items():
        assert path.read_text() == f"# {CANARY}-{name}\n"


# ---------------------------------------------------------------------------- toolchains
def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_toolchains_under_a_home_are_bound_by_their_own_folders(ws, tmp_path, monkeypatch):
    """An nvm-style node and a rustup install in a user's home: each runs in the sandbox,
    reading what its own install holds, and nothing else of the home is there."""
    user = tmp_path / "user"
    node = user / ".nvm" / "versions" / "node" / "v99.0.0"
    _script(node / "bin" / "node", '#!/bin/sh\necho "node $(cat "$(dirname "$0")/../VERSION")"\n')
    (node / "VERSION").write_text("v99.0.0\n")
    _script(
        user / ".cargo" / "bin" / "rustup",
        '#!/bin/sh\necho "$(basename "$0") via rustup: $(cat "$RUSTUP_HOME/toolchains/stable")"\n',
    )
    (user / ".cargo" / "bin" / "cargo").symlink_to("rustup")
    (user / ".rustup" / "toolchains").mkdir(parents=True)
    (user / ".rustup" / "toolchains" / "stable").write_text("1.99.0\n")
    secrets = {
        "home": user / "notes.txt",
        "ssh": user / ".ssh" / "id_rsa",
        "cargo-credentials": user / ".cargo" / "credentials.toml",
        "cargo-config": user / ".cargo" / "config.toml",
        "nvm": user / ".nvm" / "alias",
    }
    for name, path in secrets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{CANARY}-{name}\n")
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("RUSTUP_HOME", raising=False)
    path = f"{node / 'bin'}:{user / '.cargo' / 'bin'}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)

    used = run_command("node; cargo", ws, ExecConfig())
    assert used.ok and used.output == "node v99.0.0\ncargo via rustup: 1.99.0\n", used.output
    for name, secret in secrets.items():
        looked = run_command(f"cat {secret}; ls -a {secret.parent}", ws, ExecConfig())
        assert f"{CANARY}-{name}" not in looked.output, (name, looked.output)
        assert secret.name not in looked.output.replace(str(secret), ""), (name, looked.output)
    wrote = run_command(f"echo x >> {node / 'VERSION'}; echo x >> {user}/new.txt", ws, ExecConfig())
    assert REFUSED.search(wrote.output) and (node / "VERSION").read_text() == "v99.0.0\n"
    assert not (user / "new.txt").exists()  # the skeleton around the binds is the sandbox's own


def _workspace_links(ws: Path, tmp_path: Path, monkeypatch) -> dict[str, tuple[Path, Path]]:
    """A hostile workspace: its ``.venv/bin`` names of toolchains are links the model made,
    each to a program beside a secret. Returns name -> (link target, secret)."""
    user = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user))
    targets = {
        # a stand-in for /etc/hosts beside /etc/shadow
        "node": (tmp_path / "outside" / "hosts", tmp_path / "outside" / "shadow"),
        # a cargo-installed binary beside ~/.cargo/credentials.toml
        "git": (user / ".cargo" / "bin" / "x", user / ".cargo" / "credentials.toml"),
        # a pipx-style link beside the rest of ~/.local
        "go": (user / ".local" / "bin" / "go", user / ".local" / "share" / "keyring"),
    }
    for name, (target, secret) in targets.items():
        _script(target, "#!/bin/sh\necho hello\n")
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text(f"{CANARY}-{name}\n")
        link = ws / ".venv" / "bin" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    return targets


@pytest.mark.parametrize("name", ["node", "git", "go"])
def test_a_link_in_the_workspace_venv_binds_nothing_of_the_host(ws, tmp_path, monkeypatch, name):
    """Toolchains are found on the host's PATH, never the workspace's: a ``.venv/bin/node``
    linked to a file beside a secret does not make the secret's folder visible."""
    target, secret = _workspace_links(ws, tmp_path, monkeypatch)[name]
    venv = ws / ".venv" / "bin"
    looked = run_command(f"cat {secret}; ls {secret.parent}", ws, ExecConfig(), path_prefix=[venv])
    assert f"{CANARY}-{name}" not in looked.output, looked.output
    assert secret.name not in looked.output.replace(str(secret), ""), looked.output


def test_a_host_program_in_a_home_bag_folder_binds_nothing_of_it(ws, tmp_path, monkeypatch):
    """A host ``node`` in ``~/.local/bin`` (no toolchain's own install folder) is not
    bound, and so neither is the rest of ``~/.local``; a named toolchain root still is."""
    user = tmp_path / "user"
    monkeypatch.setenv("HOME", str(user))
    _script(user / ".local" / "bin" / "node", "#!/bin/sh\necho local node\n")
    secret = user / ".local" / "share" / "keyring"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"{CANARY}-local\n")
    go = user / "sdk" / "go1.99" / "bin" / "go"
    _script(go, "#!/bin/sh\necho go1.99\n")
    path = f"{user / '.local' / 'bin'}:{go.parent}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    looked = run_command(f"cat {secret}; go", ws, ExecConfig())
    assert f"{CANARY}-local" not in looked.output, looked.output
    assert looked.output.endswith("go1.99\n"), looked.output
    listed = run_command(f"ls -a {user / '.local'}", ws, ExecConfig())
    assert "share" not in listed.output, listed.output
