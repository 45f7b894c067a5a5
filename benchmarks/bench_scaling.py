"""How the cost of a solve grows with the number of candidate GPU types: in-process cold
solves (caches cleared) of the one-workload scenario restricted to the first k datacenter
GPU types of the catalogue, k = 2, 4, 8, 16, all; time per GPU type should stay flat.

Run: python benchmarks/bench_scaling.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(runs: int = 3) -> None:
    import planner
    from estimator import gpu_catalog
    from planner import capacity

    cat = gpu_catalog()
    names = sorted(n for n in cat.names() if cat.items[n].segment == "datacenter")
    base = planner.load_scenario(HERE / "one_workload.yaml")
    planner.solve(base)  # imports and the solver's first-call set-up out of the timings
    for k in (2, 4, 8, 16, len(names)):
        fleet = base.fleet.model_copy(update={"gpus": names[:k]})
        sc = base.model_copy(update={"fleet": fleet})
        times = []
        for _ in range(runs):
            capacity._MEMO.clear()
            t0 = time.perf_counter()
            planner.solve(sc)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(
            f"{k:3d} GPU types: median {med:.3f} s ({med / k * 1e3:.1f} ms per type), "
            f"min {min(times):.3f} s, max {max(times):.3f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
