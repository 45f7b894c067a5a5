"""Random realistic scenarios through `solve`: no plan may miss its own targets.

Every language-model assignment of the recommendation, the alternatives and the best plan
per GPU type is re-evaluated at the load it carries (planner.assembly.check_targets raises on
a miss); this script also checks the reported headroom is never negative and counts what
it saw. Also run, with a small count, by tests/test_guarantees.py.

    python benchmarks/random_plans.py 1000          # the issue's 1,000 scenarios (minutes)
"""

from __future__ import annotations

import random
import sys
import time

from planner import Scenario, solve

MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen3-30b-a3b",
    "mistral-7b",
    "gemma-2-9b",
    "qwen2.5-7b",
    "mixtral-8x7b",
    "gpt-oss-20b",
    "nemotron-h-8b",
]
GPUS = ["h100-sxm", "h200", "l4", "l40s", "a100-80gb-sxm", "mi300x", "b200", "rtx-4090"]


def random_scenario(rng: random.Random) -> Scenario:
    w = {
        "name": "w",
        "model": rng.choice(MODELS),
        "weights": rng.choice(["bf16", "fp8", "int4"]),
        "users": rng.choice([5, 50, 300, 2000]),
        "hours_per_person": rng.choice([1, 4, 8]),
        "utilisation": rng.choice([0.3, 0.6, 1.0]),
        "input_tokens": rng.choice([64, 512, 2000, 8000]),
        "output_tokens": rng.choice([16, 200, 1000]),
        "think_time_s": rng.choice([0, 2, 20]),
        "ttft_percentile": rng.choice([50, 90, 99]),
    }
    if rng.random() < 0.8:
        w["ttft_s"] = rng.choice([0.3, 1.0, 3.0, 10.0])
    if rng.random() < 0.8:
        w["tokens_per_s"] = rng.choice([5, 20, 50])
    if rng.random() < 0.15:
        w["disaggregation"] = "auto"
    gpus = rng.sample(GPUS, rng.randint(1, 4))
    fleet = {"gpus": gpus, "max_gpus_per_replica": 8}
    # loose GPUs a third of the time, and always with the consumer card (no server holds it)
    if "rtx-4090" in gpus or rng.random() < 0.33:
        fleet["unit"] = "gpu"
    return Scenario.model_validate({"workloads": [w], "fleet": fleet})


def check(seed: int) -> tuple[bool, int]:
    """(feasible, assignments checked) for the scenario of ``seed``; raises on a miss."""
    res = solve(random_scenario(random.Random(seed)), top=3)
    checked = 0
    for plan in [res.plan, *res.alternatives, *res.per_gpu_best] if res.feasible else []:
        for a in plan.assignments:
            if a.ttft_target_s is not None:
                assert a.ttft_s <= a.ttft_target_s * (1 + 1e-9), (seed, a)
            if a.tokens_per_s_target is not None:
                assert a.tokens_per_s >= a.tokens_per_s_target * (1 - 1e-9), (seed, a)
            checked += 1
    return res.feasible, checked


def main(count: int) -> int:
    t0, feasible, checked = time.perf_counter(), 0, 0
    for seed in range(count):
        f, c = check(seed)
        feasible += f
        checked += c
    print(
        f"{count} random scenarios, {feasible} feasible, {checked} assignments re-evaluated, "
        f"0 missed their targets, {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
