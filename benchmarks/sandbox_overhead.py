"""The sandbox's cost per command: the wall time of ``true`` through the executor.

Prints the median and the 90th percentile of ``--runs`` (50) commands, each a fresh
bubblewrap sandbox (and, with ``--unsandboxed``, the same through the unsandboxed
executor, for comparison; and without the command's memory cgroup where the host gives
one), in a workspace holding ``--files`` files (100: the executor
measures the workspace after each command, and as root hands it to the sandbox's user
before). It asserts nothing.

    .venv/bin/python benchmarks/sandbox_overhead.py [--runs 50] [--files 100] [--unsandboxed]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from orchestrator.sandbox import cgroup  # noqa: E402
from orchestrator.sandbox.executor import ExecConfig, run_command  # noqa: E402


def timed(workspace: Path, config: ExecConfig, runs: int) -> list[float]:
    run_command("true", workspace, config)  # the probe and the toolchain lookup, once
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        done = run_command("true", workspace, config)
        seconds.append(time.perf_counter() - start)
        if not done.ok:
            raise SystemExit(f"true failed: {done.for_model()}")
    return seconds


def report(label: str, seconds: list[float]) -> None:
    ms = sorted(s * 1000 for s in seconds)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    print(f"{label}: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms ({len(ms)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--unsandboxed", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cadillac-overhead-") as scratch:
        workspace = Path(scratch, "ws")
        (workspace / "src").mkdir(parents=True)
        for i in range(args.files):
            (workspace / "src" / f"m{i}.py").write_text(f"X = {i}\n")
        report("bubblewrap", timed(workspace, ExecConfig(), args.runs))
        if cgroup.available():  # what the command's own memory cgroup costs
            config = ExecConfig(memory_cgroup=False)
            report("bubblewrap, no cgroup", timed(workspace, config, args.runs))
        if args.unsandboxed:
            report("unsandboxed", timed(workspace, ExecConfig(sandbox="none"), args.runs))


if __name__ == "__main__":
    main()
