"""Error bands from the cross-validated residuals: for each kind of number (throughput, TTFT,
time per output token) and each GPU family with enough rows, the quantiles of
measured / predicted when every source is predicted by factors fitted on the others. The
estimator multiplies its point estimate by them (``estimator/bands.py``)."""

from __future__ import annotations

import numpy as np

from .cases import Case

MIN_ROWS = 20  # rows a group needs for its own band; thinner groups use the metric's band
QUANTILES = (5, 10, 25, 50, 75, 90, 95)


def band_kind(metric: str) -> str:
    if metric == "ttft_ms":
        return "ttft"
    if metric in ("itl_ms", "tpot_ms"):
        return "tpot"
    return "throughput"


def _q(ratios: np.ndarray) -> dict:
    p = np.percentile(ratios, QUANTILES)
    return {
        "n": int(len(ratios)),
        **{f"p{q}": round(float(v), 3) for q, v in zip(QUANTILES, p, strict=True)},
    }


def error_bands(cases: list[Case], cv_pred: np.ndarray) -> dict:
    """{kind: {"all": {n, p10, p50, p90}, family: {...}}} of measured / predicted."""
    measured = np.array([c.measured for c in cases])
    ratio = measured / cv_pred
    ok = np.isfinite(ratio) & (ratio > 0)
    out: dict = {}
    for kind in ("throughput", "ttft", "tpot"):
        sel = ok & np.array([band_kind(c.metric) == kind for c in cases])
        if sel.sum() < MIN_ROWS:
            continue
        groups = {"all": _q(ratio[sel])}
        for fam in sorted({c.family for c in cases}):
            m = sel & np.array([c.family == fam for c in cases])
            if m.sum() >= MIN_ROWS:
                groups[fam] = _q(ratio[m])
        out[kind] = groups
    return out
