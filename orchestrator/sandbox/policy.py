"""What a sandboxed command can see: the mounts and the environment, named one by one.

A command the model wrote starts with nothing and is given, by name:

* the system's programs and libraries, read-only: ``/usr``, ``/opt`` and the top-level
  links into ``/usr`` (``/bin``, ``/lib`` ...), recreated as links;
* from ``/etc``, only what programs need to run (:data:`ETC`): certificates, name
  resolution, ``passwd``/``group``, the loader's cache, alternatives, time zone, fonts.
  Never ``shadow``, ``gshadow``, ssh host keys or anything else not listed;
* the install directory of each toolchain a build uses (:func:`toolchain_roots`): the
  interpreter cadillac runs on, and ``node``, ``cargo``, ``go``, ``git`` where the host's
  own ``PATH`` finds them (never the ``PATH`` of a command, whose ``.venv/bin`` holds links
  the model made). Inside a home, only a toolchain's own folder is bound, one of
  :data:`HOME_TOOLCHAINS` (a pyenv or nvm version, rustup's toolchains and
  ``~/.cargo/bin``), never the home or a folder such as ``~/.cargo`` or ``~/.local``;
* the pip and setuptools a project's ``.venv`` uses, read-only: the ``site-packages`` of
  the support environment in cadillac's cache (:mod:`orchestrator.sandbox.venvs`), which
  holds nothing else;
* the workspace, read-write; a private ``/tmp`` (a tmpfs of a fixed size, gone with the
  command) holding an empty ``HOME``; a minimal ``/dev`` with a ``/dev/shm`` of the same
  size, and a ``/proc`` of its own PID namespace;
* for cadillac's own dependency installs only (``package_config``, which names the one
  install program of the step): that program's configuration files
  (:data:`PACKAGE_CONFIG`, :data:`USER_PACKAGE_CONFIG`), so installs reach whatever index
  the machine is set up for. Model-written commands never see them, and an install of
  one program never sees another's: a ``.npmrc`` or a ``pip.conf`` may hold credentials.

Everything else is invisible: the user's home, the cadillac home (memory, budgets, other
runs), the matrix and its hidden checks, ``/run`` with every host socket, ``/sys``.

The environment starts empty (:func:`command_env`): ``PATH``, the locale, ``TERM``,
``TZ``, what cadillac sets itself, and for an install step its program's own settings
(``PIP_*``, ``NPM_CONFIG_*``, ``CARGO_*`` or Go's ``GO*``) and the proxy variables, minus
any whose name says it holds a secret. No provider key, and no other user variable,
reaches a command.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/opt")
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""On a merged-/usr system these are links into /usr; elsewhere real folders, bound read-only."""

ETC = (
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "resolv.conf",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "gai.conf",
    "services",
    "protocols",
    "passwd",
    "group",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "locale.alias",
    "mime.types",
    "magic",
    "magic.mime",
    "fonts",
    "os-release",
    "debian_version",
    "lsb-release",
    "gitconfig",
)
"""Entries of /etc a sandboxed program may read; anything not named here is not there."""
ETC_GLOBS = ("python3*", "java-*")
"""Per-version configuration of interpreters (Debian's python3.11 sitecustomize, Java)."""

PACKAGE_TOOLS = ("pip", "npm", "cargo", "go")
"""The install programs whose settings an install step may be given (one per step)."""
PACKAGE_CONFIG = {
    "pip": ("/etc/pip.conf", "/etc/xdg/pip"),
    "npm": ("/etc/npmrc", "/usr/etc/npmrc"),
}
"""System-wide configuration of each install program, visible to its own installs only."""
USER_PACKAGE_CONFIG = {"pip": (".config/pip/pip.conf", ".pip/pip.conf"), "npm": (".npmrc",)}
"""Per-user configuration of each install program, bound at the same place under the
sandbox's HOME for that program's installs only (cargo's is the project's ``CARGO_HOME``)."""

