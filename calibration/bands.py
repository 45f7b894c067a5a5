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

# A group has its own band with this many rows from this many sources; thinner groups read
# their class's, else every row's. A band of few sources rests on few harnesses and stacks:
# one source's own offsets set it, and another publisher's rows miss it. Chosen on the
# shipped rows by the interval score out of source (the mean log-width of p10-p90 once
# widened to hold 80% of a held-out source's rows, calibration/bands.py width_scales):
# from one source up to six the throughput band narrows 0.85 -> 0.67, TTFT's 2.53 -> 1.90,
# time per token's stays 0.74; more sources or rows widen one or another again
MIN_ROWS = 20
MIN_SOURCES = 6
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
    """{kind: {"all": {n, sources, p5, ..., p95, width_scale}, class: {...},
    "class/family": {...}}}: the quantiles of measured / predicted of each group
    (:func:`raw_bands`) widened about their median by their kind's
    :func:`width_scales`, so that p10-p90 holds 80% of the rows of a publisher the bands
    were not built from."""
    raw = raw_bands(cases, cv_pred)
    scales = width_scales(cases, cv_pred)
    return {
        kind: {g: _widen(q, scales.get(kind, 1.0)) for g, q in groups.items()}
        for kind, groups in raw.items()
    }


def _widen(q: dict, scale: float) -> dict:
    """A group's quantiles ``scale`` times as far from its median in log space."""
    p50 = q["p50"]
    out = {k: (round(p50 * (v / p50) ** scale, 3) if _is_quantile(k) else v) for k, v in q.items()}
    return {**out, "width_scale": round(scale, 2)}


def _is_quantile(key: str) -> bool:
    return key[0] == "p" and key[1:].isdigit()


def raw_bands(cases: list[Case], cv_pred: np.ndarray) -> dict:
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
                if m.sum() >= MIN_ROWS and len(set(src[m].tolist())) >= MIN_SOURCES:
                    groups[str(key)] = _q(ratio[m], src[m])
        out[kind] = groups
    return out


def band_group(groups: dict, cls: str, fam_regime: str) -> str:
    """The group an estimate reads (estimator.bands.band_factors): its model class on its
    GPU family, else its class, else all."""
    return next(k for k in (fam_regime, cls, "all") if k in groups)


def band_kind_of(c: Case) -> str | None:
    """The band a row's number is checked against: its kind, 'ttft_waves' for a synchronised
    harness's TTFT; None for a TTFT no band covers (a closed loop that draws its lengths)."""
    for kind in ("throughput", "tpot", "ttft", "ttft_waves"):
        if in_band(kind, c):
            return kind
    return None


# the share of a new publisher's rows the stored p10-p90 is to hold
NOMINAL_INNER = 0.8


def held_out_rows(cases: list[Case], cv_pred: np.ndarray) -> dict:
    """{kind: (ratio, p5, p10, p50, p90, p95, source) arrays}: every row against the raw
    band (:func:`raw_bands`) the other sources' residuals give it (the group an estimate of
    the row would read): how the bands fare on a publisher they were not built from."""
    measured = np.array([c.measured for c in cases])
    ratio = measured / np.asarray(cv_pred, float)
    ok = np.isfinite(ratio) & (ratio > 0)
    src = np.array([c.source_key for c in cases])
    cls = [model_class(c.ev.model) for c in cases]
    fam = [regime(k, c.family) for k, c in zip(cls, cases, strict=True)]
    kinds = [band_kind_of(c) for c in cases]
    rows: dict = {}
    for s in sorted(set(src[ok].tolist())):
        idx = np.flatnonzero(ok & (src != s))
        bands = raw_bands([cases[i] for i in idx], np.asarray(cv_pred)[idx])
        for i in np.flatnonzero(ok & (src == s)):
            k = kinds[i]
            if k is None or k not in bands:
                continue
            q = bands[k][band_group(bands[k], cls[i], fam[i])]
            rows.setdefault(k, []).append(
                (ratio[i], q["p5"], q["p10"], q["p50"], q["p90"], q["p95"], s)
            )
    return {
        k: tuple(np.array([r[j] for r in v], object if j == 6 else float) for j in range(7))
        for k, v in rows.items()
    }


