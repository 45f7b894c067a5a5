"""The load shapes of synthetic benchmark harnesses, the one place they are modelled:

- offline max-throughput: the queue never empties and the engine keeps its largest batch;
  each request also needs its prefill, so a replica produces
  ``batch / (t_decode + batch·s/output)`` output tokens per second (``s``: marginal prefill
  seconds of one prompt);
- the synchronised closed loop (genai-perf, vLLM's benchmark_serving at fixed concurrency):
  every client starts at once with the same lengths and no think time, so the clients stay
  in lockstep. Each cycle all prompts arrive together, are prefilled one after another,
  then decode together; clients beyond the KV slots wait whole cycles;
- the open loop (benchmark_serving / bench_serving at a ``--request-rate``): requests
  arrive at a fixed rate, Poisson, whatever the replica does (``rate_point``).

Real users' arrivals spread in time (``estimator.load``); ``waves_point`` is the same replica
(the same :class:`~estimator.steps.Steps`) under the harness's arrival pattern, chosen with
``ServingOptions(arrivals="waves")``. ``planner validate`` scores published rows with these
(and its fit uses the same formulas on its decomposed steps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .load import LoadPoint, load_point
from .steps import Steps


@dataclass
class LoopTimes:
    tpot_s: Any
    ttft_mean_s: Any
    ttft_pct_s: Any
    prefill_share: Any
    output_tokens_per_s: Any  # per replica


def lockstep(
    t_dec,
    s,
    s_alone,
    batch,
    output_tokens: int,
    max_batch=None,
    percentile: float = 90.0,
    request_s=0.0,
) -> LoopTimes:
    """A synthetic benchmark's closed loop: ``batch`` clients with fixed lengths and no think
    time start together, so they stay in lockstep: every cycle all prompts arrive at once,
    are prefilled one after another (FCFS), then decode together. Request j of a wave gets its
    first token after ``s_alone + j·s``; the mean TTFT is ``s_alone + (n−1)/2·s`` and the
    cycle ``n·s + output·t_decode``. Clients beyond ``max_batch`` (what fits in memory) wait
    whole cycles for a slot: wave k waits k cycles. At percentile p a request is p of the way
    through its wave, and p of the way through the waves that wait. ``request_s``: the serving
    stack's own time to a first token, which every wave also waits before its prefill."""
    b = np.asarray(batch, float)
    t_dec = np.asarray(t_dec, float)
    n = b if max_batch is None else np.minimum(b, max_batch)
    cycle = n * s + output_tokens * t_dec + request_s
    ttft_wave = s_alone + (n - 1) / 2 * s + request_s
    waves = np.ceil(b / n)
    # mean extra wait over clients: full waves of n wait 0, 1, ..., waves−1 cycles (the last
    # wave is partial)
    last = b - (waves - 1) * n
    extra = (n * cycle * (waves - 1) * (waves - 2) / 2 + last * (waves - 1) * cycle) / b
    ttft = ttft_wave + extra
    p = percentile / 100.0
    ttft_p = (
        s_alone + request_s + p * (n - 1) * s + np.where(waves > 1, (waves - 1) * cycle * p, 0.0)
    )
    # after its first token, request j of a wave waits for the n−1−j prefills behind it
    # (n−1)/2 on average, then decodes; one output token has no tokens after it: its decode
    # step is its pace
    steps = max(output_tokens - 1, 1)
    tpot = ((n - 1) / 2 * s + steps * t_dec) / steps
    return LoopTimes(tpot, ttft, np.maximum(ttft_p, ttft), n * s / cycle, n * output_tokens / cycle)


def saturated_tokens_per_s(t_dec, s, batch, output_tokens: int):
    b = np.asarray(batch, float)
    return b / (np.asarray(t_dec, float) + b * s / output_tokens)


def waves_point(steps: Steps, users, percentile: float = 90.0) -> LoadPoint:
    """Request j of a wave of n gets its first token after ``s_alone + j·s`` (``s``: one
    prompt's marginal prefill), so the mean TTFT is ``s_alone + (n−1)/2·s`` and the
    percentile ``s_alone + p·(n−1)·s``; a cycle is ``n·s + output·t_iter(n)``. Users beyond
    the slots form later waves that wait whole cycles."""
    st = steps
    b = np.atleast_1d(np.asarray(users, float))
    c = max(st.slots, 1)
    n = np.minimum(b, c)
    s = st.input_tokens * st.s_token
    t_dec = st.t_iter(n) / st.tokens_per_iter
    lt = lockstep(t_dec, s, st.s_alone, b, st.output_tokens, c, percentile, st.request_s)
    return LoadPoint(
        users=b,
        ttft_s=lt.ttft_mean_s,
        ttft_pct_s=lt.ttft_pct_s,
        tpot_s=lt.tpot_s,
        per_user_tokens_per_s=1.0 / lt.tpot_s,
        output_tokens_per_s=lt.output_tokens_per_s,
        batch=n,
        in_flight=n,
        prefill_share=lt.prefill_share,
        slot_wait_prob=np.where(b > c, 1.0 - c / b, 0.0),
        memory_gb=st.memory_gb(n),
        fits=b <= c,
        stable=np.ones_like(b, bool),
    )


