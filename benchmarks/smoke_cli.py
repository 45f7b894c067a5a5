"""Smoke run of the CLI over the whole catalogue (also run by tests/test_smoke.py): every
model preset (LLM and other families) x six GPUs x {1, 8} GPUs through `planner estimate`,
and every LLM x three GPUs x {1, 8} through `planner curve`. Fails if any run ends in a
traceback instead of exit code 0 (ok), 1 (does not fit / infeasible) or 2 (bad input, e.g.
a split the model cannot take).

    python benchmarks/smoke_cli.py          # a few seconds
"""

from __future__ import annotations

import itertools
import sys
import time

from click.testing import CliRunner

from estimator import model_catalog
from estimator.families import family_catalog
from planner.cli import main


def run(args: list[str]) -> str | None:
    res = CliRunner().invoke(main, args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return f"{' '.join(args)}: {res.exception!r}"
    if res.exit_code not in (0, 1, 2):
        return f"{' '.join(args)}: exit {res.exit_code}"
    return None


def main_() -> int:
    t0 = time.perf_counter()
    models = model_catalog().names() + family_catalog().names()
    gpus = ["h100-sxm", "l4", "mi300x", "gaudi3", "b200", "rtx-4090"]
    jobs = []
    for m, g, n in itertools.product(models, gpus, ("1", "8")):
        batch = "max" if n == "8" else "4"
        jobs.append(["estimate", "--model", m, "--gpu", g, "--gpus", n, "--batch", batch])
    for m, g, n in itertools.product(model_catalog().names(), ["h100-sxm", "l4", "mi355x"], "18"):
        jobs.append(["curve", "--model", m, "--gpu", g, "--gpus", n, "--users-max", "64"])
    failures = [f for f in (run([*j, "--format", "json"]) for j in jobs) if f]
    for f in failures:
        print("FAIL", f)
    print(f"{len(jobs)} CLI runs, {len(failures)} tracebacks, {time.perf_counter() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main_())
