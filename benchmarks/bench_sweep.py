"""A sweep of 200 combinations (20 user counts x 10 TTFT targets: each target is new
capacity work, each user count only a new solve) run three ways: one process, `--jobs 2`
(local workers: forks of the process on Linux) and `--cluster local --jobs 2` (Dask); wall
time of each (min / median / max over runs) and whether their CSVs are byte-identical.

Run: python benchmarks/bench_sweep.py [runs] [scenario]   (default scenarios/chat-assistant.yaml,
a few GPU types; benchmarks/one_workload.yaml sweeps the whole catalogue; its workload is
also named chat)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
USERS = ",".join(str(u) for u in range(200, 4200, 200))  # 20 values
TTFTS = ",".join(f"{t:g}" for t in (0.3, 0.4, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10))  # x 10 = 200


def main(runs: int = 1, scenario: Path = HERE.parent / "scenarios" / "chat-assistant.yaml") -> None:
    exe = shutil.which("planner") or sys.exit("planner is not on PATH: pip install . first")
    print(f"sweep of {scenario.name}")
    backends = {
        "serial": [],
        "jobs 2": ["--jobs", "2"],
        "dask local": ["--cluster", "local", "--jobs", "2"],
    }
    texts, medians = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in backends.items():
            times = []
            for r in range(runs):
                out = Path(tmp) / f"{name.replace(' ', '_')}_{r}.csv"
                cmd = [
                    exe,
                    "sweep",
                    str(scenario),
                    "--set",
                    f"workloads.chat.users={USERS}",
                    "--set",
                    f"workloads.chat.ttft_s={TTFTS}",
                    "--out",
                    str(out),
                    *extra,
                ]
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times.append(time.perf_counter() - t0)
                texts[name] = out.read_bytes()
            medians[name] = statistics.median(times)
            print(
                f"{name:10s}: median {medians[name]:.1f} s, "
                f"min {min(times):.1f} s, max {max(times):.1f} s"
            )
    print(
        f"--jobs 2 / serial: {medians['jobs 2'] / medians['serial']:.2f}x; "
        f"dask local / serial: {medians['dask local'] / medians['serial']:.2f}x"
    )
    same = len({texts[k] for k in texts}) == 1
    print("CSVs byte-identical across backends:", same)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 1, *(Path(a).resolve() for a in args[1:2]))
