"""Trying code in isolation: the project's own tests and the matrix, sandboxed, judged outside.

A trial's code (the baseline's commit, or a candidate patch in a worktree) is not
trusted with the judge. So:

* its **tests** run in the sandbox: the worktree and cadillac's own environment visible
  read-only, a private ``/tmp``, no network and no user variable (:func:`run_tests`);
* its **builds** run in the sandbox too (:class:`SandboxedMatrix`): ``cadillac matrix run
  --build-only`` with the trial's code first on ``PYTHONPATH``, seeing the worktree
  read-only and the trial's own folder read-write, which holds a frozen copy of the home's
  memory and budgets and a copy of the matrix *without* its hidden checks. It has no
  network: a trial whose models are built in (``scripted:``, ``replay:``) needs none, and
  one whose model is reached over the network reaches that model's host and the package
  registries alone, through an egress gate in this process
  (:mod:`orchestrator.sandbox.egress`; its decisions in the trial's ``egress.jsonl``). Its
  environment holds only the variables the builder model needs
  (:func:`orchestrator.llm.keys.provider_env`). The spend a trial reports is its own claim:
  the books charge the larger of it and what the gate counted
  (:mod:`orchestrator.improve.spend`), read from the gate in this process, never from a
  file of the trial's;
* the trial's builds are then **scored by this process** (the code the cycle started
  with: the baseline's), with the hidden checks the trial never saw
  (:func:`orchestrator.bench.scoring.score_build`). The candidate's code builds; it never
  scores itself. What the trial reports is read as data and checked: run ids must name
  run folders of the trial, each task and repeat once. Scoring happens in the iteration's
  ``judge/<label>-trial/`` folder, which no trial's sandbox ever sees, so the hidden checks
  are never copied where a trial could have pointed a link.

A trial's folder is written by the trial, so the host never writes through a name in it:
``trial.log`` and the records :func:`mark_interrupted` fixes are written under a fresh
name and renamed over, ``egress.jsonl`` is appended with ``O_NOFOLLOW``
(:mod:`orchestrator.sandbox.files`). A trial whose folder holds a link, a FIFO, a device
or a file with a second hard link outside its builds' workspaces, or a ``scoring`` folder, is
judged ``broken`` as a whole, with the reason (:func:`folder_problem`).

The trial process makes itself non-dumpable before it imports the trial's code, so the
build commands it sandboxes in turn (whose sandbox shares its ``/proc``) cannot read its
environment or memory.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from orchestrator.bench.results import NOT_BUILT, GateSpend, MatrixResults, TaskRun, summarise
from orchestrator.bench.scoring import score_build
from orchestrator.bench.tasks import MatrixTask, load_matrix
from orchestrator.errors import CadillacError
from orchestrator.home import Home
from orchestrator.hooks import NO_PLUGINS_ENV
from orchestrator.improve import spend
from orchestrator.improve.carried import Carried
from orchestrator.improve.suite import SuiteRun, failed_tests
from orchestrator.llm.backends import is_builtin
from orchestrator.llm.client import LLMConfig
from orchestrator.llm.keys import provider_env
from orchestrator.loop.runs import RunSummary, TaskRecord, new_run_id
from orchestrator.sandbox import egress
from orchestrator.sandbox.executor import ExecConfig, executor_for, run_command
from orchestrator.sandbox.files import kind_of, read_regular, remove_tree, replace_file, what_is
from orchestrator.sandbox.installs import remove_envs

RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
LAUNCHER = (
    "import ctypes, os, runpy, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "  # not dumpable
    "os.environ.get('CADILLAC_EGRESS_SOCKET') and "  # the way out, when there is a gate
    "__import__('orchestrator.sandbox.egress').sandbox.egress.use_relay(); "
    "sys.argv = ['cadillac', *sys.argv[1:]]; runpy.run_module('orchestrator', run_name='__main__')"
)


def trial_config(executor: ExecConfig, timeout_s: float, jobs: int = 1) -> ExecConfig:
    """The sandbox of a trial process: the build's settings, with room for a whole matrix
    (its folder holds every build's workspace, each bounded by the build's own limits) and,
    in its memory cgroup, for cadillac and ``jobs`` builds' commands at once."""
    room = executor.workspace.model_copy(
        update={
            "max_files": executor.workspace.max_files * TRIAL_WORKSPACES,
            "max_bytes": executor.workspace.max_bytes * TRIAL_WORKSPACES,
        }
    )
    return executor.model_copy(
        update={
            "default_timeout_s": timeout_s,
            "max_timeout_s": timeout_s,
            "cpu_limit_s": int(timeout_s),
            "output_cap_bytes": 400_000,
            "workspace": room,
            "cgroup_bytes": executor.cgroup_room() * (jobs + 1),
        }
    )


