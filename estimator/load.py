"""Serving under load: a replica shared by many users, each in a closed loop.

Each user sends a request, receives its answer, thinks (``think_time_s`` on average,
exponential), and sends the next. The engine runs continuous batching: requests take a KV
slot (at most ``slots``: what memory and the engine's ``max_num_seqs`` allow) and join the
running batch; prompts are prefilled in chunks of at most ``chunk_tokens`` per iteration,
riding along the decode iterations of the sequences already running.

Analytic model (what the planner uses; :mod:`estimator.simulate` is the reference it is
tested against). Per user count ``N``, one fixed point in the request rate, found by
bisection (see :func:`load_point`):

- cycle ``C = think + TTFT + (O−1)·tpot``; request rate ``λ = N/C``, at most the
  saturation rate (GPU time with every slot decoding, plus every prompt's prefill work);
- decoding sequences ``b = λ·(O−1)·tpot`` (Little's law), at most ``slots``;
- prefill share of time ``ρ = λ·I·s`` from the *other* users (``s``: marginal prefill seconds
  per prompt token); iterations stretch to ``t_iter(b)/(1−ρ)`` (prefill/decode
  interference), so ``tpot = t_iter/(1−ρ)/E`` with ``E`` tokens per iteration (1, or the
  speculative expectation ``(1−α^(k+1))/(1−α)``);
- TTFT = wait for a KV slot + wait for the prefill queue (both finite-source queues,
  M/M/c//N, with the prefill wait halved for near-deterministic service by
  Pollaczek–Khinchine) + the residual of the iteration running on arrival + the prompts the
  engine admits with it + the request's own prefill (its FLOPs plus one iteration per
  chunk). Iterations that carry prompts are longer, so an arrival more likely lands in one:
  the residual is half the length-biased iteration ``T̄ + Var T/T̄ = t_iter/(1−ρ) + ρ·I·s``
  (a Poisson count of prompts per iteration) where prompts share iterations; a prompt that
  fills the budget alone is served one at a time, and the prefill queue's wait already holds
  the residual of the one in service (the ``ρ·I·s`` term scales by the prompts the budget
  holds beside this one, at most 1). The engine admits every prompt that arrived
  during that iteration, before or after this one, into the next (up to the chunk budget):
  ``λ·T̄_lb`` of them, each ``I·s``. Past saturation the closed-system response-time law
  ``N = X·C`` sets TTFT, which then grows linearly with users. Percentiles use exponential
  tails of the waits, a uniform residual iteration and the Poisson quantile of the admitted
  count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import EstimatorError
from .fixed_point import rate_fixed_point
from .knots import BATCH_KNOTS, last_knot
from .queues import Repairman, poisson_quantile, tail_wait
from .steps import Steps


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
    rate: Any = None  # requests per second the users send (and the replica completes)

    def take(self, rows) -> LoadPoint:
        """The points at ``rows`` (an index or slice into the user counts)."""
        return LoadPoint(
            **{
                f: None if (v := getattr(self, f)) is None else v[rows]
                for f in self.__dataclass_fields__
            }
        )


def saturation_rate(steps: Steps) -> float:
    """Most requests per second the replica completes, from GPU time: with every slot
    decoding, each request needs ``(O−1)/E`` iterations of ``t_iter(slots)`` shared by
    ``slots`` sequences, plus its own prefill work ``I·s``."""
    st = steps
    c, o, e, i_tok = np.maximum(st.slots, 1), st.output_tokens, st.tokens_per_iter, st.input_tokens
    rate = c / (st.t_iter(c) * (o - 1) / e + c * i_tok * st.s_token)
    return float(rate) if np.ndim(rate) == 0 else rate


# Prefill service is near-deterministic (fixed prompt length): by Pollaczek–Khinchine the mean
# wait scales with (1 + Cs²)/2, half of the exponential-service value the finite-source formula
# assumes. Decode holds keep the exponential form (real answer lengths vary).
PREFILL_WAIT_FACTOR = 0.5


def decode_batch(steps: Steps, k) -> np.ndarray:
    """The decoding batch ``b`` the replica settles at for each ``k`` (seconds of decode
    per iteration-second a request brings: ``b = k · t_iter(b)``, Little's law), capped at
    the KV slots. ``t_iter`` is piecewise linear between the batch knots, so the least root
    is found exactly, segment by segment; the least root is the one a replica reaches as
    load ramps up from idle (above it the batch would shrink back to it). Its segment ends
    at the first knot ``x`` with ``k·t(x) <= x``, i.e. where the running minimum of
    ``t(x)/x`` first reaches ``1/k``: a binary search, whatever the table's length."""
    k = np.atleast_1d(np.asarray(k, float))
    table = steps.iter_table
    if table.ndim == 1:
        table, rows = table[None, :], np.zeros(len(k), np.intp)
    else:
        rows = np.broadcast_to(steps.config, k.shape)
    width = table.shape[1]
    slots = np.maximum(np.asarray(steps.slots, np.intp), 1)
    last = last_knot(slots, width)  # the knot at or past
    last = np.broadcast_to(last, k.shape)
    ratio = steps.decode_ratio
    with np.errstate(divide="ignore"):
        thr = np.where(k > 0, 1.0 / k, np.inf)
    lo, hi = np.ones(k.shape, np.intp), last.copy()
    found = ratio[rows, last - 1] <= thr
    while True:  # the least knot j in [1, last] with ratio(j) <= 1/k (where there is one)
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        ok = ratio[rows, mid - 1] <= thr
        hi = np.where(open_ & ok, mid, hi)
        lo = np.where(open_ & ~ok, mid + 1, lo)
    x1, x0 = BATCH_KNOTS[lo], BATCH_KNOTS[lo - 1]
    hj = k * table[rows, lo] - x1
    hprev = k * table[rows, lo - 1] - x0
    root = x0 + hprev / np.maximum(hprev - hj, 1e-300) * (x1 - x0)
    root = np.minimum(np.where(k > 0, root, 0.0), slots)  # no load: nothing decodes
    return np.where(found | (k <= 0), root, np.asarray(steps.slots, float))


def within_slots(demand, slots):
    """KV-slot demand that memory holds: n users on n slots with no think time want n (the
    float arithmetic can make it n plus a rounding error, which must not read as a miss)."""
    return demand <= slots * (1 + 1e-9)


def _closed_loop(steps: Steps, n: np.ndarray, think_time_s, config):
    """The implied request rate of ``n`` users as a function of the rate (the load model of
    :func:`load_point`, every user count on its own), and what its results are read with."""
    st = steps.at(config)
    o, e, i_tok = st.output_tokens, st.tokens_per_iter, st.input_tokens
    c = np.maximum(st.slots, 1)
    n_chunks = np.ceil(i_tok / st.chunk)
    s_pf = i_tok * st.s_token  # what a prompt costs the replica (one stage's share)
    s_first = st.first_token_prefill  # what it costs its own first token
    others = np.maximum(n - 1, 0) / np.maximum(n, 1)  # a request never waits on itself
    prefill_queue, slot_queue = Repairman(n, 1), Repairman(n, c)

    # prompts the engine can admit with one more in an iteration (its chunk budget); a
    # prompt longer than the budget shares its iterations with none
    admits = np.maximum(st.chunk / np.maximum(i_tok, 1) - 1.0, 0.0)

    def at_rate(lam, only=None):
        rho = np.minimum(lam * s_pf * others, 0.995)  # prefill share of the other users
        b = np.minimum(decode_batch(st, lam * (o - 1) / ((1 - rho) * e)), c)
        t_b = st.t_iter(b)
        # a decoding request sees itself and the others' batch (the arrival theorem, with
        # Schweitzer's b·(N−1)/N for the others): at light load, more than the time average b
        t_it = st.t_iter(np.minimum(1.0 + b * others, c)) / (1 - rho)
        t_it = np.maximum(t_it, t_b / (1 - rho))  # never below the time-average batch's
        dec_time = (o - 1) * t_it / e
        # a request's own prefill, as it waits for it: each of its chunks' iterations also
        # streams the experts the chunk picks (MoE; Steps.t_prompt_iter)
        own = s_first + n_chunks * st.t_prompt_iter(b)
        pw_pf, w_pf = prefill_queue(think_time_s + dec_time + own - s_pf, s_pf, only)
        w_pf = w_pf * PREFILL_WAIT_FACTOR
        pw_sl, w_sl = slot_queue(think_time_s + w_pf, own + dec_time, only)
        busy = np.minimum(1.0, lam * (own + dec_time) * others)
        # the iteration running on arrival, length-biased (see the module's docstring), and
        # the others' prompts admitted with this one: a request's own prefill does not wait
        # for those behind it in a queue, but it does share their iteration
        t_lb = t_b / (1 - rho) + rho * s_pf * np.minimum(admits, 1.0)
        together = np.minimum(lam * others * t_lb, admits)
        ttft = w_sl + w_pf + busy * (t_lb / 2 + together * s_pf) + own + st.request_s
        implied = n / (think_time_s + ttft + dec_time)
        return implied, (b, rho, t_it, dec_time, own, pw_pf, w_pf, pw_sl, w_sl, busy, t_lb, ttft)

    return at_rate, (st, o, e, c, s_pf, others, admits)


def load_point(
    steps: Steps,
    users,
    think_time_s=0.0,
    percentile=90.0,
    config=None,
    rate_bracket=None,
) -> LoadPoint:
    """Solve the closed-loop model for each user count. At a request rate ``λ`` everything
    follows (decoding batch, iteration time, the waits of the finite-source queues for KV
    slots and for prefill, :class:`~estimator.queues.Repairman`), and so does the rate the
    users would then send, ``N / (think + TTFT + decode)``. That implied rate never rises
    with ``λ`` (more load only lengthens every wait: each queue's wait plus its users' time
    away grows with the time away), so the fixed point is unique (:func:`rate_fixed_point`); at
    the saturation rate the closed-system response-time law ``N = X·(think + TTFT + decode)``
    sets TTFT, which then grows linearly with users. ``steps`` stacked
    (:meth:`Steps.stack`): ``config`` gives each user count's configuration, and all are
    solved together; ``think_time_s`` and ``percentile`` are one value for all, or one per
    user count (replicas of several workloads solved together). ``rate_bracket``: per user
    count, request rates below and above its own (those of fewer and of more users on the
    same replica, :attr:`LoadPoint.rate`): the fixed point starts from them."""
    n = np.atleast_1d(np.asarray(users, float))
    at_rate, (st, o, e, c, s_pf, others, admits) = _closed_loop(steps, n, think_time_s, config)
    x_max = saturation_rate(st)

    def narrow(rows):  # the same model over some of the user counts (settling ones)
        think = think_time_s if np.ndim(think_time_s) == 0 else np.asarray(think_time_s)[rows]
        cfg = None if config is None else np.broadcast_to(np.asarray(config), n.shape)[rows]
        return _closed_loop(steps, n[rows], think, cfg)[0]

    lam, saturated = rate_fixed_point(at_rate, x_max, n, rate_bracket, narrow)
    _, (b, rho, t_it, dec_time, own, pw_pf, w_pf, pw_sl, w_sl, busy, t_lb, ttft) = at_rate(lam)
    law = n / lam - think_time_s - dec_time  # the response-time law, binding at saturation
    ttft = np.where(saturated, np.maximum(ttft, law), ttft)
    p = percentile / 100.0
    # the iteration running on arrival has a uniform residual (its p-quantile is p·T̄_lb);
    # the prompts admitted with this one are a Poisson count (its p-quantile)
    together_p = poisson_quantile(lam * others * t_lb, p, np.broadcast_to(admits, lam.shape))
    waits = tail_wait(pw_pf, w_pf, p) + tail_wait(pw_sl, w_sl, p)
    ttft_p = np.maximum(own + st.request_s + busy * (p * t_lb + together_p * s_pf) + waits, ttft)
    in_flight = np.minimum(lam * (own + dec_time), c)
    demand = n * (own + dec_time) / (think_time_s + own + dec_time)  # KV slots wanted
    tpot = t_it / e
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
        memory_gb=st.memory_gb(in_flight),
        fits=within_slots(demand, c),
        stable=~saturated,
        rate=lam,
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


def parse_disaggregation(text: str) -> tuple[int, int]:
    """'P:D' -> (prefill replicas, decode replicas)."""
    try:
        p, d = (int(x) for x in text.split(":"))
    except ValueError:
        raise EstimatorError(f"--disaggregate expects P:D (e.g. 1:2), not '{text}'") from None
    if p < 1 or d < 1:
        raise EstimatorError("--disaggregate needs at least one prefill and one decode copy")
    return p, d