SANDBOX_HOME = "/tmp/home"
TOOLCHAINS = ("node", "npm", "cargo", "rustc", "go", "git")

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
PACKAGE_ENV_PREFIXES = {"pip": ("PIP_",), "npm": ("NPM_CONFIG_",), "cargo": ("CARGO_",)}
PACKAGE_ENV_NAMES = {
    "go": frozenset(
        {"GOPROXY", "GOSUMDB", "GOFLAGS", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOINSECURE"}
    )
}
"""Each install program's own settings (Go's have no common prefix)."""
PROXY_ENV_NAMES = frozenset(
    {f"{name}_PROXY" for name in ("HTTP", "HTTPS", "ALL", "NO")}
    | {f"{name}_proxy" for name in ("http", "https", "all", "no")}
)
"""The proxy every install goes through (a user's proxy, or an improve trial's egress
gate: :mod:`orchestrator.sandbox.egress`)."""


def _secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def command_env(
    extra: Mapping[str, str] | None = None,
    package_config: str = "",
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a command: the allow-list of ``base`` (default: os.environ), then
    what cadillac sets (``extra``, which may also override the allow-list). An install
    step of ``package_config`` (a name of :data:`PACKAGE_TOOLS`) also gets that program's
    own settings and the proxy, never another program's."""
    if package_config and package_config not in PACKAGE_TOOLS:
        raise ValueError(f"no install program named {package_config!r}")
    source = os.environ if base is None else base
    prefixes = PACKAGE_ENV_PREFIXES.get(package_config, ())
    names = PACKAGE_ENV_NAMES.get(package_config, frozenset())
    if package_config:
        names = names | PROXY_ENV_NAMES
    env: dict[str, str] = {}
    for name, value in source.items():
        allowed = name in BASE_ENV or name.startswith("LC_")
        if package_config and not _secret(name):
            allowed = allowed or name.startswith(prefixes) or name in names
        if allowed:
            env[name] = value
    env.setdefault("PATH", os.defpath)
    env.update(extra or {})
    return env


def _under(path: Path, roots: Iterable[str]) -> bool:
    return any(path == Path(root) or path.is_relative_to(root) for root in roots)


def _install_root(program: Path) -> Path:
    """``/x/y/bin/prog`` -> ``/x/y``; a program not in a ``bin`` folder -> its folder."""
    folder = program.parent
    return folder.parent if folder.name == "bin" else folder


HOME_TOOLCHAINS = (
    ".pyenv/versions/*",
    ".nvm/versions/node/*",
    ".volta/tools/image/node/*",
    ".local/share/fnm/node-versions/*/installation",
    ".asdf/installs/*/*",
    ".local/share/mise/installs/*/*",
    ".local/share/uv/python/*",
    ".rustup/toolchains/*",
    ".rustup/settings.toml",
    ".rustup/update-hashes",
    ".cargo/bin",
    "sdk/*",
    ".local/go",
)
"""The only folders inside a home that are ever bound: one toolchain's own install each
(and rustup's proxies in ``~/.cargo/bin``, never ``~/.cargo`` with its credentials)."""
NEVER_BOUND = ("/etc", "/proc", "/sys", "/dev", "/run", "/boot", "/var", "/home", "/root")
"""Folders whose contents are the host's, never a toolchain's install root."""


def _homes() -> list[Path]:
    """The user's home (``HOME`` and the account's), root's, and every folder in /home."""
    homes = [Path(os.path.expanduser("~")), Path("/root")]
    with contextlib.suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.geteuid()).pw_dir))
    with contextlib.suppress(OSError):
        homes += [p for p in Path("/home").iterdir() if p.is_dir()]
    return [Path(os.path.realpath(h)) for h in homes if str(h) not in ("", "/")]