TRIAL_WORKSPACES = 40
"""How many builds' workspaces a trial's folder has room for (the default matrix has 31 tasks)."""


def runtime_paths() -> list[Path]:
    """What a Python running cadillac needs to see: its environment (a venv), resolved."""
    paths = [Path(sys.prefix), Path(os.path.realpath(sys.prefix))]
    return list(dict.fromkeys(p for p in paths if p.is_dir()))


def run_tests(
    code: Path,
    command: Sequence[str],
    log: Path,
    executor: ExecConfig,
    timeout_s: float = 1800,
) -> SuiteRun:
    """The project's own tests with the code in ``code``, sandboxed; output to ``log``;
    what failed by name (:mod:`orchestrator.improve.suite`)."""
    scratch = log.parent / f"{log.stem}-scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    line = f"cd {shlex.quote(str(code))} && {shlex.join(command)}"
    result = run_command(
        line,
        scratch,
        trial_config(executor, timeout_s, jobs=2),
        timeout_s=timeout_s,
        env={"PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"},
        visible=[code, *runtime_paths()],
    )
    remove_tree(scratch)
    text = f"$ {shlex.join(command)}\n{result.for_model()}\n"
    replace_file(log, text)
    return SuiteRun(result.ok, failed_tests(result.output), text)


@dataclass
class RoundSpec:
    """One round of builds a runner is asked for."""

    repeats: int = 1
    split: str = "all"
    """train, holdout or all."""
    seed: int | None = None
    """The same for the baseline's and the candidate's round, so anything random matches."""
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    """What the cycle may still spend: no build starts once the round spent it."""
    tasks: list[str] | None = None
    """Only these tasks (of the split); None: every task of the split."""


class CapReached(CadillacError):
    """A round stopped starting builds at the spend cap: its results are incomplete.

    ``spent`` holds the builds the round did make (as the trial reported them, unscored),
    so the cycle's books count what they cost."""

    def __init__(self, message: str, spent: MatrixResults | None = None):
        super().__init__(message)
        self.spent = spent


STOPPED = "interrupted: the improve cycle was stopped (Ctrl-C or SIGTERM) and killed its trial"
RECORD_LIMIT = 4_000_000
"""The largest trial record read back (bytes): a trial's records are data, not trusted."""


TRIAL_FILES = ("trial.log", "egress.jsonl", "home/memory.jsonl", "home/phase_budgets.jsonl")
"""Names in a trial's folder that are regular files or nothing."""
UNSEEN = ("scoring",)
"""Names a trial's folder never holds: the judge's folders are made outside it."""
MAX_DEPTH = 64


def folder_problem(trial: Path) -> str:
    """Why a trial's folder, written by the trial, cannot be trusted ("" when it can).

    Run once the trial's sandbox is gone (nothing writes there any more): outside its
    builds' workspaces (``home/runs/<id>/workspace``, copied without links when scored)
    and the copy of the environment templates (``home/.cache``), every entry must be a
    folder or a regular file with one link; :data:`TRIAL_FILES` are regular files when
    present and :data:`UNSEEN` are absent.
    """
    for name in UNSEEN:
        if what_is(trial / name) != "nothing":
            return f"{name} is {what_is(trial / name) or 'a file'}; a trial never makes one"
    for name in TRIAL_FILES:
        found = what_is(trial / name)
        if found not in (None, "nothing"):
            return f"{name} is {found}; cadillac writes a regular file there"
    return _walk_problem(trial, "", MAX_DEPTH)


