"""Capacity of one replica: the most concurrent sessions (seats) it serves while meeting the
workload's targets *under load* (queueing, prefill/decode interference, think time; see
:mod:`estimator.load`) and fitting memory. This is the interface other model families
implement with their own demand unit (images/s, audio streams, docs/s...)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator import Evaluator
from estimator.bands import pessimistic_factor
from estimator.curve import load_curve, users_past_saturation
from estimator.load import prepare_steps, saturation_rate

from .workloads import LLMWorkload


@dataclass(frozen=True)
class Capacity:
    units: int  # seats this replica serves within every target (0: none)
    binding: str  # what stops it going higher: memory | ttft | tokens_per_s
    best_ttft_s: float  # at one session: the best this candidate can do
    best_tokens_per_s: float
    max_batch_memory: int  # KV slots


@dataclass(frozen=True)
class OperatingPoint:
    """Metrics at a given load per replica."""

    batch: int  # sessions (seats) on the replica
    ttft_s: float  # at the workload's percentile
    ttft_mean_s: float
    tokens_per_s: float
    output_tokens_per_s: float
    bottleneck: str
    kv_gb: float


def targets(w: LLMWorkload, gpu) -> tuple[float | None, float | None]:
    """The TTFT and per-user speed the point estimate must reach on this GPU so the real
    ones meet the workload's targets at the scenario's confidence (bands: estimator/bands.py).
    Without a confidence, the targets themselves."""
    c = w._confidence
    ttft = w.ttft_s / pessimistic_factor("ttft", gpu, c) if w.ttft_s else None
    tps = w.tokens_per_s * pessimistic_factor("tpot", gpu, c) if w.tokens_per_s else None
    return ttft, tps


def _ok(lp, w: LLMWorkload, gpu):
    ok = np.asarray(lp.fits, bool).copy()
    ttft, tps = targets(w, gpu)
    if ttft:
        ok &= lp.ttft_pct_s <= ttft
    if tps:
        ok &= lp.per_user_tokens_per_s >= tps
    return ok


def steps_for(ev: Evaluator, w: LLMWorkload):
    """The load model's inputs for a workload on a candidate. A vision-language workload
    adds its images' visual tokens to every prompt and its image encoder's time to every
    prefill (on this candidate's GPUs)."""
    vlm = w.vision_model
    if vlm is None or not w.images_per_request:
        return prepare_steps(ev, w.input_tokens, w.output_tokens, w.serving())
    width, height = w.image_size()
    vis, _ = vlm.tokens(width, height)
    enc = float(vlm.vision_seconds(ev.gpu, ev.par, w.images_per_request, width, height))
    return prepare_steps(
        ev, w.input_tokens + w.images_per_request * vis, w.output_tokens, w.serving(), encoder_s=enc
    )


def pareto_splits(cands, w: LLMWorkload):
    """Of the splits of one GPU type and size, keep those no other split beats on every
    load-model input at once (KV slots, saturation rate, single-stream iteration, idle
    prefill): capacity rises with each, so a split beaten on all of them serves fewer seats.
    Yields (candidate, evaluator, steps)."""
    groups: dict[tuple, list] = {}
    for cand, ev in cands:
        st = steps_for(ev, w)
        proxy = (
            st.slots,
            saturation_rate(st) if st.slots else 0.0,
            -float(st.t_iter(1)),
            -st.s_alone,
        )
        groups.setdefault((cand.gpu.name, cand.gpus), []).append((cand, ev, st, proxy))
    for members in groups.values():
        for cand, ev, st, p in members:
            beaten = any(
                all(a >= b for a, b in zip(q, p, strict=True)) and q != p for _, _, _, q in members
            )
            if not beaten:
                yield cand, ev, st


def _curve(ev: Evaluator, w: LLMWorkload, st, split: tuple[int, int] | None):
    """The load curve of one replica (``split`` None) or a disaggregated unit, and a user
    count past its saturation (the top of the capacity scan)."""
    think = w.serving().think_time_s
    curve = load_curve(ev, st, think, w.ttft_percentile, split, w.serving().arrivals)
    return curve, users_past_saturation(st, think, split)


def llm_capacity(
    ev: Evaluator, w: LLMWorkload, steps=None, split: tuple[int, int] | None = None
) -> Capacity:
    """Largest number of sessions whose TTFT (at the percentile) and per-user speed meet the
    targets and whose KV demand fits: a coarse geometric scan up to past saturation, then
    scans of the bracket between the last count that passes and the first that fails until
    they are one user apart. ``split``: a disaggregated unit (prefill, decode replicas)."""
    st = steps or steps_for(ev, w)
    if st.slots < 1:
        return Capacity(0, "memory", float("inf"), 0.0, 0)
    curve, n_hi = _curve(ev, w, st, split)
    grid = np.unique(np.round(np.geomspace(1, n_hi, 10)))
    lp = curve(grid)
    best_ttft, best_tps = float(lp.ttft_pct_s[0]), float(lp.per_user_tokens_per_s[0])
    ok = np.cumprod(_ok(lp, w, ev.gpu)).astype(bool)  # never past a count that fails
    if not ok[0]:
        return Capacity(0, _binding(lp, 0, w, ev.gpu), best_ttft, best_tps, st.slots)
    i = int(ok.sum()) - 1
    last = int(grid[i])
    if i + 1 == len(grid):
        return Capacity(last, "saturation", best_ttft, best_tps, st.slots)
    # narrow [last pass, first fail] to one user: seats are what the fleet is sized by. The
    # load curve is unique and monotone in users, so the passing counts are a prefix.
    nxt, binding = int(grid[i + 1]), _binding(lp, i + 1, w, ev.gpu)
    while nxt - last > 1:
        inner = np.unique(np.round(np.linspace(last, nxt, min(nxt - last + 1, 16))))[1:-1]
        lpf = curve(inner)
        okf = np.cumprod(_ok(lpf, w, ev.gpu)).astype(bool)
        j = int(okf.sum())
        last = int(inner[j - 1]) if j else last
        if j < len(inner):
            nxt, binding = int(inner[j]), _binding(lpf, j, w, ev.gpu)
    return Capacity(last, binding, best_ttft, best_tps, st.slots)


def _binding(lp, k: int, w: LLMWorkload, gpu) -> str:
    """Which limit the user count at index ``k`` breaks first."""
    if not lp.fits[k]:
        return "memory"
    _, tps = targets(w, gpu)
    if tps and lp.per_user_tokens_per_s[k] < tps:
        return "tokens_per_s"
    return "ttft"


def operating_point(
    ev: Evaluator, w: LLMWorkload, sessions: int, split: tuple[int, int] | None = None
) -> OperatingPoint:
    st = steps_for(ev, w)
    curve, _ = _curve(ev, w, st, split)
    lp = curve([max(sessions, 1)])
    b = float(lp.batch[0])
    bottleneck = str(ev.decode_step(max(b, 1.0), w.input_tokens + w.output_tokens / 2).bottleneck())
    return OperatingPoint(
        int(sessions),
        float(lp.ttft_pct_s[0]),
        float(lp.ttft_s[0]),
        float(lp.per_user_tokens_per_s[0]),
        float(lp.output_tokens_per_s[0]),
        bottleneck,
        float(lp.memory_gb[0]),
    )
