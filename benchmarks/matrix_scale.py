"""How a matrix run scales: worker processes on one machine, and a two-node Ray cluster.

A local OpenAI-compatible server on 127.0.0.1 answers every request after a fixed delay
(1 s: a model's think time), with the scripted wordfreq builder's answers, reached through
litellm as a provider would be. The matrix is 8 copies of one train task, 1 repeat each,
with one seed. Printed:

* ``--jobs 1`` against ``--jobs 4`` (worker processes): wall time, speed-up (target >= 3.0),
  and whether every build's score and verdict match;
* the same on a Ray cluster of a head and a worker node on this machine (each its own
  temporary folder and HOME, as ``ray start`` makes them on two machines): ``--jobs 1``
  and ``--jobs 4``, the speed-up against the local ``--jobs 1``, and the overhead Ray adds
  per build (its ``--jobs 1`` wall time less the local one, over the builds).

    .venv/bin/python benchmarks/matrix_scale.py [--delay 1.0] [--tasks 8] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.improve_policies import sentence_builder  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402
from tests.ray_cluster import start_cluster  # noqa: E402

TASK = ROOT / "tests" / "fixtures" / "matrix_small" / "wf-a"


def make_matrix(folder: Path, tasks: int) -> Path:
    """``tasks`` copies of the wordfreq train task, ids wf-1 ... wf-N."""
    for i in range(1, tasks + 1):
        copy = folder / f"wf-{i}"
        shutil.copytree(TASK, copy)
        toml = copy / "task.toml"
        toml.write_text(toml.read_text().replace('id = "wf-a"', f'id = "wf-{i}"'))
    return folder


def run(matrix: Path, home: Path, api_base: str, jobs: int, extra: list[str], env: dict) -> tuple:
    """One ``cadillac matrix run``; (wall seconds, results)."""
    argv = [sys.executable, "-m", "orchestrator", "matrix", "run", "--matrix", str(matrix)]
    argv += ["--model", "openai/scale-bench", "--api-base", api_base, "--seed", "11"]
    argv += ["--jobs", str(jobs), "--json", "--no-learn", *extra]
    home.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CADILLAC_HOME": str(home), **env},
        cwd=str(home.parent),
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"matrix run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, json.loads(done.stdout)


def verdicts(results: dict) -> list[tuple]:
    return sorted((r["task_id"], r["score"], r["verdict"], r["status"]) for r in results["runs"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per model answer")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--no-ray", action="store_true", help="the local engine only")
    args = parser.parse_args()

    def policy(body: dict):
        answer = sentence_builder(body["messages"], body.get("tools"))
        answer = {"content": answer} if isinstance(answer, str) else dict(answer)
        return {**answer, "delay_s": args.delay}

    work = Path(tempfile.mkdtemp(prefix="cadillac-scale-"))
    try:
        matrix = make_matrix(work / "matrix", args.tasks)
        rows = []
        with FakeOpenAI(policy) as server:
            one, r1 = run(matrix, work / "j1" / "home", server.api_base, 1, [], {})
            many, rn = run(matrix, work / "jn" / "home", server.api_base, args.jobs, [], {})
            same = verdicts(r1) == verdicts(rn)
            print(
                f"{args.tasks} tasks x 1 repeat, model answers after {args.delay:g} s "
                f"({len(server.requests)} requests)"
            )
            rows.append(("local --jobs 1", one, 1.0, True))
            rows.append((f"local --jobs {args.jobs}", many, one / many, same))
            if not args.no_ray:
                cluster = start_cluster(workers=1)
                try:
                    env = cluster.client_env()
                    ray = ["--engine", "ray", "--ray-address", cluster.address]
                    t1, q1 = run(matrix, work / "r1" / "home", server.api_base, 1, ray, env)
                    tn, qn = run(matrix, work / "rn" / "home", server.api_base, args.jobs, ray, env)
                    nodes = {r["node"] for r in qn["runs"]}
                    rows.append(("ray --jobs 1", t1, one / t1, verdicts(q1) == verdicts(r1)))
                    rows.append(
                        (
                            f"ray --jobs {args.jobs} ({len(nodes)} nodes)",
                            tn,
                            one / tn,
                            verdicts(qn) == verdicts(r1),
                        )
                    )
                    overhead = (t1 - one) / args.tasks
                finally:
                    cluster.stop()
        print(f"{'engine':<28} {'wall':>8} {'speed-up':>9}  scores as local --jobs 1")
        for name, wall, speed, match in rows:
            print(f"{name:<28} {wall:>7.1f}s {speed:>8.2f}x  {'identical' if match else 'DIFFER'}")
        if not args.no_ray:
            print(f"Ray's overhead per build (its --jobs 1 less the local one): {overhead:+.2f} s")
        print(f"mean score {r1['score']:.3f}; builds per run {len(r1['runs'])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