def _inside(x, p50, lo, hi, scale):
    return (x >= p50 * (lo / p50) ** scale) & (x <= p50 * (hi / p50) ** scale)


def scale_for_coverage(x, lo, p50, hi, nominal: float = NOMINAL_INNER) -> float:
    """The least factor (at least 1: a band is never narrowed) by which the bands [lo, hi]
    around their medians ``p50`` must widen in log space to hold ``nominal`` of the held-out
    ratios ``x``, on a grid of 0.01."""
    for scale in np.arange(1.0, 4.0001, 0.01):
        if np.mean(_inside(x, p50, lo, hi, scale)) >= nominal:
            return float(round(scale, 2))
    return 4.0


def width_scales(cases: list[Case], cv_pred: np.ndarray) -> dict:
    """{kind: factor}: how far each kind's bands widen about their medians so that p10-p90
    holds :data:`NOMINAL_INNER` of the rows of a source they were not built from. Built
    from the other sources' residuals, a band misses the offsets each publisher's harness
    and stack share (the shipped data's raw p10-p90 held about 70% of a held-out source's
    rows), which is what an estimate for a new deployment meets."""
    return {k: c["width_scale"] for k, c in band_coverage(cases, cv_pred).items()}


def band_coverage(cases: list[Case], cv_pred: np.ndarray | None) -> dict:
    """By kind of number: the share of each source's rows inside the bands the other sources
    give, raw and widened by the kind's scale (the least that holds p10-p90 to
    :data:`NOMINAL_INNER`): p10-p90 (nominal 80%) and p5-p95 (nominal 90%), over the rows and
    as the mean of the sources' shares (each source one vote, as in the fit); {} without
    leave-one-source-out predictions."""
    out: dict = {}
    if cv_pred is None:
        return out
    for k, (x, p5, p10, p50, p90, p95, s) in held_out_rows(cases, cv_pred).items():
        scale = scale_for_coverage(x, p10, p50, p90)
        inner = {a: _inside(x, p50, p10, p90, a) for a in (1.0, scale)}
        outer = {a: _inside(x, p50, p5, p95, a) for a in (1.0, scale)}
        per_src = [float(np.mean(inner[scale][s == src])) for src in sorted(set(s.tolist()))]
        out[k] = {
            "n": int(len(x)),
            "sources": len(per_src),
            "width_scale": scale,
            "raw_p10_p90": round(float(np.mean(inner[1.0])), 3),
            "raw_p5_p95": round(float(np.mean(outer[1.0])), 3),
            "p10_p90": round(float(np.mean(inner[scale])), 3),
            "p5_p95": round(float(np.mean(outer[scale])), 3),
            "p10_p90_per_source": round(float(np.mean(per_src)), 3),
        }
    return out


# a non-LLM family's own band needs this many rows (its p10 and p90 then rest on one row at
# least); thinner families use the band of every family's rows together
FAMILY_MIN_ROWS = 10


def family_error_bands(rows) -> dict:
    """{"all": {n, p5, ..., p95, width_scale}, family: {...}}: :func:`raw_family_bands`
    widened about their medians so that p10-p90 holds 80% of the rows of a source they were
    not built from (:func:`family_band_coverage`), as the language models' bands are."""
    scale = family_band_coverage(rows).get("width_scale", 1.0)
    return {g: _widen(q, scale) for g, q in raw_family_bands(rows).items()}


def _family_ratios(rows) -> list[tuple[str, float, str]]:
    out = []
    for r in rows:
        x = time_ratio(r.metric, r.measured, r.cv_predicted)
        if x is not None:
            out.append((r.family, x, r.source))
    return out


def raw_family_bands(rows) -> dict:
    """{"all": {n, p5, ..., p95}, family: {...}} of measured / predicted time over the non-LLM
    families' rows (``calibration.family_cases.FamilyRow``), from their leave-one-source-out
    predictions; a family has its own group when it has :data:`FAMILY_MIN_ROWS` rows."""
    by_family: dict[str, list[tuple[float, str]]] = {}
    for fam, x, src in _family_ratios(rows):
        by_family.setdefault(fam, []).append((x, src))
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