# An open loop is the limit of a closed one with many users who each think a long time: N
# users thinking N/λ seconds send λ requests per second, less the share of time they spend
# waiting for answers, λ·R/N: below 1e-6 of it at a million users
OPEN_LOOP_USERS = 1e6


def rate_point(
    steps: Steps, rate: float, percentile: float = 90.0, requests: int | None = None
) -> LoadPoint:
    """Requests arriving at ``rate`` per second (Poisson) on one replica: the
    spread-arrivals load model (:func:`~estimator.load.load_point`) as its population grows
    without bound at that rate. Past the replica's saturation rate ``X`` an endless run's
    queue has no end; a run of ``requests`` (a benchmark's ``--num-prompts``) queues only
    while they arrive: request k arrives at k/rate and is admitted at k/X, so it waits
    k·(1/X − 1/rate) (a fluid queue: the backlog dwarfs the arrivals' jitter) on top of its
    own prefill in the saturated iteration it joins; the run's mean TTFT takes the middle
    request's wait, its percentile p that of the request p of the way through."""
    lp = load_point(steps, [OPEN_LOOP_USERS], OPEN_LOOP_USERS / rate, percentile)
    x = float(lp.rate[0])  # what the replica completes per second
    # below saturation it completes what it is sent (its users wait < 1e-6 of their time)
    if not requests or x >= rate * (1 - 1e-3):
        return lp
    own = float(steps.s_alone + steps.t_iter(np.maximum(steps.slots, 1)) + steps.request_s)
    backlog = requests * max(1.0 / x - 1.0 / rate, 0.0)  # the last request's wait
    return replace(
        lp,
        ttft_s=np.array([own + backlog / 2]),
        ttft_pct_s=np.array([own + backlog * percentile / 100]),
    )


# trtllm-bench's byte sizes by quantisation (its BYTES_PER_ELEM; anything else counts 2)
_BENCH_BYTES = {"fp8": 1.0, "fp4": 0.5}


def _round_up(x: float, ladder, floor: int) -> int:
    """``x`` rounded up to the step of the first rung it is below, at least ``floor``."""
    step = next(step for below, step in ladder if x < below)
    return max(floor, step * math.ceil(x / step))


def trtllm_bench_batch(ev, input_tokens: int, output_tokens: int, kv_fraction: float = 0.90):
    """The ``max_batch_size`` TensorRT-LLM's ``trtllm-bench throughput`` sets itself from the
    dataset (tensorrt_llm/bench/build/tuning.py ``calc_engine_setting`` and
    ``finetune_setting``), not the engine's default: the requests its own estimate of the KV
    memory holds (the GPUs' memory less the parameters, times the free-memory fraction, over
    ``2 x attention layers x max(TP, KV heads) x head size`` bytes per token at the full
    sequence), at most 4096 over the pipeline stages, rounded up (to 32s below 256, 128s
    below 1024, else 256s; at least 64), and at most its ``max_num_tokens`` (that batch times
    ``1 + input/output``, at most 32768, rounded up). That is per micro-batch (a pipeline
    keeps one per stage in flight) and per attention-data-parallel rank, like the engine's
    own cap (``Evaluator.max_seqs``): the replica's cap is returned."""
    m, a = ev.model, ev.model.attention
    gib = float(2**30)
    params = m.total_params * _BENCH_BYTES.get(ev.wfmt.name, 2.0) / gib
    cache = (ev.capacity / gib * ev.gpus - params) * kv_fraction
    per_token = m.kv_bytes_per_token(_BENCH_BYTES.get(ev.kvfmt.name, 2.0)) / gib
    if a is not None and a.kind == "gqa":
        per_token *= max(ev.tp, a.num_kv_heads) / a.num_kv_heads  # its adjusted KV heads
    seq = input_tokens + output_tokens
    requests = cache / (per_token * seq) if per_token > 0 else 4096.0
    raw = min(requests, 4096.0) / ev.pp
    bs = _round_up(raw, ((256, 32), (1024, 128), (math.inf, 256)), floor=64)
    raw_tok = min(raw * (1 + input_tokens / output_tokens), 32768.0)
    tok = _round_up(raw_tok, ((4096, 256), (8192, 512), (math.inf, 1024)), floor=2048)
    # per micro-batch: the pipeline holds one per stage in flight
    return min(bs, tok) * ev.pp * (ev.tp if ev.par.attention_dp else 1)
