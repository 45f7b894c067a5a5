"""Discrete-event simulation of a continuous-batching scheduler: the reference the analytic
load model (:mod:`estimator.load`) is tested against.

Iteration by iteration, using the estimator's step times (:class:`estimator.steps.Steps`):
users in a closed loop (exponential think time, seeded); requests take a KV slot FCFS when
one is free (at most ``slots``); each iteration runs one decode token for every decoding
sequence (or a speculative step with a random number of accepted tokens) plus up to
``chunk`` prompt tokens of the admitted requests still prefilling, FCFS. Its time is
``t_iter(decoding) + prompt_tokens × s_token`` (an iteration carrying prompt tokens lasts at
least a lone sequence's plus the experts they pick: ``Steps.t_prompt_iter``). A request's
first token comes at the end of the iteration that finishes its prompt. Deterministic for a
given seed.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from .steps import Speculative, Steps


@dataclass
class SimResult:
    users: int
    requests: int
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    per_user_tokens_per_s: float
    output_tokens_per_s: float
    mean_batch: float

    def ttft_pct(self, p: float) -> float:
        return {50: self.ttft_p50_s, 90: self.ttft_p90_s, 99: self.ttft_p99_s}[int(p)]


def simulate(
    steps: Steps,
    users: int,
    think_time_s: float = 0.0,
    requests: int = 1500,
    warmup: int = 300,
    seed: int = 0,
    speculative: Speculative | None = None,
    max_iterations: int = 2_000_000,
    start: str = "spread",
) -> SimResult:
    """``start``: "spread" (users begin at random points of one request's duration, as
    real traffic does) or "together" (every user at once, as a synthetic benchmark's
    clients: the harness the waves formula of :mod:`estimator.harness` describes)."""
    if start not in ("spread", "together"):
        raise ValueError(f"start must be 'spread' or 'together', not {start!r}")
    rng = np.random.default_rng(seed)
    st = steps
    slots = max(st.slots, 1)
    o, i_tok, chunk = st.output_tokens, st.input_tokens, st.chunk
    t_table = st.t_iter(np.arange(slots + 1))  # every whole batch (the table has knots)
    # PP: a prompt's last chunk still crosses the later stages before its first token
    lag = max(float(st.first_token_prefill) - i_tok * float(st.s_token), 0.0)
    prompt_experts = float(st.prompt_experts_s)
    # the serving stack's own time: a request reaches the engine that long after it is sent,
    # and its TTFT counts from the sending
    stack_s = float(st.request_s)
    # events: users' next arrival times (heap of (time, user))
    # users start spread over one request's duration, so fixed-length requests do not march
    # in lockstep (real traffic is not synchronised); or all at once (a benchmark harness)
    span0 = st.s_alone + (o - 1) * float(st.t_iter(1)) / st.tokens_per_iter
    if start == "together":
        span0 = 0.0
    arrivals = [
        (float(rng.exponential(think_time_s)) if think_time_s > 0 else 0.0)
        + float(rng.uniform(0, span0))
        for u in range(users)
    ]
    arrivals = [(t, u) for u, t in enumerate(arrivals)]
    heapq.heapify(arrivals)
    waiting: deque = deque()  # (arrival time, user)
    prefilling: deque = deque()  # [arrival, user, prompt tokens left]
    decoding: list = []  # [arrival, user, first_token_time, tokens_left]
    now = 0.0
    done = 0
    ttfts, tpots = [], []
    out_tokens = 0
    t_start = None
    batch_time = 0.0
    busy_time = 0.0
    for _ in range(max_iterations):
        while arrivals and arrivals[0][0] <= now:
            t, u = heapq.heappop(arrivals)
            waiting.append((t, u))
        while waiting and len(prefilling) + len(decoding) < slots:
            t, u = waiting.popleft()
            prefilling.append([t, u, i_tok])
        if not prefilling and not decoding:
            if not arrivals:
                break
            now = max(now, arrivals[0][0])
            continue
        b = len(decoding)
        budget = chunk
        used = 0
        finished_prefill = []
        for req in prefilling:
            if budget <= 0:
                break
            take = min(req[2], budget)
            req[2] -= take
            budget -= take
            used += take
            if req[2] == 0:
                finished_prefill.append(req)
        dt = float(t_table[min(max(b, 1), len(t_table) - 1)])
        if used:  # a prompt chunk also streams the experts it picks (Steps.t_prompt_iter)
            dt = max(dt, float(t_table[1]) + prompt_experts)
        dt += used * st.s_token
        now += dt
        if t_start is not None:
            batch_time += b * dt
            busy_time += dt
        # decode progress
        still = []
        for seq in decoding:
            if speculative is None:
                gained = 1
            else:
                acc = 0
                while acc < speculative.tokens and rng.random() < speculative.acceptance:
                    acc += 1
                gained = acc + 1
            seq[3] -= gained
            if t_start is not None:
                out_tokens += gained
            if seq[3] <= 0:
                arrival, u, first, _ = seq
                done += 1
                if done == warmup:
                    t_start, batch_time, busy_time, out_tokens = now, 0.0, 0.0, 0
                if done > warmup:
                    tpots.append((now - first) / max(o - 1, 1))
                think = float(rng.exponential(think_time_s)) if think_time_s > 0 else 0.0
                heapq.heappush(arrivals, (now + think + stack_s, u))
            else:
                still.append(seq)
        decoding = still
        for req in finished_prefill:
            prefilling.remove(req)
            arrival, u, _ = req
            if done >= warmup:
                ttfts.append(now + lag - arrival + stack_s)
            if o > 1:
                decoding.append([arrival, u, now + lag, o - 1])
            else:
                done += 1
                heapq.heappush(arrivals, (now + stack_s, u))
        if done >= warmup + requests:
            break
    span = max(now - (t_start or 0.0), 1e-12)
    tt = np.array(ttfts) if ttfts else np.array([np.nan])
    tp = np.array(tpots) if tpots else np.array([np.nan])
    return SimResult(
        users=users,
        requests=len(tpots),
        ttft_mean_s=float(tt.mean()),
        ttft_p50_s=float(np.percentile(tt, 50)),
        ttft_p90_s=float(np.percentile(tt, 90)),
        ttft_p99_s=float(np.percentile(tt, 99)),
        tpot_mean_s=float(tp.mean()),
        per_user_tokens_per_s=float(1.0 / tp.mean()),
        output_tokens_per_s=out_tokens / span,
        mean_batch=batch_time / max(busy_time, 1e-12),
    )
