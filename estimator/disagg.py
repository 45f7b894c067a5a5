"""Disaggregated prefill/decode (DistServe, Splitwise) under closed-loop load: ``P`` copies of
the model only prefill, ``D`` only decode, and each prompt's KV cache moves between them."""

from __future__ import annotations

import math

import numpy as np

from .fixed_point import rate_fixed_point
from .llm import Evaluator
from .load import PREFILL_WAIT_FACTOR, LoadPoint, decode_batch, within_slots
from .queues import Repairman, tail_wait
from .steps import Steps

WAIT_ROUNDS = 60  # at most: the two queues' waits given a rate are a contraction
WAIT_TOLERANCE = 1e-12


def disaggregated_point(
    steps: Steps,
    prefill_replicas: int,
    decode_replicas: int,
    users,
    think_time_s: float = 0.0,
    percentile: float = 90.0,
    kv_transfer_s: float = 0.0,
) -> LoadPoint:
    """Prefill no longer interferes with decoding, and prompts queue only behind prompts.
    TTFT = prefill-pool wait + the prefill (the prefill instance emits the first token); the
    transfer and any wait for a decode slot delay the second token. Both waits are
    finite-source queues as in :func:`~estimator.load.load_point`, and the request rate is
    the unique fixed point of :func:`~estimator.fixed_point.rate_fixed_point`; users are for the
    whole unit."""
    n = np.atleast_1d(np.asarray(users, float))
    st = steps
    o, e = st.output_tokens, st.tokens_per_iter
    c_dec = max(st.slots, 1) * decode_replicas
    s_first = st.s_alone  # a prompt's prefill alone: every PP stage in turn
    s_pf = st.s_alone / st.stages  # what it holds the instance: its stages pipeline prompts
    pf_queue, slot_queue = Repairman(n, prefill_replicas), Repairman(n, c_dec)
    x_pf = prefill_replicas / s_pf
    per_request = float(st.t_iter(st.slots)) * (o - 1) + kv_transfer_s * e
    x_dec = c_dec * e / per_request if per_request > 0 else math.inf  # one token: none
    x_max = min(x_pf, x_dec)

    def at_rate(lam, only=None):
        per_replica = lam * (o - 1) / (e * decode_replicas)
        b = np.minimum(decode_batch(st, per_replica), st.slots)
        hold = (o - 1) * st.t_iter(b) / e + kv_transfer_s  # a decode slot, once it has one
        w_sl = np.zeros_like(n)
        for _ in range(WAIT_ROUNDS):  # each wait shortens the other's think time: settles
            pw_pf, w_pf = pf_queue(think_time_s + hold + w_sl, s_pf, only)
            w_pf = w_pf * PREFILL_WAIT_FACTOR
            before, (pw_sl, w_sl) = w_sl, slot_queue(think_time_s + w_pf + s_first, hold, only)
            if np.all(np.abs(w_sl - before) <= WAIT_TOLERANCE * (1 + hold)):
                break
        ttft = w_pf + s_first + st.request_s
        implied = n / (think_time_s + ttft + hold + w_sl)
        return implied, (b, hold, pw_pf, w_pf, pw_sl, w_sl, ttft)

    lam, saturated = rate_fixed_point(at_rate, x_max, n)
    _, (b, hold, pw_pf, w_pf, pw_sl, w_sl, ttft) = at_rate(lam)
    dec_time = hold + w_sl
    law = n / lam - think_time_s - dec_time  # the response-time law, binding at saturation
    ttft = np.where(saturated, np.maximum(ttft, law), ttft)
    q_pf = tail_wait(pw_pf, w_pf, percentile / 100.0)
    ttft_p = np.maximum(s_first + st.request_s + q_pf, ttft)
    if o > 1:
        tpot = (dec_time - kv_transfer_s) / (o - 1)
    else:  # no token follows the first: a decode step's time, as estimator.load reads it
        tpot = np.asarray(st.t_iter(np.maximum(b, 1)), float) / e
    in_flight = np.minimum(lam * hold / decode_replicas, st.slots)
    demand = n * hold / (think_time_s + ttft + dec_time) / decode_replicas
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
        memory_gb=st.memory_gb(in_flight),
        fits=within_slots(demand, st.slots),
        stable=~saturated,
    )


def kv_transfer_seconds(ev: Evaluator, input_tokens: int) -> float:
    """Moving one prompt's KV cache between pools over the scale-out network: each GPU of the
    prefill replica sends its shard through its own NIC (falls back to PCIe if the preset has
    no NIC), plus a network latency."""
    from .efficiency import link_defaults

    per_gpu = float(ev.kv_bytes_per_gpu(1, input_tokens))
    bw = (ev.gpu.scale_out_gb_s or ev.gpu.pcie_gb_s) * 1e9
    return per_gpu / bw + link_defaults().nic_latency_us * 1e-6