def _skipped(where: str) -> bool:
    parts = where.split("/")
    if parts == ["home", ".cache"]:
        return True
    return len(parts) == 4 and parts[:2] == ["home", "runs"] and parts[3] == "workspace"


def _walk_problem(folder: Path, rel: str, depth: int) -> str:
    if depth <= 0:
        return f"{rel} is deeper than {MAX_DEPTH} folders"
    with os.scandir(folder) as entries:
        found = sorted((e.name, e.stat(follow_symlinks=False)) for e in entries)
    for name, st in found:
        where = f"{rel}{name}"
        if stat.S_ISDIR(st.st_mode):
            deeper = f"{where}/", depth - 1
            problem = "" if _skipped(where) else _walk_problem(folder / name, *deeper)
            if problem:
                return problem
        elif not stat.S_ISREG(st.st_mode):
            return f"{where} is {kind_of(st.st_mode)}"
        elif st.st_nlink != 1:
            return f"{where} is a hard link ({st.st_nlink} names)"
    return ""


def mark_interrupted(home: Path) -> None:
    """Say ``interrupted`` in the records of a trial killed mid-round (its process group
    gets SIGKILL, so nothing in it could): each build of its home still ``running`` (or
    without a summary yet) and its matrix run's results. Folders and files that are links
    or not regular files are left alone; a record that cannot be read is left as it is."""
    runs = home / "runs"
    if runs.is_symlink() or not runs.is_dir():
        return
    now = time.time()
    for folder in runs.iterdir():
        if folder.is_symlink() or not folder.is_dir():
            continue
        try:
            if RUN_ID.fullmatch(folder.name):
                _interrupt_build(folder, now)
            elif folder.name.startswith("matrix-"):
                _interrupt_matrix(folder, now)
        except (OSError, ValueError):  # a record cut by the kill, or a hostile one: as it is
            continue


def _interrupt_build(folder: Path, now: float) -> None:
    summary_path = folder / "summary.json"
    if what_is(summary_path) == "nothing":
        task = TaskRecord.model_validate_json(read_regular(folder / "task.json", RECORD_LIMIT))
        summary = RunSummary(
            run_id=folder.name, task=task.task, model=task.config.get("llm", {}).get("model", "")
        )
        summary.started = task.created
    else:
        summary = RunSummary.model_validate_json(read_regular(summary_path, RECORD_LIMIT))
        if summary.status != "running":
            return
    summary.status, summary.reason, summary.ended = "interrupted", STOPPED, now
    summary.seconds = round(max(0.0, now - summary.started), 3)
    replace_file(summary_path, summary.model_dump_json(indent=2) + "\n")


def _interrupt_matrix(folder: Path, now: float) -> None:
    path = folder / "results.json"
    results = MatrixResults.model_validate_json(read_regular(path, RECORD_LIMIT))
    if results.ended is not None and results.stopped_because:
        return
    results.stopped_because, results.ended = "interrupted", results.ended or now
    for run in results.runs:
        if run.status == "running":
            run.status = "interrupted"
    replace_file(path, results.model_dump_json(indent=2) + "\n")


class MatrixRunner(Protocol):
    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        """A round of the matrix built with the orchestrator in ``code`` and scored by the
        judge; ``folder`` is the trial's own. Raises CapReached when the round was cut."""
        ...


