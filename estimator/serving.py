"""Serving under continuous batching: per-user speed and TTFT at a given concurrency.

A replica holds ``batch`` concurrent sessions, each in a closed loop (prompt, answer, next
prompt). Every request's prefill must be done by the same GPUs that run the decode steps
(chunked prefill rides along the decode iterations), so:

- prefill load: each session needs one prefill of ``input_tokens`` per ``output_tokens``
  decode steps, so per step the replica also does ``batch/output_tokens`` prefills. With
  ``s`` the marginal prefill time of one request (its FLOPs and collectives; the weights are
  already streaming for the decode step), the effective step time is
  ``tpot = t_decode(batch) + batch·s/output_tokens`` and the prefill share of time is
  ``rho = a/(1+a)``, ``a = batch·s/(output_tokens·t_decode)``.
- TTFT = wait for the prefill queue + the request's own prefill + the decode step it rides
  on. The wait uses the M/M/1 waiting-time tail with utilisation ``rho``:
  ``P(W > t) = rho·exp(−(1−rho)·t/s)``, so the p-th percentile is
  ``s/(1−rho)·ln(rho/(1−p))`` when ``rho > 1−p`` (else 0) and the mean ``rho·s/(1−rho)``;
  exponential service is conservative against real, near-deterministic prefill times.
  The wait grows without bound as ``rho → 1``: that is the knee.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .estimate import Evaluator


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


def serving_point(
    ev: Evaluator, batch, input_tokens: int, output_tokens: int, percentile: float = 90.0
) -> ServingPoint:
    b = np.asarray(batch, float)
    dec = ev.decode_step(b, input_tokens + output_tokens / 2)
    one = ev.prefill(1, input_tokens)
    s = float(one.compute + one.comm)  # marginal: FLOPs and collectives of the prompt
    s_alone = float(one.total)
    t_dec = np.asarray(dec.total, float)
    a = b * s / (output_tokens * t_dec)
    rho = a / (1 + a)
    tpot = t_dec + b * s / output_tokens
    p = percentile / 100.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(rho > 1 - p, s / (1 - rho) * np.log(np.maximum(rho, 1e-300) / (1 - p)), 0.0)
    wait_mean = rho * s / (1 - rho)
    first_step = ev.decode_step(b, input_tokens).total
    ttft_mean = wait_mean + s_alone + first_step
    ttft_pct = tail + s_alone + first_step
    cycle = ttft_mean + (output_tokens - 1) * tpot
    fits = b <= min(int(ev.max_batch(input_tokens + output_tokens)), ev.engine.max_num_seqs)
    return ServingPoint(
        batch=b,
        fits=fits,
        tpot_s=tpot,
        per_user_tokens_per_s=1.0 / tpot,
        output_tokens_per_s=b * output_tokens / cycle,
        ttft_mean_s=ttft_mean,
        ttft_pct_s=ttft_pct,
        prefill_share=rho,
        bottleneck=dec.bottleneck(),
        kv_gb=ev.kv_bytes_per_gpu(b, input_tokens + output_tokens) / 1e9,
    )
