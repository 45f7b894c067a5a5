"""TTFT and speed as users grow: the load curve of one configuration (one replica, or a
disaggregated unit: :func:`load_curve` is the one place that choice is made), and
``planner curve``: the curve, its knee, where memory runs out, an operating point. Users
share the replicas evenly."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .bands import apply_bands, band_basis, regime_factors
from .catalog import get_gpu
from .caveats import shape_caveats
from .disagg import disaggregated_point, kv_transfer_seconds
from .engines import Engine
from .errors import EstimatorError
from .harness import waves_point
from .labels import Labelled
from .llm import Evaluator
from .load import (
    LoadPoint,
    knee,
    load_point,
    max_users_fit,
    parse_disaggregation,
    saturation_rate,
)
from .parallel import parallel_for
from .resolve import get_model, weights_for
from .steps import ServingOptions, Steps, prepare_steps

DENSE_UP_TO = 64  # every user count up to here; beyond, 48 geometric points
MAX_USERS = 10_000_000  # users on one curve
MAX_POINTS = 10_000  # user counts on one curve


def load_curve(
    ev: Evaluator,
    steps: Steps,
    think_time_s: float,
    percentile: float,
    split: tuple[int, int] | None = None,
    arrivals: str = "spread",
) -> Callable[..., LoadPoint]:
    """users -> LoadPoint for one replica (``split`` None) or for a disaggregated unit of
    ``split = (prefill replicas, decode replicas)``, with requests arriving spread in time or
    in a benchmark harness's synchronised waves: the one place those choices are made."""
    if arrivals == "waves":
        if split is not None:
            raise EstimatorError("arrivals 'waves' models one replica, not a disaggregated unit")
        return lambda users, **kw: waves_point(steps, users, percentile)
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
            p * st.stages / st.s_alone,  # PP stages pipeline prompts
            d
            * max(st.slots, 1)
            * st.tokens_per_iter
            / (float(st.t_iter(st.slots)) * (st.output_tokens - 1)),
        )
    return max(4, math.ceil(1.5 * rate * (think_time_s + st.s_alone + decode_s)))


@dataclass
class CurveResult(Labelled):
    model: str
    gpu: str
    parallel: dict
    weights: str
    kv: str
    engine: str
    input_tokens: int
    output_tokens: int
    options: dict
    kv_slots_per_replica: int
    points: list[dict]
    knee_users: int
    max_users_fit: int
    operating_point: dict
    targets: dict
    disaggregated: dict | None
    # every point's band (its 'bands'): its values times these quantiles of
    # measured/predicted (by kind)
    band_factors: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)  # display names for tables
    notes: list = field(default_factory=list)  # the replica's, as `estimate` says them


def _user_counts(users: list[int] | None, users_max: int | None, default_max: int) -> list[int]:
    if users is not None:
        out = sorted({int(x) for x in users})
        if not out or out[0] < 1:
            raise EstimatorError("--users must be positive integers")
        if out[-1] > MAX_USERS or len(out) > MAX_POINTS:
            raise EstimatorError(
                f"--users: at most {MAX_POINTS:,} counts, each at most {MAX_USERS:,}"
            )
        return out
    if users_max is not None:  # asked for every count: every count, never a sample
        if users_max > MAX_POINTS:
            raise EstimatorError(
                f"--users-max evaluates every user count, at most {MAX_POINTS:,}; for more "
                "users give the counts to evaluate with --users"
            )
        return list(range(1, users_max + 1))
    hi = default_max
    if hi > MAX_USERS:
        raise EstimatorError(f"--users-max may be at most {MAX_USERS:,}")
    if hi <= DENSE_UP_TO:
        return list(range(1, hi + 1))
    return sorted({int(x) for x in np.round(np.geomspace(1, hi, 48))})


