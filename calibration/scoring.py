"""Scoring a serving row with the estimator's own load curve (``estimator.curves.load_curve``,
the one ``solve``, ``curve`` and ``estimate`` use): a closed loop at the row's clients per
replica, with the harness's arrival pattern (``Case.arrivals``: synchronised waves where its
lengths are fixed, spread where it draws them; no think time); an open loop at its request
rate (spread arrivals, ``estimator.harness.rate_point``). The fit evaluates the harness
formulas (``estimator.harness``) on its decomposed steps."""

from __future__ import annotations

import numpy as np

from estimator import EstimatorError
from estimator.curves import load_curve
from estimator.efficiency import Efficiency
from estimator.harness import rate_point
from estimator.steps import ServingOptions, prepare_steps

from .cases import Case
from .params import request_key


def efficiency_of(
    params, family: str, engine: str = "", precision: str | None = None, server: str = ""
) -> Efficiency:
    """The row's factors; ``server``: the front end whose request time it carries (the
    engine's own when empty)."""
    m, _ = params.eff(family)
    c = params.compute(family, precision)
    step, seq = params.host(engine)
    return Efficiency(
        memory=m,
        compute=c,
        comm_latency_scale=1.0,
        collective_base_us=params.collective_base_us,
        layer_overhead_us=params.layer_overhead_us,
        step_overhead_ms=step,
        seq_overhead_us=seq,
        request_overhead_ms=params.request(server or engine),
        int4_stream=params.int4_stream,
    )


def serving_metric(case: Case, params) -> float:
    """The row's metric from the sizing model's load point (nan if it cannot be evaluated):
    at the row's clients per replica, or (an open loop) at its request rate per replica."""
    eff = efficiency_of(params, case.family, case.ev.engine.name, case.precision, request_key(case))
    ev = case.ev.with_efficiency(eff)
    try:
        if case.kind == "open":
            st = prepare_steps(ev, case.isl, case.osl)
            lp = rate_point(st, case.rate, requests=case.requests)
        else:
            opts = ServingOptions(arrivals=case.arrivals)
            st = prepare_steps(ev, case.isl, case.osl, opts)
            users = np.array([max(case.clients, 1.0)])
            lp = load_curve(ev, st, 0.0, 90.0, None, opts.arrivals)(users)
    except (EstimatorError, ValueError, ZeroDivisionError):
        return float("nan")
    tok = case.replicas * float(lp.output_tokens_per_s[0])
    tpot = float(lp.tpot_s[0])
    return {
        "output_tok_s_total": tok,
        "output_tok_s_per_gpu": tok / case.n_gpus,
        "throughput_tok_s_total": tok * (case.isl + case.osl) / case.osl,
        "ttft_ms": float(lp.ttft_s[0]) * 1e3,
        "itl_ms": tpot * 1e3,
        "tpot_ms": tpot * 1e3,
        "tok_s_per_user": 1.0 / tpot,
    }[case.metric]


def score(cases: list[Case], params, surrogate: np.ndarray) -> np.ndarray:
    """The surrogate's predictions with every serving row (closed or open loop) replaced by the
    sizing model's."""
    out = np.array(surrogate, float)
    for i, c in enumerate(cases):
        if c.kind in ("closed", "open"):
            out[i] = serving_metric(c, params)
    return out
