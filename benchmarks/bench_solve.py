"""How long a solve takes: cold (a fresh `planner solve` process, interpreter start and
imports included; wall and CPU) on a three-workload scenario over the whole catalogue, and
warm (in-process `planner.solve` of a one-workload scenario over the whole catalogue, after a
first solve has filled the caches), each as min / median / max over several runs.

Run: python benchmarks/bench_solve.py [runs] [cold|warm] [top]   (both when neither is named;
top: the plans a warm solve returns, 5 by default; the page asks for 1)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _stats(xs: list[float], unit: str = "s") -> str:
    med = statistics.median(xs)
    return f"min {min(xs):.3f} {unit}, median {med:.3f} {unit}, max {max(xs):.3f} {unit}"


def cold(runs: int) -> None:
    exe = shutil.which("planner") or sys.exit("planner is not on PATH: pip install . first")
    cmd = [exe, "solve", str(HERE / "three_workloads.yaml")]
    wall, cpu = [], []
    for _ in range(runs):
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        wall.append(time.perf_counter() - t0)
        after = os.times()
        cpu.append(
            after.children_user
            + after.children_system
            - before.children_user
            - before.children_system
        )
    print(f"cold `planner solve three_workloads.yaml` ({runs} runs)")
    print(f"  wall: {_stats(wall)}")
    print(f"  CPU:  {_stats(cpu)}")


def warm(runs: int, top: int = 5) -> None:
    import planner

    path = HERE / "one_workload.yaml"
    planner.solve(planner.load_scenario(path), top=top)  # fills the memo, loads the solver
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        planner.solve(planner.load_scenario(path), top=top)
        times.append(time.perf_counter() - t0)
    print(f"warm in-process planner.solve(one_workload.yaml, top={top}) ({runs} runs)")
    print(f"  wall: {_stats(times)}")
    # a slider move: the same scenario with other users each time, so the demand (and the
    # solver's every model) differs while the capacities are remembered
    base = planner.load_scenario(path)
    times = []
    for k in range(runs):
        w = base.workloads[0]
        sc = base.model_copy(
            update={
                "workloads": [w.model_copy(update={"users": int(w.users * (1 + 0.03 * (k + 1)))})]
            }
        )
        t0 = time.perf_counter()
        planner.solve(sc, top=top)
        times.append(time.perf_counter() - t0)
    print(f"warm, users moved each run ({runs} runs)")
    print(f"  wall: {_stats(times)}")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    which = sys.argv[2] if len(sys.argv) > 2 else "both"
    if which in ("cold", "both"):
        cold(n)
    if which in ("warm", "both"):
        warm(n, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