class SandboxedMatrix:
    """Builds the matrix with a trial's code in a sandbox, then scores the builds itself."""

    def __init__(
        self,
        home: Home,
        matrix: Path,
        llm: LLMConfig,
        jobs: int = 1,
        executor: ExecConfig | None = None,
        timeout_s: float = 6 * 3600,
        stop: threading.Event | None = None,
        carried: Carried | None = None,
        verbose: bool = False,
    ):
        self.home, self.matrix, self.llm = home, matrix, llm
        self.carried = carried or Carried()
        """The builder's policy modules each trial is given (see :mod:`.carried`)."""
        self.verbose = verbose
        """Each trial's matrix run traces its builds' tool calls (into its trial.log)."""
        self.jobs, self.timeout_s = jobs, timeout_s
        self.executor = executor or ExecConfig()
        self.tasks = load_matrix(matrix)
        self.stop = stop or threading.Event()
        """Once set, the round in progress is killed (its sandbox and every build in it)."""
        self.snapshot = {
            path.name: path.read_bytes()
            for path in (home.memory_path, home.budgets_path)
            if path.is_file()
        }
        """The memory and budgets as they stood when the cycle began: every trial starts there."""
        self.model_hosts: set[egress.Host] = set()
        """The models' hosts among them: the traffic the gate's spend figure counts."""
        self.egress = self._egress_hosts()
        """The hosts a trial may reach through the gate; None: no gate (no network at all,
        or, without a sandbox, the host's)."""

    def _egress_hosts(self) -> set[egress.Host] | None:
        """The model's hosts and the package registries, when a model is reached over the
        network and trials are sandboxed; CadillacError now for a host that cannot be told."""
        if not self._needs_network() or self.executor.sandbox == "none":
            return None
        from orchestrator.llm.client import litellm_module, provider_of

        litellm = litellm_module()
        endpoints = [(e.model, e.api_base) for e in self.llm.endpoints() if not is_builtin(e.model)]
        self.model_hosts = egress.model_hosts(endpoints, lambda model: provider_of(litellm, model))
        return self.model_hosts | egress.registry_hosts()

    @contextmanager
    def _way_out(
        self, trial: Path, round: RoundSpec
    ) -> Iterator[tuple[bool, dict[str, str], list[Path], egress.EgressGate | None]]:
        """(network, environment, writable folders, gate) of a trial: the host's network
        only without a sandbox; else none, and a gate to the allowed hosts when there are,
        which stops the model traffic at the round's caps."""
        if self.egress is None:
            yield self._needs_network(), {}, [], None
            return
        folder = egress.socket_folder()
        meter = spend.Meter.of(
            self.model_hosts, self._models(), round.max_cost_usd, round.max_tokens
        )
        log = trial / "egress.jsonl"
        try:
            with egress.EgressGate(folder, self.egress, log=log, meter=meter) as gate:
                yield False, {egress.SOCKET_ENV: str(gate.path)}, [folder], gate
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def interrupt(self) -> None:
        """Kill the rounds in progress (their sandboxes, and every build in them)."""
        self.stop.set()

    def run(self, code: Path, label: str, folder: Path, round: RoundSpec) -> MatrixResults:
        trial = folder / f"{label}-trial"
        remove_tree(trial)
        remove_tree(_judge_folder(trial))
        public, home = trial / "matrix", trial / "home"
        self._public_matrix(public, round.tasks)
        self._frozen_home(home)
        carried = self.carried.write(_carried_folder(trial))
        policies = [] if carried is None else [carried]
        with self._way_out(trial, round) as (network, gate_env, gate_dirs, gate):
            done = executor_for(trial_config(self.executor, self.timeout_s, self.jobs)).run(
                self._command(public, home, round),
                trial,
                timeout_s=self.timeout_s,
                network=network,
                env={**self._env([code, *policies]), **gate_env},
                visible=[code, *policies, *runtime_paths(), *self._model_files()],
                writable=gate_dirs,
                stop=self.stop,
            )
            counted = None if gate is None else self._gate_spend(gate)
            cut = "" if gate is None else gate.cut
            refused = "" if gate is None else gate.log_refused
        if carried is not None:
            remove_tree(carried)
        broken = folder_problem(trial)  # before any host write into it
        remove_tree(home / ".cache")  # its copy of the templates: some 30 MB a round, now spent
        if refused and not broken:  # the trial put something at the log's name meanwhile
            broken = f"egress.jsonl could not be written ({refused})"
        remove_tree(trial / "trial.log")  # whatever the trial left at that name
        replace_file(trial / "trial.log", done.for_model())
        if done.stopped:  # killed outright: its builds could not say so themselves
            mark_interrupted(home)
            raise KeyboardInterrupt
        claimed = self._claimed(home)
        if claimed is None and broken:
            claimed = MatrixResults(
                id=new_run_id(),
                matrix=str(public),
                model=self.llm.model,
                repeats=round.repeats,
                split=round.split,
                started=time.time(),
            )
        if claimed is None:
            said = " ".join(done.for_model()[-400:].split())  # one line: it ends a command
            raise CadillacError(f"the {label} matrix run left no results: {said}")
        if claimed.stopped_because or cut:  # the trial's own cap, or the gate's
            claimed.runs = [r for r in claimed.runs if r.status not in NOT_BUILT]
            spend.charge(claimed, counted)
            why = claimed.stopped_because or cut
            raise CapReached(f"the {label} round stopped early: {why}", claimed)
        if broken:  # nothing of it is scored: every build of the round is broken
            for run in claimed.runs:
                run.reached_validate = False
        results = self._judge(claimed, home, trial, round)
        spend.charge(results, counted)
        if broken:
            for run in results.runs:
                run.verdict, run.score = "broken", 0.0
                run.failure = f"the trial's folder cannot be trusted: {broken}"[:500]
        results.runs_dir = str(home / "runs")
        return results

    def _gate_spend(self, gate: egress.EgressGate) -> GateSpend:
        """What the gate counted of the trial's traffic to its models' hosts."""
        return spend.gate_spend(gate.traffic(), self.model_hosts, self._models())

    def _models(self) -> list[str]:
        """The models a trial reaches over the network (the priced ones, if any)."""
        return [e.model for e in self.llm.endpoints() if not is_builtin(e.model)]

    # ------------------------------------------------------------------ the trial
    def _public_matrix(self, public: Path, only: list[str] | None = None) -> None:
        """The matrix as a build may see it: each task's task.toml (and an enhance task's
        starting project, repo/), no hidden checks; with ``only``, those tasks alone."""
        for task in self.tasks:
            if only is not None and task.id not in only:
                continue
            (public / task.id).mkdir(parents=True)
            shutil.copy(task.dir / "task.toml", public / task.id / "task.toml")
            if task.kind == "enhance":
                shutil.copytree(task.repo, public / task.id / "repo", symlinks=True)

    def _frozen_home(self, home: Path) -> None:
        """The trial's home: the frozen memory and budgets, and a copy of the venv templates."""
        home.mkdir(parents=True)
        for name, data in self.snapshot.items():
            (home / name).write_bytes(data)
        cache = self.home.cache_dir  # the trial sees no host folder: its own copy
        if cache.is_dir():
            shutil.copytree(
                cache,
                home / ".cache",
                symlinks=True,
                ignore=shutil.ignore_patterns("*.lock", "*.new"),
            )

    def _command(self, public: Path, home: Path, round: RoundSpec) -> str:
        argv = ["matrix", "run", "--build-only", "--home", str(home), "--matrix", str(public)]
        argv += ["--model", self.llm.model, "--repeats", str(round.repeats)]
        argv += ["--jobs", str(self.jobs), "--split", round.split, "--no-learn", "--json"]
        if self.verbose:
            argv.append("--verbose")
        if round.seed is not None:
            argv += ["--seed", str(round.seed)]
        if round.max_cost_usd is not None:
            argv += ["--max-cost", f"{round.max_cost_usd:.6f}"]
        if round.max_tokens is not None:
            argv += ["--max-tokens", str(max(1, round.max_tokens))]
        if self.llm.api_base:
            argv += ["--api-base", self.llm.api_base]
        for i, model in enumerate(self.llm.fallback_models):
            argv += ["--fallback-model", model]
            bases = self.llm.fallback_api_bases
            if i < len(bases) and bases[i]:
                argv += ["--fallback-api-base", bases[i]]
        if self.executor.sandbox == "none":
            argv.append("--unsafe-no-sandbox")
        return shlex.join([sys.executable, "-c", LAUNCHER, *argv])

    def _env(self, path: list[Path]) -> dict[str, str]:
        # the candidate's code runs here: no plugin of the user's (they run in cadillac's
        # own process, never in a sandbox) is loaded by it
        env = {
            "PYTHONPATH": os.pathsep.join(map(str, path)),  # the code, then carried policies
            "PYTHONDONTWRITEBYTECODE": "1",
            NO_PLUGINS_ENV: "1",
        }
        for endpoint in self.llm.endpoints():
            for name in provider_env(endpoint.model, endpoint.api_base):
                if name in os.environ:
                    env[name] = os.environ[name]
        return env

    def _needs_network(self) -> bool:
        """Whether a model of the trial is reached over the network (not a built-in one)."""
        return not all(is_builtin(endpoint.model) for endpoint in self.llm.endpoints())

    def _model_files(self) -> list[Path]:
        """A replay model's recording must be visible to the trial."""
        files = []
        for endpoint in self.llm.endpoints():
            kind, _, arg = endpoint.model.partition(":")
            if kind == "replay" and Path(arg).is_file():
                files.append(Path(arg).resolve())
        return files

    # ------------------------------------------------------------------ the judge
    def _claimed(self, home: Path) -> MatrixResults | None:
        runs = home / "runs"
        if what_is(runs) != "a folder":
            return None
        found = [  # never through a link the trial made
            runs / name / "results.json"
            for name in sorted(os.listdir(runs))
            if name.startswith("matrix-") and what_is(runs / name) == "a folder"
        ]
        if len(found) != 1:
            return None
        try:
            return MatrixResults.model_validate_json(read_regular(found[0], RECORD_LIMIT))
        except (ValidationError, ValueError, OSError):
            return None

    def _judge(
        self, claimed: MatrixResults, home: Path, trial: Path, round: RoundSpec
    ) -> MatrixResults:
        chosen = [
            t
            for t in self.tasks
            if round.split in ("all", t.split) and (round.tasks is None or t.id in round.tasks)
        ]
        tasks = {t.id: t for t in chosen}
        wanted = {(t, r) for t in tasks for r in range(round.repeats)}
        runs: dict[tuple[str, int], TaskRun] = {}
        for run in claimed.runs:
            key = (run.task_id, run.repeat)
            if key in wanted and key not in runs:
                runs[key] = run
        results = MatrixResults(
            id=new_run_id(),
            matrix=str(self.matrix),
            model=self.llm.model,
            repeats=round.repeats,
            split=round.split,
            started=claimed.started,
            ended=claimed.ended,
        )
        todo = []
        for task_id, repeat in sorted(wanted):
            run = runs.get((task_id, repeat))
            if run is None or run.status in NOT_BUILT:  # a skipped build would drop out: 0
                failure = "the trial reported no build of this task"
                run = TaskRun(task_id=task_id, repeat=repeat, status="missing", failure=failure)
            else:
                run = TaskRun.model_validate(run.model_dump())
                run.score, run.checks_passed, run.checks_total = 0.0, 0, 0
                run.verdict = "not_scored"
            results.runs.append(run)
            if run.reached_validate:
                todo.append(run)
        with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
            list(pool.map(lambda run: self._score(run, tasks[run.task_id], home, trial), todo))
        summarise(results, chosen)
        return results

    def _score(self, run: TaskRun, task: MatrixTask, home: Path, trial: Path) -> None:
        if not RUN_ID.fullmatch(run.run_id):
            run.verdict, run.failure = "broken", f"the trial named no run folder ({run.run_id!r})"
            return
        workspace = home / "runs" / run.run_id / "workspace"
        if workspace.resolve() != home.resolve() / "runs" / run.run_id / "workspace":
            run.verdict, run.failure = "broken", "the trial's run folder goes through a link"
            return
        try:
            scored = score_build(
                task,
                workspace,
                _judge_folder(trial) / run.run_id,
                self.executor,
                self.home.cache_dir,
            )
        except Exception as exc:  # a workspace that is a link, is missing, or worse
            run.verdict, run.failure = "broken", f"the workspace cannot be scored: {exc}"[:500]
            return
        finally:  # the environments are re-made by any later scoring; a night keeps sources
            remove_envs(_judge_folder(trial) / run.run_id / "project")
            remove_envs(workspace)
        run.checks_passed, run.checks_total = scored.passed, scored.total
        run.score, run.verdict, run.failure = scored.score, scored.verdict, scored.failures


def _carried_folder(trial: Path) -> Path:
    """Where a trial's carried policy modules are written: beside its folder (the
    iteration's ``carried/<label>-trial``), visible to it read-only."""
    return trial.parent / "carried" / trial.name


def _judge_folder(trial: Path) -> Path:
    """Where a trial's builds are scored: beside the trial's folder, never inside it (the
    iteration's ``judge/<label>-trial``), so no sandboxed process ever had it."""
    return trial.parent / "judge" / trial.name
