"""Fitting the efficiency factors: a prediction under any factors is closed-form arithmetic
over all cases, so fitting and cross-validating are fast, and it is the same physics as
``estimate``:

    step = max(memory_raw / memory_eff, compute_raw / compute_eff) + comm_raw
           + collectives × collective_base + layers × layer_overhead + step_overhead

The serving formulas on top (closed loop, saturated throughput) are those of
:mod:`estimator.harness`. :mod:`calibration.writer` writes the one file the
estimator reads its factors from."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from estimator.efficiency import efficiency_for
from estimator.engines import ENGINES

from .batch import Batch
from .cases import NO_FRONTEND, Case
from .params import DENSE_STACK, GLOBAL, Params, request_key


def error_pct(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    return 100.0 * (pred - meas) / meas


METRIC_CLASSES = ("throughput", "ttft", "per-token latency")


def metric_class(metric: str) -> str:
    """The kind of number: time to first token, time per output token (ITL, TPOT or its
    inverse, per-user speed), or throughput."""
    if metric == "ttft_ms":
        return "ttft"
    if metric in ("itl_ms", "tpot_ms", "tok_s_per_user"):
        return "per-token latency"
    return "throughput"


# ---- fitting ------------------------------------------------------------------------------
MIN_ROWS_PER_FAMILY = 15
MIN_ROWS_PER_ENGINE = 30
MIN_TTFT_ROWS_PER_ENGINE = 10
MIN_MODELS_PER_FAMILY = 2


def fit(cases: list[Case], pinned: dict[str, float] | None = None) -> tuple[Params, dict]:
    """Least squares on log(predicted/measured) over the fit-eligible cases, with bounds
    that keep every factor physical (efficiencies in (0, 1], overheads >= 0).

    ``pinned``: GPU family -> its memory share measured at kernel level (by default the
    weight-streaming GEMMs of :mod:`calibration.kernel_bandwidth`): not fitted on end-to-end
    rows, where it trades off against the per-layer overhead (one source's batch-1 decodes
    put Hopper's at 0.99 of the datasheet, beyond what any GEMM streams); families with such
    data and no rows of their own get it too."""
    from scipy.optimize import least_squares

    if pinned is None:
        from .kernel_bandwidth import pinned_shares

        pinned = pinned_shares()

    use = [c for c in cases if c.fit]
    # a GPU family's factors are fitted on two models at least: one model's rows measure its
    # own kernels as much as the GPU (MI355X's, DeepSeek-R1 alone under SGLang and ATOM, put
    # the family at 100% of its FP4 peak and 54% of its bandwidth and moved the shared
    # per-layer and collective costs: the other 922 rows, leave-one-source-out, 14.2 ->
    # 17.3%). Such rows are scored, not fitted: their family runs at the defaults
    models: dict[str, set] = {}
    for c in use:
        models.setdefault(c.family, set()).add(c.ev.model.name)
    use = [c for c in use if len(models[c.family]) >= MIN_MODELS_PER_FAMILY]
    # the serving stack's own time to a first token, per front end (an engine's own server,
    # NIM's; in-process harnesses have none): fitted where its TTFTs come from two sources
    # or more (one source's could be its harness, not the stack). A TTFT through a front end
    # without a fitted time carries a term the model has not got: it stays out of the fit
    # (it would put that time into factors every model uses), and is still scored. (Fitting
    # NIM's time on its one source instead, as an offset of its own rows, cross-validates
    # worse: all 22.2% vs 20.0%, throughput 20.0% vs 17.9%.)
    ttft_src: dict[str, Counter] = {}
    for c in use:
        if c.metric == "ttft_ms" and c.frontend != NO_FRONTEND:
            ttft_src.setdefault(c.server, Counter())[c.source_key] += 1
    req_engs = sorted(
        e
        for e, n in ttft_src.items()
        if sum(n.values()) >= MIN_TTFT_ROWS_PER_ENGINE and sum(k >= 2 for k in n.values()) >= 2
    )
    use = [
        c for c in use if c.metric != "ttft_ms" or c.frontend == NO_FRONTEND or c.server in req_engs
    ]
    # dense models through an engine's own server get a request time of their own where
    # their light-load TTFTs (at most DENSE_PIN_CLIENTS clients) come from two sources, three
    # rows at least (params.DENSE_STACK); the engine's own is then its MoE models'. (Pooled
    # with the dense rows instead, the engine's reads SGLang 105 ms and trtllm-serve 116 ms
    # against 114 and 143: leave-one-source-out TTFT 35.6% against 34.3%.)
    req_keys = req_engs + [e + DENSE_STACK for e in req_engs if _dense_light(use, e)]
    # each source one vote: its rows share its setup (harness, engine build and flags, the
    # publisher's tuning), one piece of evidence, not n. Weighted by rows, the two largest
    # (TensorRT-LLM's perf overview, NIM's sweep: 56% of the rows) set the factors every
    # other setup is predicted with. With the kernel-pinned memory shares, leave-one-source-
    # out: all 19.8 -> 16.2%, throughput 18.0 -> 14.6%, per-token 20.7 -> 11.0%, TTFT
    # 34.2 -> 39.4% (weights 1/sqrt(rows), or Kish's at the residuals' 0.1 intraclass
    # correlation, land in between)
    per_src = Counter(c.source_key for c in use)
    vote = np.array([1.0 / per_src[c.source_key] for c in use])
    votes = Counter()  # each family's share of the votes: what averages over families weigh
    for c, v in zip(use, vote, strict=True):
        votes[c.family] += v

    batch = Batch(use)
    counts: dict[str, int] = {}
    for c in use:
        counts[c.family] = counts.get(c.family, 0) + 1
    fams = sorted(f for f, n in counts.items() if n >= MIN_ROWS_PER_FAMILY)
    # The defaults (for families without enough data) are fitted only on rows of such
    # families, when those rows are enough to fit two factors (MIN_ROWS_PER_FAMILY together);
    # otherwise they are the vote-weighted mean of the fitted families (two A100 rows must
    # not set the efficiency of every GPU without its own data).
    own_default = sum(n for f, n in counts.items() if f not in fams) >= MIN_ROWS_PER_FAMILY
    nd = 2 if own_default else 0
    # where a family's rows are (nearly) all memory-bound, its compute share is not
    # measured: it takes the defaults' (a free factor there would absorb anything)
    own_c = {f for f in fams if sum(_informs_compute(c) for c in use if c.family == f) >= 10}
    slot, k = {}, nd
    for f in fams:
        m = None if f in pinned else k
        k += m is not None
        slot[f] = (m, k if f in own_c else None)
        k += f in own_c
    n_fam = k
    # a family's compute factor holds at one precision (its rows' majority); another
    # precision gets its own where enough rows of dense models from two sources or more
    # depend on the compute share (one source alone sets a factor no leave-one-source-out
    # check can test; an MoE model's compute also carries its grouped expert GEMMs' own
    # inefficiency, and a published TTFT the serving stack's handling of the request,
    # neither of which the estimator models: such rows would put them into a factor every
    # model on the GPU uses); elsewhere the estimator's rule
    # (estimator.efficiency.compute_share) carries the factors over
    by_prec = {f: Counter(c.precision for c in use if c.family == f) for f in fams}
    main = {f: by_prec[f].most_common(1)[0][0] for f in fams}
    fp4 = {f: main[f] == "fp4" for f in fams}
    dense = [
        c for c in use if not c.ev.model.is_moe and c.metric != "ttft_ms" and _informs_compute(c)
    ]
    dense_prec = {f: Counter(c.precision for c in dense if c.family == f) for f in fams}
    extra = [
        (f, q)
        for f in fams
        for q, n in sorted(dense_prec[f].items())
        if f in own_c and q != main[f] and n >= MIN_ROWS_PER_FAMILY and _sources(dense, f, q) >= 2
    ]
    # the host's per-step and per-sequence work is the engine's (a C++ executor or a Python
    # scheduler): fitted per engine where it has enough rows, else shared
    eng_rows = Counter(c.ev.engine.name for c in use)
    engs = sorted(e for e, n in eng_rows.items() if n >= MIN_ROWS_PER_ENGINE)
    shared = sum(n for e, n in eng_rows.items() if e not in engs) >= MIN_ROWS_PER_ENGINE
    shared = shared or not engs  # no engine has enough rows of its own: one shared pair
    glob = GLOBAL if shared else GLOBAL[:2]
    # int4 weight-only kernels' streaming share, read off dense models' int4 rows where
    # there are MIN_INT4_ROWS (else 1: no evidence they stream slower). An MoE model's rows
    # also carry its expert kernels' own costs, which the estimator does not model
    # (DeepSeek-R1 AWQ at batch 1 is 50% slower than predicted whatever the share). One
    # source can set it: the shipped rows' two (TensorRT-LLM's W4A16 AWQ on an H200, vLLM's
    # AWQ on an A100) each predict the other better with the share fitted on it alone
    # (leave-one-source-out: their int4 rows 45.7 -> 33.0% and 31.7 -> 19.4%)
    int4_dense = [j for j, c in enumerate(use) if float(c.dec.int4) > 0 and not c.ev.model.is_moe]
    int4_srcs = Counter(use[j].source_key for j in int4_dense)
    own_int4 = len(int4_dense) >= MIN_INT4_ROWS and max(int4_srcs.values(), default=0) >= 2

    def unpack(x: np.ndarray) -> Params:
        d = {
            f: (pinned[f] if m is None else x[m], x[c] if c is not None else None)
            for f, (m, c) in slot.items()
        }
        if own_default:
            d["default"] = (x[0], x[1])
        else:
            w = np.array([votes[f] for f in fams], float)
            shipped = efficiency_for("__none__")  # too few rows to fit any family: these hold
            mem = float(np.average([d[f][0] for f in fams], weights=w)) if fams else shipped.memory
            # compute: from the families fitted on 8- and 16-bit GEMMs where there are any;
            # FP4 GEMMs reach a smaller share of their (doubled) peak, which says nothing of
            # the BF16/FP8 math a GPU without its own data runs
            pool = [f for f in fams if f in own_c and not fp4[f]] or [f for f in fams if f in own_c]
            if pool:
                wc = np.array([votes[f] for f in pool], float)
                d["default"] = (mem, float(np.average([d[f][1] for f in pool], weights=wc)))
            else:  # no row measures compute: the shipped defaults' share holds
                d["default"] = (mem, shipped.compute)
        for f in fams:
            if f not in own_c:
                d[f] = (d[f][0], d["default"][1])
        for f in pinned.keys() - d.keys():  # measured at kernel level, no rows of its own
            d[f] = (pinned[f], d["default"][1])
        k = n_fam
        groups = {
            f: {"compute_precision": main[f], "rows": by_prec[f][main[f]], "compute_at": {}}
            for f in fams
            if f in own_c
        }
        for i, (f, q) in enumerate(extra):
            groups[f]["compute_at"][q] = {"compute": float(x[k + i]), "rows": by_prec[f][q]}
        k += len(extra)
        g = list(x[k : k + len(glob)])
        k += len(glob)
        hosts = {e: (float(x[k + 2 * i]), float(x[k + 2 * i + 1])) for i, e in enumerate(engs)}
        k += 2 * len(engs)
        int4_stream = float(x[k]) if own_int4 else 1.0
        k += own_int4
        requests = {e: float(x[k + i]) for i, e in enumerate(req_keys)}
        if not shared:
            # the defaults serve what no serving engine runs (the other families' pipelines
            # have no continuous-batching scheduler; speech engines fit their own host time):
            # the leanest engine's host work, not a mean with Python schedulers in it
            g += [min(hosts[e][j] for e in engs) for j in (0, 1)]
        return Params(d, *g, hosts, groups, requests, int4_stream)

    x0, lo, hi = ([0.8, 0.6], [0.2, 0.1], [1.0, 1.0]) if own_default else ([], [], [])
    for f in fams:  # memory unless measured at kernel level, then compute where measured
        own = f in own_c
        mem = [] if f in pinned else [0.8]
        x0 += mem + ([0.6] if own else [])
        lo += [0.2] * len(mem) + ([0.1] if own else [])
        hi += [1.0] * len(mem) + ([1.0] if own else [])
    x0 += [0.6] * len(extra)
    lo += [0.1] * len(extra)
    hi += [1.0] * len(extra)
    x0 += [6.6, 4.0, 1.0, 2.0][: len(glob)]
    lo += [0.0, 0.0, 0.0, 0.0][: len(glob)]
    hi += [50.0, 200.0, 20.0, 50.0][: len(glob)]
    x0 += [1.0, 2.0] * len(engs)
    lo += [0.0, 0.0] * len(engs)
    hi += [20.0, 50.0] * len(engs)
    x0 += [0.8] * own_int4
    lo += [0.2] * own_int4
    hi += [1.0] * own_int4
    x0 += [20.0] * len(req_keys)
    lo += [0.0] * len(req_keys)
    hi += [500.0] * len(req_keys)

    def resid(x):
        r = np.log(batch.predict(unpack(x)) / batch.measured)
        return np.nan_to_num(r, nan=3.0, posinf=3.0, neginf=-3.0)

    loss = _soft_l1(vote)
    res = least_squares(resid, x0, bounds=(lo, hi), loss=loss, f_scale=0.2, x_scale="jac")
    x = res.x
    if own_int4:  # then the rest refit around it
        k4 = n_fam + len(extra) + len(glob) + 2 * len(engs)
        x, lo, hi = _pin_share(x, lo, hi, k4, int4_dense, batch, unpack, vote)
    # A front end's own time is what an idle server adds: the median of its one-client TTFTs
    # less their GPU time. Fitted jointly, loaded TTFTs set it too, and it absorbed the
    # queueing and harness dynamics the load model gets only partly right (SGLang's rose to
    # 129 ms, above the 99 ms one-client TTFTs its cookbook measures). Pinned there, the
    # rest is refit. Leave-one-source-out: TTFT 39.4 -> 33.8%, all 16.2 -> 16.0%
    x1, lo1, hi1 = _pin_request_times(x, lo, hi, use, batch, unpack, req_keys)
    if x1 is None and own_int4:
        x1, lo1, hi1 = x, lo, hi
    if x1 is not None:
        res = least_squares(resid, x1, bounds=(lo1, hi1), loss=loss, f_scale=0.2, x_scale="jac")
        # the refit moves the GPU's share of those TTFTs a little (2 ms on trtllm-serve's six
        # one-client rows): read the request times off them once more, the rest held
        x2, _, _ = _pin_request_times(res.x, lo, hi, use, batch, unpack, req_keys)
        res.x = x2 if x2 is not None else res.x
    p = unpack(res.x)
    names = [f"default.{k}" for k in ("memory", "compute")] if own_default else []
    for f in fams:
        names += ([] if f in pinned else [f"{f}.memory"]) + ([f"{f}.compute"] if f in own_c else [])
    names += [f"{f}.compute_at.{q}" for f, q in extra]
    names += list(glob) + [f"engines.{e}.{k}" for e in engs for k in GLOBAL[2:]]
    names += ["int4_stream"] * own_int4
    names += [f"{_frontend_home(e)}.{e}.request_overhead_ms" for e in req_keys]
    at_bound = [  # a pinned parameter (its bounds a point) is not at a bound
        n
        for n, x, a, b in zip(names, res.x, lo, hi, strict=True)
        if b - a > 1e-5 and (x <= a + 1e-6 or x >= b - 1e-6)
    ]
    info = {
        "at_bounds": at_bound,
        "rows": len(use),
        "families_fitted": fams,
        "rows_per_family": counts,
        "rows_per_engine": dict(eng_rows),
        "cost": float(res.cost),
        "success": bool(res.success),
    }
    return p, info


MIN_UNLOADED_TTFTS = 3
MIN_INT4_ROWS = 5


def _soft_l1(weights: np.ndarray):
    """The fit's loss: soft_l1 on each (unweighted) residual, times its row's weight (its
    source's vote), in scipy's ``least_squares`` form (value, first and second derivative)."""

    def loss(z):
        s = np.sqrt(1.0 + z)
        return np.vstack([weights * 2.0 * (s - 1.0), weights / s, -0.5 * weights / (s * (1.0 + z))])

    return loss


def _pin_share(x, lo, hi, k, rows, batch, unpack, vote):
    """``x`` with parameter ``k`` refit on ``rows`` alone (the others held), and bounds that
    hold it there: a factor only those rows measure, kept from the rows that carry other
    costs too."""
    from scipy.optimize import least_squares

    x, lo, hi = np.array(x, float), list(lo), list(hi)

    def resid(f):
        xx = x.copy()
        xx[k] = f[0]
        r = np.log(batch.predict(unpack(xx))[rows] / batch.measured[rows])
        return np.nan_to_num(r, nan=3.0, posinf=3.0, neginf=-3.0)

    loss = _soft_l1(vote[rows])
    f = float(least_squares(resid, [x[k]], bounds=([lo[k]], [hi[k]]), loss=loss, f_scale=0.2).x[0])
    x[k], lo[k], hi[k] = f, f, f + 1e-6
    return x, lo, hi


# the most clients a dense model's TTFT row may have to read its stack's time off: at light
# load the modelled wait is a small part of it (GPUStack's dense runs are at 4)
DENSE_PIN_CLIENTS = 4


def _dense_rows(use, engine: str) -> list[int]:
    """Dense models' light-load TTFT rows through ``engine``'s own server."""
    key = engine + DENSE_STACK
    return [
        j
        for j, c in enumerate(use)
        if c.metric == "ttft_ms"
        and c.kind == "closed"
        and request_key(c) == key
        and c.clients <= DENSE_PIN_CLIENTS
    ]


def _dense_light(use, engine: str) -> bool:
    rows = _dense_rows(use, engine)
    return len(rows) >= MIN_UNLOADED_TTFTS and len({use[j].source_key for j in rows}) >= 2


def _pin_request_times(x, lo, hi, use, batch, unpack, req_keys):
    """``x`` with each fitted front end's request time set from its one-client TTFT rows
    (at least ``MIN_UNLOADED_TTFTS``; a dense model's key from its light-load rows), and
    bounds that hold it there; None if none has."""
    x, lo, hi = np.array(x, float), list(lo), list(hi)
    base = len(x) - len(req_keys)  # the request times are the last parameters
    p = unpack(x)
    pred = batch.predict(p)
    pinned = False
    for i, e in enumerate(req_keys):
        if e.endswith(DENSE_STACK):
            rows = _dense_rows(use, e[: -len(DENSE_STACK)])
        else:  # the one-client rows that run with it (dense ones without a key of their own)
            rows = [
                j
                for j, c in enumerate(use)
                if c.metric == "ttft_ms" and p.resolve(request_key(c)) == e and c.clients <= 1
            ]
        if len(rows) < MIN_UNLOADED_TTFTS:
            continue
        gpu_ms = [pred[j] - p.request(request_key(use[j])) for j in rows]  # less its request time
        v = float(np.median([use[j].measured - g for j, g in zip(rows, gpu_ms, strict=True)]))
        v = min(max(v, lo[base + i]), hi[base + i] - 1e-6)
        x[base + i], lo[base + i], hi[base + i] = v, v, v + 1e-6
        pinned = True
    return (x, lo, hi) if pinned else (None, lo, hi)


def summarise(cases: list[Case], pred: np.ndarray) -> dict:
    """Median and p90 absolute % error and signed bias (median), by metric class, GPU family
    and source."""
    err = error_pct(pred, np.array([c.measured for c in cases]))

    def stats(mask):
        e = err[mask]
        e = e[np.isfinite(e)]
        if not len(e):
            return None
        return {
            "n": int(len(e)),
            "median_abs_pct": float(np.median(np.abs(e))),
            "p90_abs_pct": float(np.percentile(np.abs(e), 90)),
            "bias_pct": float(np.median(e)),
        }

    out: dict[str, Any] = {"all": stats(np.ones(len(cases), bool))}
    for key, fn in (
        ("metric", lambda c: metric_class(c.metric)),
        ("family", lambda c: c.family),
        # the compute factor is fitted per family on one precision's GEMMs: its bias per
        # precision says whether it carries to the others
        ("family_precision", lambda c: f"{c.family} {c.precision}"),
        ("source", lambda c: c.source_key),
    ):
        groups = sorted({fn(c) for c in cases})
        out[key] = {g: stats(np.array([fn(c) == g for c in cases])) for g in groups}
    return out


def cross_validate(cases: list[Case]) -> np.ndarray:
    """Leave-one-source-out: each source predicted by factors fitted on the others."""
    from .scoring import score

    pred = np.full(len(cases), np.nan)
    sources = sorted({c.source_key for c in cases})
    for s in sources:
        train = [c for c in cases if c.source_key != s]
        test_idx = [i for i, c in enumerate(cases) if c.source_key == s]
        if not any(c.fit for c in train):
            continue
        p, _ = fit(train)
        held = [cases[i] for i in test_idx]
        pred[test_idx] = score(held, p, Batch(held).predict(p))
    return pred


def _frontend_home(frontend: str) -> str:
    """Where a front end's fitted request time is written: an engine's own server under
    ``engines``, another front end under ``frontends``."""
    return "engines" if frontend in ENGINES else "frontends"


def finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _informs_compute(c: Case) -> bool:
    """Whether a row's number depends on the compute share: its decode step is within 2x
    of compute-bound at unit efficiency, or it is a time to first token, or an offline run
    whose prompts outweigh its answers."""
    heavy = float(c.dec.all_compute) >= 0.5 * float(c.dec.all_memory)
    return heavy or c.metric == "ttft_ms" or (c.kind == "offline" and c.isl >= c.osl)


def _sources(cases: list[Case], family: str, precision: str, least: int = 5) -> int:
    """Sources with ``least`` rows or more of one family at one precision."""
    n = Counter(c.source_key for c in cases if c.family == family and c.precision == precision)
    return sum(1 for k in n.values() if k >= least)
