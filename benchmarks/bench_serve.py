"""The dashboard at scale: a home with 1,000 runs and 100,000 lessons, served for real.

Prints figures; it asserts nothing. Targets on the 2-core machine: the runs page at most
300 ms of server time, a build page with 500 rounds at most 500 ms; and the server
process's memory (resident, and its peak).

    python benchmarks/bench_serve.py [--runs 1000] [--lessons 100000] [--rounds 500]
                                     [--requests 20]

The home is made from one real build (the demo's wordfreq task, built with its scripted
model): its records are copied into 999 more run folders (new ids, their workspaces left
out), and one more run gets a trajectory of 500 rounds, the build's rounds repeated in
its phases. The lessons are bench_memory.py's variations of the real corpus, and the memory's index
snapshot is saved as any command that opens the memory saves it. Then
``cadillac serve`` runs in its own process and each page is asked for ``--requests``
times; the server's own time is its ``Server-Timing`` header (what it took to start the
answer), the wall time is the client's (the whole page over loopback).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_memory import synthesize, write  # noqa: E402

TASK_FILES = ("task.json", "summary.json", "events.jsonl", "llm.jsonl", "trajectory.jsonl")


def make_home(root: Path, runs: int, lessons: int, rounds: int) -> tuple[Path, str]:
    home = root / "home"
    home.mkdir()
    env = os.environ | {
        "CADILLAC_HOME": str(home),
        "CADILLAC_GLOBAL_DIR": str(root / "global"),
        "CADILLAC_CACHE_DIR": str(root / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    policy = "scripted:tests.fakes.serve_policies:wordfreq_now"
    subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", TASK, "--model", policy, "--quiet"],
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (first,) = [p for p in (home / "runs").iterdir()]
    shutil.rmtree(first / "workspace")
    made = [first.name]
    for i in range(runs - 1):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() - 60 * (i + 1)))
        run_id = f"{stamp}-{i:06x}"
        folder = home / "runs" / run_id
        folder.mkdir()
        for name in TASK_FILES:
            text = (first / name).read_text().replace(first.name, run_id)
            (folder / name).write_text(text)
        made.append(run_id)
    big = home / "runs" / made[-1]
    lines = (first / "trajectory.jsonl").read_text().splitlines()
    rounds_of = [json.loads(x) for x in lines if json.loads(x)["kind"] == "round"]
    out = []
    for n in range(rounds):
        r = dict(rounds_of[n % len(rounds_of)])
        r["phase"] = ("plan", "deps", "scaffold", "build", "integrate", "validate")[
            min(5, n * 6 // rounds)
        ]
        r["round"] = n + 1
        out.append(json.dumps(r))
    out += [x for x in lines if json.loads(x)["kind"] == "reflection"]
    (big / "trajectory.jsonl").write_text("\n".join(out) + "\n")
    write(synthesize(lessons), home / "memory.jsonl")
    # as a home in use has it: any command that opens the memory saves its index snapshot
    subprocess.run(
        [sys.executable, "-m", "orchestrator", "memory", "stats"],
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return home, big.name


TASK = (
    "Build a Python command-line tool `wordfreq` that prints the N most frequent words of a "
    "text file, with unit tests"
)


def serve(home: Path) -> tuple[subprocess.Popen, str, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "serve", "--port", "0", "--home", str(home)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    line = process.stdout.readline()
    match = re.search(r"(http://\S+/)\?token=(\S+)", line)
    assert match, line
    return process, match.group(1), match.group(2)


def memory_of(pid: int) -> tuple[float, float]:
    """The process's resident and peak resident memory, in MiB."""
    found = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(found["VmRSS"].split()[0]) / 1024, int(found["VmHWM"].split()[0]) / 1024


def timed(client: httpx.Client, url: str, n: int) -> tuple[list[float], list[float], int]:
    server, wall, size = [], [], 0
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(url)
        wall.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        timing = re.search(r"dur=([\d.]+)", response.headers["server-timing"])
        server.append(float(timing.group(1)))
        size = len(response.content)
    return server, wall, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        started = time.perf_counter()
        home, big = make_home(Path(tmp), args.runs, args.lessons, args.rounds)
        print(
            f"home: {args.runs:,} runs, {args.lessons:,} lessons, one build of {args.rounds} "
            f"rounds (made in {time.perf_counter() - started:.0f} s)"
        )
        process, base, token = serve(home)
        try:
            client = httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            rss0, _ = memory_of(process.pid)
            print(f"server at start: {rss0:.0f} MiB resident")
            pages = [
                (f"runs page (200 rows of {args.runs:,})", base, 300),
                (f"build page, {args.rounds} rounds", f"{base}runs/{big}", 500),
                ("memory page", f"{base}memory", None),
            ]
            for name, url, target in pages:
                first = client.get(url)  # the first request warms what the server caches
                cold = float(re.search(r"dur=([\d.]+)", first.headers["server-timing"]).group(1))
                server, wall, size = timed(client, url, args.requests)
                p50, p95 = np.percentile(server, 50), np.percentile(server, 95)
                met = "met" if target is not None and p95 <= target else "MISSED"
                verdict = "" if target is None else f" (target <= {target} ms: {met})"
                rss, _ = memory_of(process.pid)
                print(
                    f"{name}: first {cold:.0f} ms, then server p50 {p50:.0f} ms, "
                    f"p95 {p95:.0f} ms{verdict}; "
                    f"wall p50 {np.percentile(wall, 50):.0f} ms; {size / 1024:,.0f} KiB; "
                    f"server {rss:.0f} MiB after"
                )
            rss, peak = memory_of(process.pid)
            print(f"server after: {rss:.0f} MiB resident, peak {peak:.0f} MiB")
        finally:
            process.terminate()
            process.wait(timeout=20)


if __name__ == "__main__":
    main()
