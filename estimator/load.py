"""Serving under load: a replica shared by many users, each in a closed loop.

Each user sends a request, receives its answer, thinks (``think_time_s`` on average,
exponential), and sends the next. The engine runs continuous batching: requests take a KV
slot (at most ``slots``: what memory and the engine's ``max_num_seqs`` allow) and join the
running batch; prompts are prefilled in chunks of at most ``chunk_tokens`` per iteration,
riding along the decode iterations of the sequences already running.

Analytic model (what the planner uses; :mod:`estimator.simulate` is the reference it is
tested against). Per user count ``N``, solved as a damped fixed point:

- cycle ``C = think + TTFT + (O−1)·tpot``; request rate ``λ = N/C``, at most the
  saturation rate (GPU time with every slot decoding, plus every prompt's prefill work);
- decoding sequences ``b = λ·(O−1)·tpot`` (Little's law), at most ``slots``;
- prefill share of time ``ρ = λ·I·s`` from the *other* users (``s``: marginal prefill seconds
  per prompt token); iterations stretch to ``t_iter(b)/(1−ρ)`` (prefill/decode
  interference), so ``tpot = t_iter/(1−ρ)/E`` with ``E`` tokens per iteration (1, or the
  speculative expectation ``(1−α^(k+1))/(1−α)``);
- TTFT = wait for a KV slot + wait for the prefill queue (both finite-source queues,
  M/M/c//N, with the prefill wait halved for near-deterministic service by
  Pollaczek–Khinchine) + the residual of the iteration running on arrival + the request's
  own prefill (its FLOPs plus one iteration per chunk). Past saturation the closed-system
  response-time law ``N = X·C`` sets TTFT, which then grows linearly with users.
  Percentiles use exponential tails of the waits and a uniform residual iteration.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .errors import EstimatorError
from .llm import Evaluator


class Speculative(BaseModel):
    """Speculative decoding: ``tokens`` proposed per step, each accepted with probability
    ``acceptance`` (independently; Leviathan et al. 2023). ``draft_cost``: one draft token's
    time as a share of a target decode step (a draft model ~0.05–0.15; n-gram lookup ~0)."""

    model_config = ConfigDict(extra="forbid")
    method: Literal["draft", "ngram"] = "draft"
    tokens: int = Field(4, ge=1, le=16)
    acceptance: float = Field(0.7, ge=0, le=1)
    draft_cost: float | None = Field(None, ge=0, le=1)

    def cost_ratio(self) -> float:
        if self.draft_cost is not None:
            return self.draft_cost
        return 0.0 if self.method == "ngram" else 0.1

    def tokens_per_step(self) -> float:
        a, k = self.acceptance, self.tokens
        return float(k + 1) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)


class ServingOptions(BaseModel):
    """Optional serving features; every default is off or neutral."""

    model_config = ConfigDict(extra="forbid")
    think_time_s: float = Field(0.0, ge=0, description="mean pause between answer and next prompt")
    prefix_hit_rate: float = Field(0.0, ge=0, lt=1, description="share of prompt tokens cached")
    chunk_tokens: int | None = Field(None, ge=16, description="prefill tokens per iteration")
    speculative: Speculative | None = None


@dataclass
class Steps:
    """Everything the load model and the simulator need about one replica and request."""

    slots: int  # most sequences holding KV at once
    input_tokens: int  # prompt tokens still to prefill (after prefix-cache hits)
    output_tokens: int
    chunk: int
    s_token: float  # marginal prefill seconds per prompt token (rides on a decode iteration)
    s_alone: float  # prefill of one prompt on an idle replica
    tokens_per_iter: float  # E
    iter_table: np.ndarray  # iteration seconds by number of decoding sequences (index 0..slots)
    kv_gb_table: np.ndarray  # per-GPU KV+state GB by sequences holding KV
    weights_gb: float
    fixed_gb: float

    def memory_gb(self, in_flight):
        """Per-GPU memory with ``in_flight`` sequences holding KV."""
        kv = np.interp(in_flight, np.arange(len(self.kv_gb_table)), self.kv_gb_table)
        return self.weights_gb + self.fixed_gb + kv

    def t_iter(self, b):
        """Iteration seconds at (possibly fractional) decode batch ``b``."""
        b = np.clip(np.asarray(b, float), 0, self.slots)
        return np.interp(b, np.arange(len(self.iter_table)), self.iter_table)


def prepare_steps(
    ev: Evaluator,
    input_tokens: int,
    output_tokens: int,
    opts: ServingOptions | None = None,
    encoder_s: float = 0.0,
) -> Steps:
    """``encoder_s``: seconds of per-request work before the language model's prefill (a
    vision-language model's image encoder); it adds to every prompt's prefill."""
    opts = opts or ServingOptions()
    h = opts.prefix_hit_rate
    i_eff = max(1, round(input_tokens * (1 - h)))
    ctx_mem = i_eff + output_tokens  # a sequence's own KV; the shared prefix is held once
    shared = ev.kv_bytes_per_gpu(1, input_tokens - i_eff) if h > 0 else 0.0
    per_seq = float(ev.kv_bytes_per_gpu(1, ctx_mem))
    mem_slots = int(max(ev.kv_budget - shared, 0) // max(per_seq, 1e-9))
    slots = max(0, min(mem_slots, ev.max_seqs))
    one = ev.prefill(1, i_eff)
    s_tok = float(one.compute + one.comm + encoder_s) / i_eff
    b = np.arange(0, max(slots, 1) + 1, dtype=float)
    ctx = input_tokens + output_tokens / 2
    spec = opts.speculative
    bb = np.maximum(b, 1)  # an iteration with only prefill still streams the weights
    if spec is None:
        it = ev.decode_step(bb, ctx).total
        e = 1.0
    else:
        verify = ev.decode_step(bb, ctx, tokens_per_seq=spec.tokens + 1).total
        draft = spec.tokens * spec.cost_ratio() * ev.decode_step(bb, ctx).total
        it = verify + draft
        e = spec.tokens_per_step()
    kv = np.asarray(ev.kv_bytes_per_gpu(b, ctx_mem), float) + shared
    return Steps(
        slots=slots,
        input_tokens=i_eff,
        output_tokens=output_tokens,
        chunk=opts.chunk_tokens or ev.engine.max_num_batched_tokens,
        s_token=s_tok,
        s_alone=float(one.total) + encoder_s,
        tokens_per_iter=e,
        iter_table=np.asarray(it, float),
        kv_gb_table=kv / 1e9,
        weights_gb=ev.weight_bytes / 1e9,
        fixed_gb=(ev.activation_bytes + ev.overhead_bytes) / 1e9,
    )


class Repairman:
    """Finite-source queue M/M/c//N (the machine-repairman model): ``n`` users each come
    back after ``think`` seconds on average and hold one of ``c`` servers for ``hold``
    seconds. Exact, vectorised over an array of populations, in log space. The part of
    ``log p_k`` that does not depend on ``hold/think`` is computed once, so re-solving
    inside the fixed point costs a few array operations."""

    EXACT_UP_TO = 384  # single-server populations above this use the infinite-source M/M/1

    def __init__(self, n, c: int):
        self.all_n = np.atleast_1d(np.asarray(n, float))
        self.rows = self.all_n > c  # with no more users than servers nobody ever waits
        # a single server facing hundreds of users sees effectively Poisson arrivals: the
        # finite-source correction vanishes, and the exact sum would cost O(N) per user count
        self.open_rows = (self.all_n > self.EXACT_UP_TO) if c == 1 else np.zeros_like(self.rows)
        self.rows &= ~self.open_rows
        self.any_open = bool(self.open_rows.any())
        self.n = self.all_n[self.rows]
        self.c = c
        nmax = int(self.n.max()) if self.n.size else 0
        self.k = np.arange(nmax + 1, dtype=float)
        logs = np.log(np.maximum(np.arange(nmax + 2, dtype=float), 1.0))
        j = np.arange(1, nmax + 1)
        # term_j = log(N - j + 1) - log(min(j, c)); A[n, k] = sum_{j<=k} term_j
        nn = self.n[:, None].astype(int)
        idx = np.clip(nn - j[None, :] + 1, 0, nmax + 1)
        term = logs[idx] - logs[np.minimum(j, max(c, 1))][None, :]
        a = np.concatenate([np.zeros((len(self.n), 1)), np.cumsum(term, axis=1)], axis=1)
        self.valid = self.k[None, :] <= self.n[:, None]
        self.a = np.where(self.valid, a, -np.inf)
        self.served = np.minimum(self.k, c)[None, :]
        self.queued = np.maximum(self.k - c, 0)[None, :]

    def __call__(self, think, hold):
        """(probability an arrival waits, mean wait), over all the populations given."""
        shape = self.all_n.shape
        pw_all = np.zeros(shape)
        wq_all = np.zeros(shape)
        if not (self.any_open or self.n.size):
            return pw_all, wq_all
        hold = np.asarray(hold, float) * np.ones(shape)
        think = np.asarray(think, float) * np.ones(shape)
        if self.any_open:
            h, z = hold[self.open_rows], think[self.open_rows]
            rho = np.minimum(self.all_n[self.open_rows] * h / (z + h), 0.999)
            pw_all[self.open_rows] = rho
            wq_all[self.open_rows] = rho * h / (1 - rho)
        if not self.n.size:
            return pw_all, wq_all
        h, z = hold[self.rows], think[self.rows]
        r = np.log(np.maximum(h, 1e-30) / np.maximum(z, 1e-30))[:, None]
        logp = self.a + self.k[None, :] * r
        logp -= logp.max(axis=1, keepdims=True)
        p = np.exp(logp)
        p /= p.sum(axis=1, keepdims=True)
        x = (self.served * p).sum(axis=1) / np.maximum(h, 1e-30)  # throughput
        wq = (self.queued * p).sum(axis=1) / np.maximum(x, 1e-30)  # Little's law
        pw_all[self.rows] = p[:, self.c :].sum(axis=1)
        wq_all[self.rows] = wq
        return pw_all, wq_all


@dataclass
class LoadPoint:
    """Arrays over the user counts asked for."""

    users: Any
    ttft_s: Any  # mean
    ttft_pct_s: Any  # at the percentile asked
    tpot_s: Any
    per_user_tokens_per_s: Any
    output_tokens_per_s: Any  # replica
    batch: Any  # mean sequences decoding
    in_flight: Any  # mean sequences holding KV (prefilling or decoding)
    prefill_share: Any
    slot_wait_prob: Any
    memory_gb: Any  # per GPU, at the mean load
    fits: Any  # mean demand for KV slots within what memory holds
    stable: Any


def saturation_rate(steps: Steps) -> float:
    """Most requests per second the replica completes, from GPU time: with every slot
    decoding, each request needs ``(O−1)/E`` iterations of ``t_iter(slots)`` shared by
    ``slots`` sequences, plus its own prefill work ``I·s``."""
    st = steps
    c, o, e, i_tok = max(st.slots, 1), st.output_tokens, st.tokens_per_iter, st.input_tokens
    return c / (float(st.t_iter(c)) * (o - 1) / e + c * i_tok * st.s_token)


def _settled(new, old, tolerance: float) -> bool:
    """Every element of a fixed-point iterate moved by at most ``tolerance`` (relative)."""
    return bool(np.all(np.abs(new - old) <= tolerance * old))


def tail_wait(pw, w, p: float):
    """The ``p``-quantile of a queueing wait that is zero with probability ``1 - pw`` and
    otherwise exponential with mean ``w / pw`` (the M/M/c conditional-wait shape)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            pw > 1 - p,
            (w / np.maximum(pw, 1e-12)) * np.log(np.maximum(pw, 1e-300) / (1 - p)),
            0.0,
        )


