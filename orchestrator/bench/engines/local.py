"""The engines of one machine: a thread of the coordinator, or a process per build.

A worker process is forked from a fork server that imported cadillac and litellm once
(:data:`PRELOAD`; a fresh interpreter per build would spend seconds importing before its
first model call), and takes the coordinator's environment with its job, so it sees the
same home, scope and keys the coordinator was started with. Its result comes back through
a pipe; a thread per worker waits for it and for the process's end, so a worker that dies
without a word is reported as ``crashed`` with its exit status, never lost.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import queue
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable

from orchestrator.bench.engines.worker import BuildJob, failed, process_main, run_job

_lock = threading.Lock()
PRELOAD = [
    "orchestrator.bench.engines.worker",
    "orchestrator.bench.matrix",
    "orchestrator.llm.preload",
]
"""What the fork server imports once, before it forks any build (litellm among them: see
:mod:`orchestrator.llm.preload`)."""


def _fork_server():
    """The fork server's context, with cadillac imported in it.

    Its socket lives in multiprocessing's temporary folder, which it makes once under the
    temporary folder of the moment; a folder that went away since (a test's) would leave
    every later build unable to start, so the folder is cadillac's own under ``/tmp``, and
    a server whose socket is gone is started afresh."""
    from multiprocessing import forkserver, process

    with _lock:
        config = process.current_process()._config
        folder = config.get("tempdir")
        if folder is None or not os.path.isdir(folder):
            folder = tempfile.mkdtemp(prefix="cadillac-mp-", dir="/tmp")
            config["tempdir"] = folder
            atexit.register(shutil.rmtree, folder, True)
        server = forkserver._forkserver
        address = server._forkserver_address
        if address is not None and not os.path.exists(address):
            server._stop()
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx


class ThreadEngine:
    """Builds in threads of this process (one job: what a single build does)."""

    def __init__(self, ended: queue.Queue, on_builder: Callable | None, hooks):
        self.ended, self.on_builder, self.hooks = ended, on_builder, hooks
        self.stopping = threading.Event()

    def submit(self, job: BuildJob) -> None:
        def one() -> None:
            try:
                outcome = run_job(job, self.on_builder, self.stopping, self.hooks)
            except BaseException as exc:  # noqa: BLE001 - a worker's end is always reported
                outcome = failed(job, "crashed", repr(exc)[:500])
            self.ended.put(outcome)

        threading.Thread(target=one, daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()  # running builds kill their commands and end, saying "interrupted"

    def kill(self) -> None:
        """A thread cannot be killed: one waiting on a model call is left to end with us."""

    def close(self) -> None:
        pass


class ProcessEngine:
    """A worker process per build (see the module docstring)."""

    def __init__(self, ended: queue.Queue, on_builder: Callable | None):
        self.ended, self.on_builder = ended, on_builder
        self.ctx = _fork_server()
        self.workers: dict[int, multiprocessing.process.BaseProcess] = {}
        self.lock = threading.Lock()

    def submit(self, job: BuildJob) -> None:
        job = job.model_copy(update={"env": dict(os.environ)})
        receive, send = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(
            target=process_main,
            args=(job, self.on_builder, send),
            name=f"cadillac-build-{job.task.id}-{job.repeat}",
            daemon=True,
        )
        proc.start()
        send.close()  # the worker holds the only writing end: its end is our EOF
        with self.lock:
            self.workers[proc.pid] = proc
        threading.Thread(target=self._wait, args=(job, proc, receive), daemon=True).start()

    def _wait(self, job: BuildJob, proc, receive) -> None:
        try:
            outcome = receive.recv()
        except (EOFError, OSError):
            outcome = None
        except Exception as exc:  # noqa: BLE001 - an outcome that cannot be read
            outcome = failed(job, "crashed", f"its outcome could not be read: {exc}"[:500])
        finally:
            receive.close()
        proc.join()
        with self.lock:
            self.workers.pop(proc.pid, None)
        if outcome is None:
            code = proc.exitcode
            why = (
                f"killed by signal {-code}"
                if code is not None and code < 0
                else f"exit status {code}"
            )
            status = "interrupted" if code == -signal.SIGKILL and self.killed else "crashed"
            why = f"the build's worker process ended with no result ({why})"
            outcome = failed(job, status, why)
        self.ended.put(outcome)

    killed = False

    def _signal(self, sig: int) -> None:
        with self.lock:
            live = list(self.workers.values())
        for proc in live:
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.kill(proc.pid, sig)

    def stop(self) -> None:
        self._signal(signal.SIGINT)

    def kill(self) -> None:
        self.killed = True
        self._signal(signal.SIGKILL)

    def close(self) -> None:
        pass
