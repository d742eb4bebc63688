"""``cadillac nightly``: one improve cycle under a time budget, a lock per home, and a report.

What this module decides, and why:

* One nightly at a time per home (the lock: :mod:`orchestrator.nightly.records`);
  a second nightly says which process holds the lock and exits 0 (cron should not
  mail an error for it).
* Each night writes ``runs/nightly-<date>/``: ``nightly.json`` (status, times,
  models, the improve run), ``nightly.log`` (also echoed to the terminal, so
  cron mail stays short), the improve run's records in ``improve/``, and
  ``report.html`` / ``report.md``. The report is written when the night
  starts, after every iteration and at the end, so a night that is killed
  still leaves a report, and its status says what happened: SIGTERM or Ctrl-C
  mark it ``interrupted`` at once; a SIGKILL leaves ``running``, which
  ``cadillac report`` turns into ``interrupted`` once no process holds the lock.
* Everything that can be checked is checked before anything is made (the models, the
  sandbox, the repository, the matrix and its alpha, whether a scripted builder's module
  can reach the trials: :mod:`orchestrator.improve.carried`): a night that cannot run says why
  in one line, exit status 1, and leaves no run folder, no report and no lock file (nor
  the home, if it did not exist). Cron's log (``runs/nightly-cron.log``) keeps that line.
* Exit status 0 when the cycle ran, whether or not a patch was accepted; 1 when it
  failed once running, after the night's record and report say so.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from pathlib import Path

from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import Hooks
from orchestrator.improve.setup import CycleRequest
from orchestrator.nightly.records import NightlyLock, NightlyRecord, night_folder
from orchestrator.nightly.report import write_reports
from orchestrator.sandbox.files import replace_file

FORMAT = logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")


def _logger(folder: Path) -> logging.Logger:
    """The night's log: its file at once; the terminal too once the cycle can run."""
    log = logging.getLogger(f"cadillac.nightly.{folder.name}")
    log.setLevel(logging.INFO)
    log.propagate = False
    handler = logging.FileHandler(folder / "nightly.log")
    handler.setFormatter(FORMAT)
    log.addHandler(handler)
    return log


def _echo(log: logging.Logger) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FORMAT)
    log.addHandler(handler)


def run_nightly(
    home: Home, request: CycleRequest, quiet: bool = False, hooks: Hooks | None = None
) -> int:
    """The whole nightly (see the module docstring); returns the exit status. ``hooks``:
    the plugins told of each decision (None: the installed ones).

    CadillacError, with nothing made, when the night cannot run."""
    if home.root.exists():
        home.check(write=True)
    log: logging.Logger | None = None
    save_now = None

    def event(text: str) -> None:
        if log is not None:
            log.info(text)
        if save_now and text.startswith("iter ") and not _is_weakness(text):
            save_now()  # an iteration ended: the report shows it now

    cycle = _cycle(home, request, event, hooks)  # every check: fails here, before anything is made
    home.check(write=True)
    lock = NightlyLock(home)
    home.runs_dir.mkdir(parents=True, exist_ok=True)
    folder = night_folder(home)
    if not lock.acquire(folder):
        print(
            f"cadillac: a nightly is already running in {home.root}: {lock.holder()}; "
            "nothing to do",
            file=sys.stderr,
        )
        return 0
    folder.mkdir(parents=True)
    cycle.folder_override = folder / "improve"
    log = _logger(folder)
    record = NightlyRecord(
        date=folder.name.removeprefix("nightly-"),
        model=request.builder.model,
        improver_model=request.improver.model,
    )

    def save() -> None:
        replace_file(folder / "nightly.json", record.model_dump_json(indent=2) + "\n")
        write_reports(home, folder)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    save()
    save_now = save
    log.info(f"nightly {folder.name} started in {home.root} (pid {record.pid})")
    code = 0
    try:
        if not quiet:
            _echo(log)
        summary = cycle.run()
        record.improve_id = summary.id
        record.status = "finished"
        accepted = sum(1 for it in summary.iterations if it.status == "accepted")
        record.reason = (
            f"{len(summary.iterations)} iteration(s), {accepted} patch(es) accepted; "
            f"{summary.stopped_because}"
        )
        if summary.apply_note:
            record.reason += f"; {summary.apply_note}"
    except KeyboardInterrupt:
        record.status, record.reason = "interrupted", "interrupted before the cycle ended"
        code = 130
    except CadillacError as exc:
        record.status, record.reason = "failed", f"could not run: {exc}"
        print(f"cadillac: error: {exc}", file=sys.stderr)
        code = 1
    except Exception as exc:  # a bug: keep it in the log and the report
        record.status, record.reason = "failed", f"internal error: {type(exc).__name__}: {exc}"
        log.exception("nightly failed")
        code = 1
    finally:
        if cycle.summary is not None:
            record.improve_id = cycle.summary.id
        record.ended = time.time()
        signal.signal(signal.SIGTERM, previous)
        log.info(f"nightly {record.status}: {record.reason}")
        save()
        log.info(f"report: {folder / 'report.html'}")
        lock.release()
        for handler in list(log.handlers):
            handler.close()
            log.removeHandler(handler)
    return code


def _is_weakness(text: str) -> bool:
    return text.split(": ", 1)[-1].startswith("weakness")


def _cycle(home: Home, request: CycleRequest, event, hooks: Hooks | None):
    """The night's cycle, checked (models, sandbox, repository, matrix); its folder is set
    once the night has one."""
    from orchestrator.improve.setup import make_cycle

    return make_cycle(home, request, on_event=event, hooks=hooks)
