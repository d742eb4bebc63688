"""The network is granted by an install step cadillac issued, never by a caller's flag.

A patch to patchable code (phases/, orchestrator/loop/) that asks run_command or
ctx.run for the network, forges an InstallStep, or swaps an issued step's command, is
refused and its command never reaches the host's listener."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from orchestrator.sandbox.executor import ExecConfig, run_command
from orchestrator.sandbox.installs import InstallStep, install_steps
from orchestrator.sandbox.registry_deps import InstallError
from orchestrator.sandbox.workspace import Workspace
from phases.base import PhaseContext, run_step


@pytest.fixture
def listener():
    with socket.socket() as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        tcp.settimeout(0.2)
        yield tcp


def _connect(tcp: socket.socket) -> str:
    port = tcp.getsockname()[1]
    return f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"


def _nobody_connected(tcp: socket.socket) -> bool:
    try:
        tcp.accept()[0].close()
    except TimeoutError:
        return True
    return False


def test_run_command_takes_no_network_flag(ws: Path, listener):
    with pytest.raises(TypeError):
        run_command(_connect(listener), ws, ExecConfig(), timeout_s=20, network=True)
    with pytest.raises(TypeError):
        run_command("true", ws, ExecConfig(), package_config="pip")
    assert _nobody_connected(listener)


def test_ctx_run_takes_no_network_flag(ws: Path, listener):
    def run(command, timeout_s=None, **kw):  # the agent's runner, forwarding what it is given
        return run_command(command, ws, ExecConfig(), timeout_s=timeout_s, **kw)

    ctx = PhaseContext(task="t", workspace=Workspace(ws), run=run, cache_dir=ws)
    with pytest.raises(TypeError):
        run_step(ctx, "x", _connect(listener), 20, network=True)
    forged = InstallStep("x", _connect(listener), network=True, tool="pip")
    with pytest.raises(InstallError, match="not an install step cadillac issued"):
        run_step(ctx, "x", forged.command, 20, install=forged)
    assert _nobody_connected(listener)


def test_a_forged_install_step_is_refused_and_nothing_runs(ws: Path, listener):
    forged = InstallStep("x", _connect(listener) + "; touch ran", network=True, tool="pip")
    with pytest.raises(InstallError, match="not an install step cadillac issued"):
        run_command(forged.command, ws, ExecConfig(), timeout_s=20, install=forged)
    assert _nobody_connected(listener) and not (ws / "ran").exists()


def test_an_issued_step_with_another_command_is_refused(ws: Path, listener):
    (ws / "package.json").write_text('{"name": "p", "version": "1.0.0"}\n')
    (step,) = install_steps(ws, ["package.json"])
    swapped = dataclasses.replace(step, command=_connect(listener))
    with pytest.raises(InstallError, match="not an install step cadillac issued"):
        run_command(swapped.command, ws, ExecConfig(), timeout_s=20, install=swapped)
    with pytest.raises(InstallError, match="differs from the issued step"):
        run_command(_connect(listener), ws, ExecConfig(), timeout_s=20, install=step)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.command = _connect(listener)  # type: ignore[misc]
    assert _nobody_connected(listener)