def family_band_coverage(rows) -> dict:
    """Each source's family rows against the raw bands the other sources' rows give them
    (their family's, else all): the share inside p10-p90 raw and once widened by the scale
    that holds 80% ({} where no source has bands from the others)."""
    ratios = _family_ratios(rows)
    held = []
    for s in sorted({src for _, _, src in ratios}):
        bands = raw_family_bands([r for r in rows if r.source != s])
        for fam, x, src in ratios:
            if src == s and bands:
                q = bands.get(fam) or bands["all"]
                held.append((x, q["p10"], q["p50"], q["p90"], src))
    if not held:
        return {}
    x, lo, mid, hi = (np.array([h[j] for h in held]) for j in range(4))
    scale = scale_for_coverage(x, lo, mid, hi)
    return {
        "n": len(held),
        "sources": len({h[4] for h in held}),
        "width_scale": scale,
        "raw_p10_p90": round(float(np.mean(_inside(x, mid, lo, hi, 1.0))), 3),
        "p10_p90": round(float(np.mean(_inside(x, mid, lo, hi, scale))), 3),
    }


_BAND_TITLES = {
    "throughput": "throughput",
    "tpot": "time per output token",
    "ttft": "TTFT (people: one client, or a request rate)",
    "ttft_waves": "TTFT under a synchronised harness (curves with --arrivals waves)",
}


def bands_markdown(bands: dict, coverage: dict | None = None) -> list[str]:
    """The report's section on the language-model bands (calibration.yaml ``error_bands``):
    each kind of number's groups with their rows and p10 / p50 / p90 of measured/predicted,
    and (``coverage``: :func:`band_coverage`) how they hold on sources left out."""
    from tabulate import tabulate

    rows = [
        [_BAND_TITLES.get(kind, kind), group, q["n"], q.get("sources", ""), q["p10"], q["p50"]]
        + [q["p90"]]
        for kind, groups in bands.items()
        for group, q in groups.items()
    ]
    if not rows:
        return []
    out = [
        "## Error bands every language-model estimate carries",
        "",
        "Quantiles of measured / predicted over the leave-one-source-out predictions "
        f"(`error_bands`, groups of {MIN_ROWS} rows or more from {MIN_SOURCES} sources or "
        "more): an estimate takes its model class on its GPU's family, else its class, else "
        "all. A TTFT people see is banded by the runs whose TTFT the replica sets; a closed "
        "loop of several clients measures its harness's queue, which has a band of its own. "
        "Each kind's quantiles are widened about their median in log space (its width scale) "
        "so that p10-p90 holds 80% of the rows of a publisher the band was not built from.",
        "",
        tabulate(
            rows,
            headers=["number", "group", "rows", "sources", "p10", "p50", "p90"],
            tablefmt="github",
        ),
        "",
    ]
    if coverage:
        out += [
            "### Do the bands hold for a publisher they were not built from?",
            "",
            "Each source's rows against the band the other sources' residuals give them "
            "(`calibration.bands.band_coverage`). Raw quantiles miss the offsets each "
            "publisher's harness and stack share; the width scale restores the nominal share.",
            "",
            tabulate(
                [
                    [
                        _BAND_TITLES.get(k, k),
                        v["n"],
                        v["sources"],
                        f"{v['raw_p10_p90']:.0%}",
                        f"{v['raw_p5_p95']:.0%}",
                        f"x{v['width_scale']:.2f}",
                        f"{v['p10_p90']:.0%}",
                        f"{v['p5_p95']:.0%}",
                        f"{v['p10_p90_per_source']:.0%}",
                    ]
                    for k, v in coverage.items()
                ],
                headers=[
                    "number",
                    "rows",
                    "sources",
                    "raw p10-p90 (80%)",
                    "raw p5-p95 (90%)",
                    "width scale",
                    "p10-p90",
                    "p5-p95",
                    "p10-p90, mean of sources",
                ],
                tablefmt="github",
            ),
            "",
        ]
    return out
