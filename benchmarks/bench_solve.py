"""Wall time of `planner solve` on a three-workload scenario against the full catalogue,
interpreter start included.

Run: python benchmarks/bench_solve.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(runs: int = 5) -> None:
    exe = shutil.which("planner") or sys.exit("planner is not on PATH: pip install -e . first")
    cmd = [exe, "solve", str(HERE / "three_workloads.yaml")]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    print(
        f"planner solve three_workloads.yaml: median {statistics.median(times):.2f} s, "
        f"min {min(times):.2f} s, max {max(times):.2f} s over {runs} runs"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