# Prefill service is near-deterministic (fixed prompt length): by Pollaczek–Khinchine the mean
# wait scales with (1 + Cs²)/2, half of the exponential-service value the finite-source formula
# assumes. Decode holds keep the exponential form (real answer lengths vary).
PREFILL_WAIT_FACTOR = 0.5
DAMP = 0.5  # fixed-point step: the share of the new iterate taken each round


def load_point(
    steps: Steps,
    users,
    think_time_s: float = 0.0,
    percentile: float = 90.0,
    iterations: int = 60,
    tolerance: float = 2e-4,
    start: LoadPoint | None = None,
) -> LoadPoint:
    """Solve the closed-loop model for each user count (a damped fixed point). Waits come
    from finite-source queues (:func:`repairman`): for KV slots (``slots`` servers held for
    prefill + decode) and for the prefill work (one server, ``I·s`` per prompt). The
    response-time law of closed systems, ``N = X·(think + TTFT + decode)`` with ``X`` at most
    the saturation rate, bounds TTFT from below, so past saturation TTFT grows linearly."""
    n = np.atleast_1d(np.asarray(users, float))
    st = steps
    o, e, i_tok = st.output_tokens, st.tokens_per_iter, st.input_tokens
    c = max(st.slots, 1)
    x_max = saturation_rate(st)
    n_chunks = math.ceil(i_tok / st.chunk)
    s_pf = i_tok * st.s_token
    if start is not None:  # warm start: interpolate an earlier solution (e.g. a coarser grid)
        tpot = np.interp(n, start.users, start.tpot_s)
        ttft = np.interp(n, start.users, np.minimum(start.ttft_s, 1e6))
    else:
        tpot = np.full_like(n, float(st.t_iter(1)) / e)
        ttft = np.full_like(n, st.s_alone)
    others = np.maximum(n - 1, 0) / np.maximum(n, 1)  # a request never waits on itself
    prefill_queue, slot_queue = Repairman(n, 1), Repairman(n, c)

    def solve(tpot, ttft):
        dec_time = (o - 1) * tpot
        lam = np.minimum(n / (think_time_s + ttft + dec_time), x_max)
        b = np.minimum(lam * dec_time, c)
        rho = np.minimum(lam * s_pf * others, 0.995)
        own = s_pf + n_chunks * st.t_iter(b)
        t_it = st.t_iter(b) / (1 - rho)
        pw_pf, w_pf = prefill_queue(think_time_s + dec_time + own - s_pf, s_pf)
        w_pf = w_pf * PREFILL_WAIT_FACTOR
        pw_sl, w_sl = slot_queue(think_time_s + np.maximum(w_pf, 0), own + dec_time)
        busy = np.minimum(1.0, lam * (own + dec_time) * others)
        return dec_time, lam, b, rho, own, t_it, pw_pf, w_pf, pw_sl, w_sl, busy

    for _ in range(iterations):
        dec_time, lam, b, rho, own, t_it, _, w_pf, _, w_sl, busy = solve(tpot, ttft)
        # closed-system response-time law, binding once the replica is saturated
        law = np.where(lam >= x_max * 0.999, n / lam - think_time_s - dec_time, 0.0)
        new_tpot = (1 - DAMP) * tpot + DAMP * t_it / e
        new_ttft = (1 - DAMP) * ttft + DAMP * np.maximum(w_sl + w_pf + busy * t_it / 2 + own, law)
        done = _settled(new_tpot, tpot, tolerance) and _settled(new_ttft, ttft, tolerance)
        tpot, ttft = new_tpot, new_ttft
        if done:
            break
    dec_time, lam, b, rho, own, t_it, pw_pf, w_pf, pw_sl, w_sl, busy = solve(tpot, ttft)
    p = percentile / 100.0
    # the iteration running on arrival has a uniform residual: its p-quantile is p·t_iter
    waits = tail_wait(pw_pf, w_pf, p) + tail_wait(pw_sl, w_sl, p)
    ttft_p = np.maximum(own + busy * p * t_it + waits, ttft)
    saturated = lam >= x_max * 0.999
    in_flight = np.minimum(lam * (own + dec_time), c)
    demand = n * (own + dec_time) / (think_time_s + own + dec_time)  # KV slots wanted
    mem = st.memory_gb(in_flight)
    return LoadPoint(
        users=n,
        ttft_s=ttft,
        ttft_pct_s=ttft_p,
        tpot_s=tpot,
        per_user_tokens_per_s=1.0 / tpot,
        output_tokens_per_s=lam * o,
        batch=b,
        in_flight=in_flight,
        prefill_share=rho,
        slot_wait_prob=pw_sl,
        memory_gb=mem,
        fits=demand <= c,
        stable=~saturated,
    )


