"""The load shapes of published benchmarks, used to validate the estimator against them.

Real traffic is modelled in :mod:`estimator.load`; benchmarks run two special shapes:

- offline max-throughput: the queue never empties and the engine keeps its largest batch;
  each request also needs its prefill, so a replica produces
  ``batch / (t_decode + batch·s/output)`` output tokens per second (``s``: marginal prefill
  seconds of one prompt);
- fixed-length closed-loop sweeps with no think time: the clients stay in lockstep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class LoopTimes:
    tpot_s: Any
    ttft_mean_s: Any
    ttft_pct_s: Any
    prefill_share: Any
    output_tokens_per_s: Any  # per replica


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
