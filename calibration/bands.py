"""Error bands from the cross-validated residuals: for each kind of number (throughput, TTFT,
time per output token), each model class (dense, mixture-of-experts) and each GPU family
with enough rows of that class, the quantiles of measured / predicted when every source is
predicted by factors fitted on the others. The estimator multiplies its point estimate by
them (``estimator/bands.py``), from the narrowest regime with enough rows."""

from __future__ import annotations

import numpy as np

from estimator.bands import model_class, regime

from .cases import Case
from .family_cases import time_ratio

MIN_ROWS = 20  # rows a group needs for its own band; thinner groups use the metric's band
QUANTILES = (5, 10, 25, 50, 75, 90, 95)


def band_kind(metric: str) -> str:
    if metric == "ttft_ms":
        return "ttft"
    if metric in ("itl_ms", "tpot_ms"):
        return "tpot"
    return "throughput"


def _q(ratios: np.ndarray, sources: np.ndarray) -> dict:
    """Quantiles of ``ratios`` over the rows, and how many sources they come from (a band
    of few sources rests on few harnesses and stacks, whatever its rows)."""
    p = np.percentile(np.asarray(ratios, float), QUANTILES)
    return {
        "n": int(len(ratios)),
        "sources": int(len(set(np.asarray(sources).tolist()))),
        **{f"p{q}": round(float(v), 3) for q, v in zip(QUANTILES, p, strict=True)},
    }


def replica_set(c: Case) -> bool:
    """Whether the row's TTFT is the replica's, not a benchmark harness's: one client at a
    time, or requests sent at a rate (spread arrivals). Where several closed-loop clients
    run, their TTFT is mostly how the harness's prompts queue behind each other's prefills
    (:mod:`calibration.ttft_cycle`), which says nothing of people's spread arrivals, the
    only TTFT the planner sizes on."""
    return c.kind == "open" or (c.kind == "closed" and c.clients <= 1)


def in_band(kind: str, c: Case) -> bool:
    """Whether row ``c`` counts in band ``kind``: 'ttft' (the replica's, people's), and
    'ttft_waves' (a synchronised harness's: closed loops of several clients in waves, read
    when an estimate is asked for that arrival pattern; a loop that draws its lengths is
    neither); the other kinds take every row of theirs."""
    if kind == "ttft_waves":
        return c.metric == "ttft_ms" and not replica_set(c) and c.arrivals == "waves"
    return band_kind(c.metric) == kind and (kind != "ttft" or replica_set(c))


def error_bands(cases: list[Case], cv_pred: np.ndarray) -> dict:
    """{kind: {"all": {n, p5, ..., p95}, class: {...}, "class/family": {...}}} of measured /
    predicted (class: :func:`estimator.bands.model_class`), each group with enough rows.
    TTFT's come from the rows whose TTFT the replica sets (:func:`replica_set`), and
    'ttft_waves' from the closed loops of several clients in waves: a synchronised harness's
    (``arrivals="waves"``; a loop that draws its lengths is in neither)."""
    measured = np.array([c.measured for c in cases])
    src = np.array([c.source_key for c in cases])
    ratio = measured / cv_pred
    ok = np.isfinite(ratio) & (ratio > 0)
    cls = np.array([model_class(c.ev.model) for c in cases])
    fam = np.array([regime(k, c.family) for k, c in zip(cls, cases, strict=True)])
    out: dict = {}
    for kind in ("throughput", "ttft", "tpot", "ttft_waves"):
        sel = ok & np.array([in_band(kind, c) for c in cases])
        if sel.sum() < MIN_ROWS:
            continue
        groups = {"all": _q(ratio[sel], src[sel])}
        for labels in (cls, fam):
            for key in sorted(set(labels)):
                m = sel & (labels == key)
                if m.sum() >= MIN_ROWS:
                    groups[str(key)] = _q(ratio[m], src[m])
        out[kind] = groups
    return out


# a non-LLM family's own band needs this many rows (its p10 and p90 then rest on one row at
# least); thinner families use the band of every family's rows together
FAMILY_MIN_ROWS = 10


def family_error_bands(rows) -> dict:
    """{"all": {n, p5, ..., p95}, family: {...}} of measured / predicted time over the non-LLM
    families' rows (``calibration.family_cases.FamilyRow``), from their leave-one-source-out
    predictions; a family has its own group when it has :data:`FAMILY_MIN_ROWS` rows."""
    by_family: dict[str, list[tuple[float, str]]] = {}
    for r in rows:
        x = time_ratio(r.metric, r.measured, r.cv_predicted)
        if x is not None:
            by_family.setdefault(r.family, []).append((x, r.source))
    every = [x for xs in by_family.values() for x in xs]
    if len(every) < FAMILY_MIN_ROWS:
        return {}

    def q(pairs):
        return _q(np.array([x for x, _ in pairs]), np.array([s for _, s in pairs]))

    out = {"all": q(every)}
    for fam in sorted(by_family):
        if len(by_family[fam]) >= FAMILY_MIN_ROWS:
            out[fam] = q(by_family[fam])
    return out


_BAND_TITLES = {
    "throughput": "throughput",
    "tpot": "time per output token",
    "ttft": "TTFT (people: one client, or a request rate)",
    "ttft_waves": "TTFT under a synchronised harness (curves with --arrivals waves)",
}


def bands_markdown(bands: dict) -> list[str]:
    """The report's section on the language-model bands (calibration.yaml ``error_bands``):
    each kind of number's groups with their rows and p10 / p50 / p90 of measured/predicted."""
    from tabulate import tabulate

    rows = [
        [_BAND_TITLES.get(kind, kind), group, q["n"], q["p10"], q["p50"], q["p90"]]
        for kind, groups in bands.items()
        for group, q in groups.items()
    ]
    if not rows:
        return []
    return [
        "## Error bands every language-model estimate carries",
        "",
        "Quantiles of measured / predicted over the leave-one-source-out predictions "
        f"(`error_bands`, groups of {MIN_ROWS} rows or more): an estimate takes its model "
        "class on its GPU's family, else its class, else all. A TTFT people see is banded "
        "by the runs whose TTFT the replica sets; a closed loop of several clients measures "
        "its harness's queue, which has a band of its own.",
        "",
        tabulate(
            rows,
            headers=["number", "group", "rows", "p10", "p50", "p90"],
            tablefmt="github",
        ),
        "",
    ]