def _allowed(root: Path, homes: Sequence[Path]) -> bool:
    """A root cadillac may bind: inside a home, only a named toolchain folder; elsewhere
    never the disk, a top-level folder or anything under the host's own folders."""
    for home in homes:
        if root == home or home.is_relative_to(root):
            return False
        if root.is_relative_to(home):
            rel = root.relative_to(home)
            return any(
                len(rel.parts) == len(Path(p).parts) and rel.match(p) for p in HOME_TOOLCHAINS
            )
    if len(root.parts) < 3:  # "/" or "/x"
        return False
    return not _under(root, NEVER_BOUND)


def toolchain_roots(programs: Sequence[str] = TOOLCHAINS) -> list[Path]:
    """The install folders a build's toolchains need, outside the system folders.

    Found on the host's own ``PATH`` (cadillac's environment: never a ``PATH`` a workspace's
    ``.venv/bin`` is on, whose links the model made), once for each ``PATH`` and home.
    The interpreter cadillac runs on (its base install, which every workspace's virtual
    environment links to) always; each of ``programs`` found there, resolved; and for a
    rustup install its ``bin`` folder (never the whole ``~/.cargo``, whose
    ``credentials.toml`` and ``config.toml`` are the user's), its toolchains and settings.
    Inside a home only the folders :data:`HOME_TOOLCHAINS` names are bound: a program that
    resolves anywhere else there (``~/.local/bin``) is not.
    """
    home_env = (os.environ.get("HOME", ""), os.environ.get("RUSTUP_HOME", ""))
    return list(_roots(tuple(programs), os.environ.get("PATH", os.defpath), home_env))


@functools.cache
def _roots(programs: tuple[str, ...], path: str, _homes_env: tuple[str, str]) -> tuple[Path, ...]:
    homes = _homes()
    found: list[Path] = [Path(os.path.realpath(sys.base_prefix))]
    base_exe = getattr(sys, "_base_executable", None) or sys.executable
    found.append(_install_root(Path(os.path.realpath(base_exe))))
    for name in programs:
        where = shutil.which(name, path=path)
        if where is None:
            continue
        real = Path(os.path.realpath(where))
        if real.name == "rustup":  # ~/.cargo/bin only: ~/.cargo also holds credentials.toml
            found.append(real.parent)
            rustup_home = os.environ.get("RUSTUP_HOME") or str(real.parents[2] / ".rustup")
            rustup = Path(os.path.realpath(rustup_home))
            found += sorted(rustup.glob("toolchains/*"))
            found += [rustup / "settings.toml", rustup / "update-hashes"]
        else:
            install = _install_root(real)
            found.append(install if _allowed(install, homes) else real.parent)
    roots: list[Path] = []
    for root in found:
        if not root.exists() or _under(root, SYSTEM_DIRS) or root in roots:
            continue
        if _allowed(root, homes):
            roots.append(root)
    return tuple(roots)


def toolchain_env(roots: Sequence[Path]) -> dict[str, str]:
    """Variables a bound toolchain needs to find itself: rustup's home, when it is bound."""
    rustup = [r.parents[1] for r in roots if r.parent.name == "toolchains"]
    return {"RUSTUP_HOME": str(rustup[0])} if rustup else {}


def _bind(flag: str, path: Path | str) -> list[str]:
    return [flag, str(path), str(path)]


SKELETON_SKIP = ("/usr", "/opt", "/etc", "/dev", "/proc")


def _skeleton(dests: Sequence[Path]) -> list[str]:
    """The folders above the bound paths, made first and open to everyone (0755): left to
    bubblewrap they copy the host's modes, and a ``/root`` of 0700 would shut the
    sandbox's unprivileged user out of a toolchain bound below it."""
    return list(_skeleton_of(tuple(dests)))