def curve(
    model: str,
    gpu: str,
    gpus: int = 1,
    *,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    attention_dp: bool = False,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | Engine | None = None,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    users: list[int] | None = None,
    users_max: int | None = None,
    at: int | None = None,
    ttft_s: float | None = None,
    tokens_per_s: float | None = None,
    percentile: float = 90.0,
    serving: ServingOptions | None = None,
    disaggregate: str | tuple[int, int] | None = None,
    presets: tuple[str, ...] = (),
) -> CurveResult:
    """The curve over ``users`` (default: every count up to past the memory limit), the knee
    (most users within the targets, or before latency turns sharply upward), the most users
    that fit in memory and the operating point ``at`` (default: the knee)."""
    lm = get_model(model, presets)
    weights = weights_for(model, weights, presets)
    acc = get_gpu(gpu, presets)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    opts = serving or ServingOptions()
    ev = Evaluator(lm, acc, par, weights, kv, engine if engine is not None else "vllm")
    st = prepare_steps(ev, input_tokens, output_tokens, opts)
    reps = par.replicas
    if st.slots < 1:
        raise EstimatorError(
            f"{lm.name} does not fit on {par.gpus_per_replica} x {acc.name} with one "
            f"{input_tokens + output_tokens}-token sequence (try `planner estimate` for the "
            "memory box)"
        )
    u = np.array(_user_counts(users, users_max, max(8, 2 * st.slots * reps)), float)
    split = parse_disaggregation(disaggregate) if isinstance(disaggregate, str) else disaggregate

    def at_pct(x, pct):
        return load_curve(ev, st, opts.think_time_s, pct, split, opts.arrivals)(x)

    lp = at_pct(u / reps, percentile)
    lp.users = u  # report whole-deployment users
    k = knee(lp, ttft_s, tokens_per_s)
    op_users = at or k or int(u[0])
    op = at_pct([op_users / reps], percentile)
    pct_key = f"ttft_p{percentile:g}_s"
    factors = regime_factors(acc, lm, opts.arrivals)

    def bands_at(ttft_pct: float, per_user: float, replica_tps: float) -> dict:
        # the band of the TTFT at the percentile drawn, as the operating point's
        tpot = 1.0 / per_user if per_user > 0 else 0.0
        return apply_bands(factors, ttft_pct, tpot, replica_tps)

    points = [
        {
            "users": int(u[i]),
            "ttft_s": float(lp.ttft_s[i]),
            "ttft_p90_s": float(lp.ttft_pct_s[i]) if percentile == 90 else None,
            pct_key: float(lp.ttft_pct_s[i]),
            "per_user_tokens_per_s": float(lp.per_user_tokens_per_s[i]),
            "output_tokens_per_s": float(lp.output_tokens_per_s[i] * reps),
            "memory_gb": float(lp.memory_gb[i]),
            "fits": bool(lp.fits[i]),
            "bands": bands_at(
                float(lp.ttft_pct_s[i]),
                float(lp.per_user_tokens_per_s[i]),
                float(lp.output_tokens_per_s[i] * reps),
            ),
        }
        for i in range(len(u))
    ]
    if percentile != 90:
        for pt, v in zip(points, at_pct(u / reps, 90.0).ttft_pct_s, strict=True):
            pt["ttft_p90_s"] = float(v)
    op_bands = bands_at(
        float(op.ttft_pct_s[0]),
        float(op.per_user_tokens_per_s[0]),
        float(op.output_tokens_per_s[0] * reps),
    )
    if op_bands:
        op_bands["basis"] = band_basis(factors)
    return CurveResult(
        model=lm.name,
        gpu=acc.name,
        parallel=par.model_dump(),
        weights=weights,
        kv=kv,
        engine=ev.engine.name,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        options=opts.model_dump(),
        kv_slots_per_replica=st.slots,
        points=points,
        knee_users=k,
        max_users_fit=max_users_fit(lp),
        operating_point={
            "users": op_users,
            "ttft_s": float(op.ttft_s[0]),
            "ttft_pct_s": float(op.ttft_pct_s[0]),
            "per_user_tokens_per_s": float(op.per_user_tokens_per_s[0]),
            "output_tokens_per_s": float(op.output_tokens_per_s[0] * reps),
            "memory_gb": float(op.memory_gb[0]),
            "fits": bool(op.fits[0]),
            "bands": op_bands,
        },
        band_factors=factors,
        targets={"ttft_s": ttft_s, "tokens_per_s": tokens_per_s, "percentile": percentile},
        disaggregated={"prefill_replicas": split[0], "decode_replicas": split[1]}
        if split
        else None,
        labels={"model": lm.display_name or lm.name, "gpu": acc.display_name},
        notes=list(ev.notes)
        + shape_caveats(lm, acc, ev.engine, ev.wfmt.name, input_tokens, output_tokens),
    )
