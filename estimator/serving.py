"""Serving under continuous batching: per-user speed and TTFT at a given concurrency.

A replica holds ``batch`` concurrent sessions, each in a closed loop (prompt, answer, next
prompt). Every request's prefill is done by the same GPUs that run the decode steps
(chunked prefill rides along the decode iterations), so:

- prefill load: each session needs one prefill of ``input_tokens`` per ``output_tokens``
  decode steps. With ``s`` the marginal prefill time of one request (its FLOPs and
  collectives; the weights are already streaming for the decode step), a session's decode is
  slowed by the *other* sessions' prefills: ``tpot = t_decode(batch) + (batch−1)·s/output``,
  and the share of replica time spent on prefill is ``rho = batch·s/(output·t_decode + batch·s)``.
- TTFT = wait for the prefill queue + the request's own prefill + the decode step it rides
  on. The wait uses the M/M/1 waiting-time tail with utilisation ``rho``:
  ``P(W > t) = rho·exp(−(1−rho)·t/s)``, so the p-th percentile is
  ``s/(1−rho)·ln(rho/(1−p))`` when ``rho > 1−p`` (else 0) and the mean ``rho·s/(1−rho)``;
  exponential service is conservative against real, near-deterministic prefill times.
  The wait grows without bound as ``rho → 1``.
- A saturated replica (offline benchmark: the queue never empties) produces
  ``batch / (t_decode + batch·s/output)`` output tokens per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .estimate import Evaluator


@dataclass
class LoopTimes:
    tpot_s: Any
    ttft_mean_s: Any
    ttft_pct_s: Any
    prefill_share: Any
    output_tokens_per_s: Any  # closed loop, per replica


def closed_loop(
    t_dec, t_first, s, s_alone, batch, output_tokens: int, percentile: float = 90.0
) -> LoopTimes:
    """The closed-loop formulas above, on arrays (the calibration fit calls this too)."""
    b = np.asarray(batch, float)
    t_dec = np.asarray(t_dec, float)
    tpot = t_dec + np.maximum(b - 1, 0) * s / output_tokens
    rho = b * s / (output_tokens * t_dec + b * s)
    p = percentile / 100.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(rho > 1 - p, s / (1 - rho) * np.log(np.maximum(rho, 1e-300) / (1 - p)), 0.0)
    wait_mean = rho * s / (1 - rho)
    ttft_mean = wait_mean + s_alone + t_first
    ttft_pct = tail + s_alone + t_first
    cycle = ttft_mean + (output_tokens - 1) * tpot
    return LoopTimes(tpot, ttft_mean, ttft_pct, rho, b * output_tokens / cycle)


def lockstep(t_dec, s, s_alone, batch, output_tokens: int, max_batch=None) -> LoopTimes:
    """A synthetic benchmark's closed loop: ``batch`` clients with fixed lengths and no think
    time start together, so they stay in lockstep: every cycle all prompts arrive at once,
    are prefilled one after another (FCFS), then decode together. Request j of a wave gets its
    first token after ``s_alone + j·s``; the mean TTFT is ``s_alone + (n−1)/2·s`` and the
    cycle ``n·s + output·t_decode``. Clients beyond ``max_batch`` (what fits in memory) wait
    whole cycles for a slot: wave k waits k cycles."""
    b = np.asarray(batch, float)
    t_dec = np.asarray(t_dec, float)
    n = b if max_batch is None else np.minimum(b, max_batch)
    cycle = n * s + output_tokens * t_dec
    ttft_wave = s_alone + (n - 1) / 2 * s
    waves = np.ceil(b / n)
    # mean extra wait over clients: full waves of n wait 0, 1, ..., waves−1 cycles (the last
    # wave is partial)
    last = b - (waves - 1) * n
    extra = (n * cycle * (waves - 1) * (waves - 2) / 2 + last * (waves - 1) * cycle) / b
    ttft = ttft_wave + extra
    tpot = ((n + 1) / 2 * s + (output_tokens - 1) * t_dec) / max(output_tokens - 1, 1)
    return LoopTimes(tpot, ttft, ttft, None, n * output_tokens / cycle)


def saturated_tokens_per_s(t_dec, s, batch, output_tokens: int):
    b = np.asarray(batch, float)
    return b / (np.asarray(t_dec, float) + b * s / output_tokens)


@dataclass
class ServingPoint:
    """Arrays over the batch sizes asked for."""

    batch: Any
    fits: Any
    tpot_s: Any
    per_user_tokens_per_s: Any
    output_tokens_per_s: Any
    ttft_mean_s: Any
    ttft_pct_s: Any
    prefill_share: Any
    bottleneck: Any
    kv_gb: Any


def prefill_cost(ev: Evaluator, input_tokens: int) -> tuple[float, float]:
    """(marginal prefill seconds of one request riding on decode steps, alone on idle GPUs)."""
    one = ev.prefill(1, input_tokens)
    return float(one.compute + one.comm), float(one.total)


def serving_point(
    ev: Evaluator, batch, input_tokens: int, output_tokens: int, percentile: float = 90.0
) -> ServingPoint:
    b = np.asarray(batch, float)
    dec = ev.decode_step(b, input_tokens + output_tokens / 2)
    s, s_alone = prefill_cost(ev, input_tokens)
    first = ev.decode_step(b, input_tokens).total
    lt = closed_loop(dec.total, first, s, s_alone, b, output_tokens, percentile)
    fits = b <= min(int(ev.max_batch(input_tokens + output_tokens)), ev.engine.max_num_seqs)
    return ServingPoint(
        batch=b,
        fits=fits,
        tpot_s=lt.tpot_s,
        per_user_tokens_per_s=1.0 / lt.tpot_s,
        output_tokens_per_s=lt.output_tokens_per_s,
        ttft_mean_s=lt.ttft_mean_s,
        ttft_pct_s=lt.ttft_pct_s,
        prefill_share=lt.prefill_share,
        bottleneck=dec.bottleneck(),
        kv_gb=ev.kv_bytes_per_gpu(b, input_tokens + output_tokens) / 1e9,
    )
