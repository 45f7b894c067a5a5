"""Error bands from the cross-validated residuals: for each kind of number (throughput, TTFT,
time per output token), each model class (dense, mixture-of-experts) and each GPU family
with enough rows of that class, the quantiles of measured / predicted when every source is
predicted by factors fitted on the others. The estimator multiplies its point estimate by
them (``estimator/bands.py``), from the narrowest regime with enough rows."""

from __future__ import annotations

import numpy as np

from estimator.bands import model_class, regime

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
    """{kind: {"all": {n, p5, ..., p95}, class: {...}, "class/family": {...}}} of measured /
    predicted (class: :func:`estimator.bands.model_class`), each group with enough rows."""
    measured = np.array([c.measured for c in cases])
    ratio = measured / cv_pred
    ok = np.isfinite(ratio) & (ratio > 0)
    cls = np.array([model_class(c.ev.model) for c in cases])
    fam = np.array([regime(k, c.family) for k, c in zip(cls, cases, strict=True)])
    out: dict = {}
    for kind in ("throughput", "ttft", "tpot"):
        sel = ok & np.array([band_kind(c.metric) == kind for c in cases])
        if sel.sum() < MIN_ROWS:
            continue
        groups = {"all": _q(ratio[sel])}
        for labels in (cls, fam):
            for key in sorted(set(labels)):
                m = sel & (labels == key)
                if m.sum() >= MIN_ROWS:
                    groups[str(key)] = _q(ratio[m])
        out[kind] = groups
    return out