def knee(points: LoadPoint, ttft_s: float | None = None, tokens_per_s: float | None = None) -> int:
    """Most users before TTFT (at the percentile) or per-user speed breaks its target; with
    no targets, before latency turns sharply upward: TTFT beyond 3x its light-load value or
    per-user speed below half of it. 0 if even the first point breaks it."""
    t, v = points.ttft_pct_s, points.per_user_tokens_per_s
    if ttft_s is None and tokens_per_s is None:
        ok = (t <= 3 * t[0]) & (v >= 0.5 * v[0])
    else:
        ok = np.ones(len(t), bool)
        if ttft_s is not None:
            ok &= t <= ttft_s
        if tokens_per_s is not None:
            ok &= v >= tokens_per_s
    ok &= points.stable
    good = np.cumprod(ok).astype(bool)
    return int(points.users[good][-1]) if good.any() else 0


def max_users_fit(points: LoadPoint) -> int:
    """Most users whose mean demand for KV slots fits in memory."""
    f = np.cumprod(points.fits).astype(bool)
    return int(points.users[f][-1]) if f.any() else 0


def disaggregated_point(
    steps: Steps,
    prefill_replicas: int,
    decode_replicas: int,
    users,
    think_time_s: float = 0.0,
    percentile: float = 90.0,
    kv_transfer_s: float = 0.0,
    iterations: int = 60,
    tolerance: float = 2e-4,
    start: LoadPoint | None = None,
) -> LoadPoint:
    """Disaggregated prefill/decode (DistServe, Splitwise): ``prefill_replicas`` copies of the
    model only prefill, ``decode_replicas`` only decode; each prompt's KV cache moves from one
    pool to the other (``kv_transfer_s``). Prefill no longer interferes with decoding, and
    prompts queue only behind prompts. TTFT = prefill-pool wait + the prefill (the prefill
    instance emits the first token); the transfer delays the second token. Both waits are
    finite-source queues as in :func:`load_point`; users are for the whole unit."""
    n = np.atleast_1d(np.asarray(users, float))
    st = steps
    o, e = st.output_tokens, st.tokens_per_iter
    c_dec = max(st.slots, 1) * decode_replicas
    s_pf = st.s_alone  # a prefill instance runs prompts one after another
    pf_queue, slot_queue = Repairman(n, prefill_replicas), Repairman(n, c_dec)
    x_pf = prefill_replicas / s_pf
    x_dec = c_dec * e / (float(st.t_iter(st.slots)) * (o - 1) + kv_transfer_s * e)
    x_max = min(x_pf, x_dec)
    if start is not None:
        tpot = np.interp(n, start.users, start.tpot_s)
        ttft = np.interp(n, start.users, np.minimum(start.ttft_s, 1e6))
    else:
        tpot = np.full_like(n, float(st.t_iter(1)) / e)
        ttft = np.full_like(n, s_pf)

    def solve(tpot, ttft):
        dec_time = (o - 1) * tpot + kv_transfer_s
        lam = np.minimum(n / (think_time_s + ttft + dec_time), x_max)
        b = np.minimum(lam * (o - 1) * tpot / decode_replicas, st.slots)
        pw_pf, w_pf = pf_queue(think_time_s + dec_time, s_pf)
        pw_sl, w_sl = slot_queue(think_time_s + ttft, dec_time)
        return dec_time, lam, b, pw_pf, w_pf * PREFILL_WAIT_FACTOR, pw_sl, w_sl

    for _ in range(iterations):
        dec_time, lam, b, _, w_pf, _, w_sl = solve(tpot, ttft)
        law = np.where(lam >= x_max * 0.999, n / lam - think_time_s - dec_time, 0.0)
        new_tpot = (1 - DAMP) * tpot + DAMP * (st.t_iter(b) / e + w_sl / max(o - 1, 1))
        new_ttft = (1 - DAMP) * ttft + DAMP * np.maximum(w_pf + s_pf, law)
        done = _settled(new_tpot, tpot, tolerance) and _settled(new_ttft, ttft, tolerance)
        tpot, ttft = new_tpot, new_ttft
        if done:
            break
    dec_time, lam, b, pw_pf, w_pf, pw_sl, w_sl = solve(tpot, ttft)
    q_pf = tail_wait(pw_pf, w_pf, percentile / 100.0)
    ttft_p = np.maximum(s_pf + q_pf, ttft)
    in_flight = np.minimum(lam * dec_time / decode_replicas, st.slots)
    demand = n * dec_time / (think_time_s + ttft + dec_time) / decode_replicas
    mem = st.memory_gb(in_flight)
    return LoadPoint(
        users=n,
        ttft_s=ttft,
        ttft_pct_s=ttft_p,
        tpot_s=tpot,
        per_user_tokens_per_s=1.0 / tpot,
        output_tokens_per_s=lam * o,
        batch=b,
        in_flight=in_flight,
        prefill_share=np.zeros_like(n),
        slot_wait_prob=pw_sl,
        memory_gb=mem,
        fits=demand <= st.slots,
        stable=lam < x_max * 0.999,
    )


