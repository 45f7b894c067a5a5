"""Capacity of one replica: the most concurrent sessions (seats) it serves while meeting the
workload's targets and fitting memory. This is the interface other model families implement
with their own demand unit (images/s, audio streams, docs/s...)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator import Evaluator
from estimator.serving import serving_point

from .scenario import LLMWorkload


@dataclass(frozen=True)
class Capacity:
    units: int  # seats this replica serves within every target (0: none)
    binding: str  # what stops it going higher: memory | engine | ttft | tokens_per_s
    best_ttft_s: float  # at one session: the best this candidate can do
    best_tokens_per_s: float
    max_batch_memory: int


@dataclass(frozen=True)
class OperatingPoint:
    """Metrics at a given load per replica."""

    batch: int
    ttft_s: float  # at the workload's percentile
    ttft_mean_s: float
    tokens_per_s: float
    output_tokens_per_s: float
    bottleneck: str
    kv_gb: float


def llm_capacity(ev: Evaluator, w: LLMWorkload) -> Capacity:
    ctx = w.input_tokens + w.output_tokens
    mem_max = int(ev.max_batch(ctx))
    cap = min(mem_max, ev.engine.max_num_seqs)
    if cap < 1:
        return Capacity(0, "memory", float("inf"), 0.0, mem_max)
    b = np.arange(1, cap + 1)
    sp = serving_point(ev, b, w.input_tokens, w.output_tokens, w.ttft_percentile)
    ok = np.ones(b.shape, bool)
    tps_ok = sp.per_user_tokens_per_s >= w.tokens_per_s if w.tokens_per_s else ok
    ttft_ok = sp.ttft_pct_s <= w.ttft_s if w.ttft_s else ok
    good = np.cumprod(tps_ok & ttft_ok).astype(bool)  # the largest prefix that meets both
    units = int(good.sum())
    if units == cap:
        binding = "memory" if cap == mem_max else "engine"
    elif not tps_ok[units]:
        binding = "tokens_per_s"
    else:
        binding = "ttft"
    return Capacity(
        units, binding, float(sp.ttft_pct_s[0]), float(sp.per_user_tokens_per_s[0]), mem_max
    )


def operating_point(ev: Evaluator, w: LLMWorkload, batch: int) -> OperatingPoint:
    sp = serving_point(
        ev, np.array([max(batch, 1)]), w.input_tokens, w.output_tokens, w.ttft_percentile
    )
    return OperatingPoint(
        int(batch),
        float(sp.ttft_pct_s[0]),
        float(sp.ttft_mean_s[0]),
        float(sp.per_user_tokens_per_s[0]),
        float(sp.output_tokens_per_s[0]),
        str(sp.bottleneck[0]),
        float(sp.kv_gb[0]),
    )
