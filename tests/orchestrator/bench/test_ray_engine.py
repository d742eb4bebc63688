"""``--engine ray`` on a real cluster: a head and a worker node on this machine, each with its
own temporary folder and HOME, as ``ray start`` makes them on two machines.

The coordinator is ``cadillac matrix run`` in a process of its own; the builds are Ray tasks.
Checked: builds run on both nodes and score as a local run of the same seed does; learning
comes back and the coordinator alone writes the home (no workspace, no Ray file, nothing in
the nodes' homes); a worker killed mid-build is retried on the other node, killed twice it is
``lost`` and not scored; Ctrl-C (SIGINT to the coordinator, SIGTERM too) stops the remote
builds within seconds; a node running other code is refused in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ray_cluster import ROOT, Cluster, start_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("ray")]

SMALL = ROOT / "tests" / "fixtures" / "matrix_small"
BUILDER = "scripted:tests.fakes.stalling:stalling_builder"
STOP_WITHIN_S = 20.0


@pytest.fixture(scope="module")
def cluster():
    made = start_cluster(workers=1)
    yield made
    made.stop()


def coordinator(cluster: Cluster | None, home: Path, *args: str, user_home: Path):
    """``cadillac matrix run ARGS`` against the cluster, in a process of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CADILLAC_HOME": str(home),
        "HOME": str(user_home),
        "CADILLAC_TEST_STALL_DIR": str(cluster.stall_dir) if cluster else "",
        **(cluster.client_env() if cluster else {}),
    }
    argv = [sys.executable, "-m", "orchestrator", "matrix", "run", "--matrix", str(SMALL)]
    argv += ["--model", BUILDER, "--seed", "7", *args]
    if cluster is not None:
        argv += ["--engine", "ray", "--ray-address", cluster.address]
    return subprocess.Popen(
        argv,
        env=env,
        cwd=str(user_home),  # Ray puts the driver's folder first on its workers' import path
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def results(home: Path) -> dict:
    (found,) = (home / "runs").glob("matrix-*/results.json")
    return json.loads(found.read_text())


def files_of(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_builds_run_on_both_nodes_score_as_a_local_run_and_only_the_coordinator_writes(
    cluster, tmp_path
):
    cluster.stalls(0)
    user = tmp_path / "user"
    user.mkdir()
    remote, local = tmp_path / "remote", tmp_path / "local"
    code, out, err = finish(coordinator(cluster, remote, "--jobs", "3", user_home=user))
    assert code == 0, err[-3000:]
    code, _, err2 = finish(coordinator(None, local, "--jobs", "3", user_home=user))
    assert code == 0, err2[-3000:]
    on_ray, here = results(remote), results(local)

    def scores(r):
        return sorted(
            (run["task_id"], run["repeat"], run["score"], run["verdict"]) for run in r["runs"]
        )

    assert scores(on_ray) == scores(here)
    assert on_ray["score"] == here["score"]
    nodes = {run["node"] for run in on_ray["runs"]}
    assert len(nodes) == 2, nodes  # both the head and the worker built
    # the learning came back and the coordinator applied it, as a local run's does (the
    # local run's later builds also boost what its earlier ones taught: Ray's builds all
    # read the memory as the run began)
    for kind in ("record_phase", "save_lesson"):
        assert on_ray["learning_applied"][kind] == here["learning_applied"][kind], kind
    assert on_ray["learning_applied"].get("record_phase", 0) > 0
    assert (remote / "phase_budgets.jsonl").read_text().count("\n") == (
        local / "phase_budgets.jsonl"
    ).read_text().count("\n")
    # each build's records are in the home, written by the coordinator; its workspace and
    # scored copy stayed on the node
    for run in on_ray["runs"]:
        folder = remote / "runs" / run["run_id"]
        assert {"summary.json", "events.jsonl", "task.json"} <= files_of(folder), run
        assert not (folder / "workspace").exists()
        assert not (folder / "scoring" / "project").exists()
    # nothing of Ray's or of cadillac's in the user's home or the nodes' homes (a probe of
    # the host's rustup leaves its settings.toml, as on any machine)
    for folder in [user, *(cluster.root / node / "home" for node in cluster.nodes)]:
        left = {f for f in files_of(folder) if f != ".rustup/settings.toml"}
        assert left == set(), (folder, left)
    assert not list(remote.rglob("auth_token"))
    assert "Traceback" not in err


def test_a_killed_worker_is_retried_on_the_other_node_and_twice_killed_is_lost(cluster, tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    # killed once: the build is retried, on the other node, and scored
    cluster.stalls(1)
    home = tmp_path / "once"
    proc = coordinator(cluster, home, "--task", "wf-a", "--jobs", "1", user_home=user)
    (pid,) = cluster.stalled(1)
    os.kill(pid, signal.SIGKILL)
    code, _, err = finish(proc)
    assert code == 0, err[-3000:]
    (run,) = results(home)["runs"]
    assert run["status"] == "passed" and run["score"] > 0, run
    # killed twice: lost, recorded, never a score
    cluster.stalls(2)
    home = tmp_path / "twice"
    proc = coordinator(cluster, home, "--task", "wf-a", "--jobs", "1", user_home=user)
    first, _ = cluster.stalled(1)[0], None
    os.kill(first, signal.SIGKILL)
    pids = cluster.stalled(2)
    assert pids[1] != first
    os.kill(pids[1], signal.SIGKILL)
    code, out, err = finish(proc)
    assert code == 0, err[-3000:]
    done = results(home)
    (run,) = done["runs"]
    assert run["status"] == "lost" and "died twice" in run["failure"], run
    assert done["tasks"] == [] and done["score"] is None  # never counted as a score


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stopping_the_coordinator_stops_the_remote_builds_within_seconds(cluster, tmp_path, sig):
    user = tmp_path / "user"
    user.mkdir()
    cluster.stalls(2)
    home = tmp_path / "home"
    proc = coordinator(cluster, home, "--split", "train", "--jobs", "2", user_home=user)
    pids = cluster.stalled(2)
    sent = time.monotonic()
    proc.send_signal(sig)
    code, _, err = finish(proc, timeout=120)
    took = time.monotonic() - sent
    assert took < STOP_WITHIN_S, (took, err[-2000:])
    assert code != 0
    done = results(home)
    assert done["stopped_because"] == "interrupted"
    assert sorted(r["status"] for r in done["runs"]) == ["interrupted", "interrupted"], done["runs"]
    deadline = time.monotonic() + 10  # the stalled builds' processes stopped their builds
    while time.monotonic() < deadline and any(_sleeping_in_build(p) for p in pids):
        time.sleep(0.2)
    assert not any(_sleeping_in_build(p) for p in pids)


def _sleeping_in_build(pid: int) -> bool:
    """Whether ``pid`` still runs a stalled build (a Ray worker that is idle again is not)."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    return "remote_build" in title


def test_a_node_running_other_code_is_refused_in_one_line(cluster, tmp_path):
    other = tmp_path / "other"
    for package in ("orchestrator", "phases", "memory"):
        shutil.copytree(
            ROOT / package, other / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (other / "phases" / "build.md").write_text("# another cadillac's prompt\n")
    # this node's Python imports the copy: the editable install's finder (which would send
    # every import of cadillac to the checkout) is taken out when the interpreter starts
    (other / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in repr(f)]\n"
    )
    cluster.start_node("odd", pythonpath=f"{other}:{ROOT}")
    try:
        cluster.stalls(0)
        user = tmp_path / "user"
        user.mkdir()
        home = tmp_path / "home"
        code, out, err = finish(
            coordinator(cluster, home, "--jobs", "3", "--repeats", "2", user_home=user)
        )
        assert code == 0, err[-3000:]
        refused = [line for line in err.splitlines() if "runs another cadillac" in line]
        assert len(refused) == 1, err[-3000:]
        nodes = {run["node"] for run in results(home)["runs"]}
        assert len(nodes) == 2  # the head and the first worker, never the odd one
    finally:
        cluster.stop_node("odd")


LIFT = ROOT / "tests" / "fixtures" / "matrix_lift"


def test_an_improve_cycle_runs_its_trials_on_the_cluster_and_reads_what_they_built(
    cluster, repo, tmp_path
):
    """The survey's trials run on the nodes (each sandboxed and judged there by the same
    cadillac); the scores are what a local survey measures (0.65: the figure
    tests/orchestrator/improve/test_cycle_start.py checks on this machine), and the builds'
    records come back, so the first weakness is found from their events."""
    cluster.stalls(0)
    user = tmp_path / "user"
    user.mkdir()
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CADILLAC_HOME": str(home),
        "HOME": str(user),
        **cluster.client_env(),
    }
    argv = [sys.executable, "-m", "orchestrator", "improve", "--repo", str(repo)]
    argv += [
        "--matrix",
        str(LIFT),
        "--model",
        "scripted:tests.fakes.improve_policies:sentence_builder",
    ]
    argv += ["--improver-model", "scripted:tests.fakes.improve_policies:never_plans"]
    argv += [
        "--iterations",
        "1",
        "--jobs",
        "2",
        "--engine",
        "ray",
        "--ray-address",
        cluster.address,
    ]
    done = subprocess.run(argv, env=env, cwd=str(user), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (folder,) = (home / "runs").glob("improve-*")
    survey = json.loads((folder / "baseline.json").read_text())
    assert survey["train_score"] == pytest.approx(0.65)
    nodes = {run["node"] for run in survey["runs"]}
    assert nodes and all(nodes), survey["runs"]  # every build says where it ran
    weakness = json.loads((folder / "iter-1" / "weakness.json").read_text())
    assert weakness["id"]
    runs = Path(survey["runs_dir"])
    assert runs.is_relative_to(folder)
    for run in survey["runs"]:
        assert (runs / run["run_id"] / "events.jsonl").is_file(), run
        assert not (runs / run["run_id"] / "workspace").exists()