@functools.lru_cache(maxsize=64)
def _skeleton_of(dests: tuple[Path, ...]) -> tuple[str, ...]:
    """:func:`_skeleton`, worked out once per set of bound paths (the same for every
    command of a build: pure path arithmetic, a tenth of the host's time per command)."""
    made: list[str] = []
    for dest in dests:
        for folder in reversed(dest.parents):
            if folder == Path("/") or folder == Path("/tmp") or _under(folder, SKELETON_SKIP):
                continue
            if any(folder == d or folder.is_relative_to(d) for d in dests):
                break  # inside another bound path: that one holds it
            if str(folder) not in made:
                made.append(str(folder))
    return tuple(a for folder in made for a in ("--perms", "0755", "--dir", folder))


def package_config_files(
    package_config: str, user_home: Path | None = None
) -> list[tuple[Path, str]]:
    """The configuration files of install program ``package_config``, as ``(file on the
    host, where the sandbox sees it)``: the system's, the user's (under the sandbox's
    HOME) and pip's ``PIP_CONFIG_FILE``. Folders (``/etc/xdg/pip``) are included whole."""
    found = [(Path(p), p) for p in PACKAGE_CONFIG.get(package_config, ()) if os.path.exists(p)]
    home = user_home or Path(os.path.expanduser("~"))
    for rel in USER_PACKAGE_CONFIG.get(package_config, ()):
        if (home / rel).is_file():
            found.append((home / rel, f"{SANDBOX_HOME}/{rel}"))
    conf = os.environ.get("PIP_CONFIG_FILE")
    if package_config == "pip" and conf and os.path.isfile(conf):
        found.append((Path(conf), conf))
    return found


def mounts(
    workspace: Path,
    *,
    proc: str,
    toolchains: Sequence[Path],
    visible: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    package_config: str = "",
    user_home: Path | None = None,
    config_sources: Mapping[str, Path] | None = None,
    tmp_size: int = 1024**3,
) -> list[str]:
    """The bubblewrap arguments that build the sandbox's file system (see the module docstring).

    ``proc`` is ``"mount"`` (a fresh /proc of the sandbox's PID namespace) or ``"bind"``
    (inside another sandbox, where a fresh proc cannot be mounted: the outer one's).
    ``/tmp`` and ``/dev/shm`` are tmpfs of ``tmp_size`` bytes each, writable by the
    sandbox's user whoever it is. ``config_sources`` maps a destination of
    :func:`package_config_files` to the file bound there instead (a private copy).
    """
    args: list[str] = []
    for top in TOP_LINKS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += _bind("--ro-bind", top)
    for folder in SYSTEM_DIRS:
        if os.path.isdir(folder):
            args += _bind("--ro-bind", folder)
    etc = Path("/etc")
    names = [n for n in ETC if (etc / n).exists()]
    for pattern in ETC_GLOBS:
        names += sorted(p.name for p in etc.glob(pattern))
    args += ["--perms", "0755", "--dir", "/etc"]  # else bubblewrap makes it 0700
    for name in names:
        args += _bind("--ro-bind", etc / name)
    size = ["--size", str(tmp_size)]
    args += ["--dev", "/dev", "--perms", "1777", *size, "--tmpfs", "/dev/shm"]
    args += ["--proc", "/proc"] if proc == "mount" else _bind("--ro-bind", "/proc")
    args += ["--perms", "1777", *size, "--tmpfs", "/tmp", "--perms", "0777", "--dir", SANDBOX_HOME]
    binds: list[str] = []
    for root in toolchains:
        binds += _bind("--ro-bind", root)
    if package_config:  # one install program's own configuration, none of another's
        sources = dict(config_sources or {})
        for source, dest in package_config_files(package_config, user_home):
            binds += ["--ro-bind", str(sources.get(dest, source)), dest]
    for path in visible:
        binds += _bind("--ro-bind", Path(path).resolve())
    binds += _bind("--bind", workspace)
    for path in writable:
        binds += _bind("--bind", Path(path).resolve())
    args += _skeleton([Path(dest) for dest in binds[2::3]])
    args += binds
    return [*args, "--remount-ro", "/"]  # the skeleton bwrap built the mounts on: read-only
