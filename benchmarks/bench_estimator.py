"""Estimates per second over a grid of candidates x batch sizes.

Run: python benchmarks/bench_estimator.py
Each estimate is one (model, GPU, split, batch) point: its KV memory, largest batch check,
decode step and prefill, evaluated with the vectorised Evaluator (one build per candidate,
numpy over batch sizes), which is the path the planner uses.
"""

from __future__ import annotations

import time

import numpy as np

from estimator import EstimatorError, Evaluator, Parallel, get_gpu, get_model, gpu_catalog

MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen3-30b-a3b",
    "deepseek-v3",
    "gemma-3-27b",
    "nemotron-h-8b",
    "mixtral-8x7b",
    "gpt-oss-120b",
]
SPLITS = [(1, 1), (2, 1), (4, 1), (8, 1), (4, 2), (8, 2)]
BATCHES = np.arange(1, 513, dtype=float)
INPUT, OUTPUT = 2000, 400


def run() -> tuple[int, float, int]:
    gpus = gpu_catalog().names()
    n_est = n_cand = 0
    t0 = time.perf_counter()
    for mname in MODELS:
        model = get_model(mname)
        for gname in gpus:
            gpu = get_gpu(gname)
            for tp, pp in SPLITS:
                try:
                    ev = Evaluator(model, gpu, Parallel(tp=tp, pp=pp), "fp8", "fp8")
                except EstimatorError:
                    continue
                ev.kv_bytes_per_gpu(BATCHES, INPUT + OUTPUT)
                ev.max_batch(INPUT + OUTPUT)
                ev.decode_step(BATCHES, INPUT + OUTPUT / 2)
                ev.prefill(BATCHES, INPUT)
                n_est += BATCHES.size
                n_cand += 1
    return n_est, time.perf_counter() - t0, n_cand


if __name__ == "__main__":
    run()  # warm caches (preset parsing)
    n, dt, c = run()
    print(
        f"{c} candidates x {BATCHES.size} batch sizes = {n:,} estimates in {dt:.3f} s "
        f"-> {n / dt:,.0f} estimates/s"
    )