def kv_transfer_seconds(ev: Evaluator, input_tokens: int) -> float:
    """Moving one prompt's KV cache between pools over the scale-out network: each GPU of the
    prefill replica sends its shard through its own NIC (falls back to PCIe if the preset has
    no NIC), plus a network latency."""
    from .efficiency import link_defaults

    per_gpu = float(ev.kv_bytes_per_gpu(1, input_tokens))
    bw = (ev.gpu.scale_out_gb_s or ev.gpu.pcie_gb_s) * 1e9
    return per_gpu / bw + link_defaults().nic_latency_us * 1e-6


def load_curve(
    ev: Evaluator,
    steps: Steps,
    think_time_s: float,
    percentile: float,
    split: tuple[int, int] | None = None,
) -> Callable[..., LoadPoint]:
    """users -> LoadPoint for one replica (``split`` None) or for a disaggregated unit of
    ``split = (prefill replicas, decode replicas)``: the one place that choice is made."""
    if split is None:
        return lambda users, **kw: load_point(steps, users, think_time_s, percentile, **kw)
    p, d = split
    kt = kv_transfer_seconds(ev, steps.input_tokens)
    return lambda users, **kw: disaggregated_point(
        steps, p, d, users, think_time_s, percentile, kv_transfer_s=kt, **kw
    )


def users_past_saturation(
    steps: Steps, think_time_s: float, split: tuple[int, int] | None = None
) -> int:
    """A user count safely past saturation (1.5x the most requests per second the replica or
    unit completes, times one request's cycle at full batch): the top of a capacity scan."""
    st = steps
    decode_s = (st.output_tokens - 1) * float(st.t_iter(st.slots)) / st.tokens_per_iter
    if split is None:
        rate = saturation_rate(st)
    else:
        p, d = split
        rate = min(
            p / st.s_alone,
            d
            * max(st.slots, 1)
            * st.tokens_per_iter
            / (float(st.t_iter(st.slots)) * (st.output_tokens - 1)),
        )
    return max(4, math.ceil(1.5 * rate * (think_time_s + st.s_alone + decode_s)))


def parse_disaggregation(text: str) -> tuple[int, int]:
    """'P:D' -> (prefill replicas, decode replicas)."""
    try:
        p, d = (int(x) for x in text.split(":"))
    except ValueError:
        raise EstimatorError(f"--disaggregate expects P:D (e.g. 1:2), not '{text}'") from None
    if p < 1 or d < 1:
        raise EstimatorError("--disaggregate needs at least one prefill and one decode copy")
    return p, d
