"""The error band every language-model estimate carries: its point estimate times the
quantiles of measured / predicted that `planner calibrate` found when each published source
was predicted by factors fitted on the others (``error_bands`` in calibration.yaml), for the
narrowest regime with enough rows: the model's class on the GPU's family, else the class on
any GPU, else every row. The class matters more than the GPU: mixture-of-experts estimates
miss by about twice a dense model's (their expert GEMMs, routing and all-to-alls carry
costs the roofline prices only in part), so one band for both would be too wide for dense
models and too narrow for MoE ones. TTFT's band is read off the runs whose TTFT the
replica sets (one client at a time, or requests at a rate), not a closed-loop harness's
queue: the TTFT it bounds is the one people's spread arrivals see. The stored quantiles are
widened about their median so that p10-p90 holds 80% of the rows of a publisher the band was
not built from (a deployment the data never saw is such a publisher)."""

from __future__ import annotations

import numpy as np

from .efficiency import calibration, efficiency_key
from .hardware import Accelerator


def model_class(model) -> str:
    """The band regime's model class: 'moe' (mixture of experts) or 'dense'."""
    return "moe" if model.is_moe else "dense"


def regime(cls: str, family: str) -> str:
    """A band group's key: the model class on one GPU family."""
    return f"{cls}/{family}"


def _sources(f: dict) -> str:
    """' from 14 sources': how many publishers a band's rows come from."""
    return f" from {f['sources']} sources" if f.get("sources") else ""


def band_factors(kind: str, gpu: Accelerator, model=None, arrivals: str = "spread") -> dict | None:
    """{'p5', ..., 'p95', 'n', 'group', 'kind'} for 'throughput', 'ttft' or 'tpot' of ``model`` (its
    class; None: every class) on ``gpu``, from the narrowest group with data; None without
    data. ``arrivals`` 'waves': TTFT under a synchronised benchmark harness, whose own queue
    the published fixed-length closed loops of several clients measure ('ttft_waves')."""
    bands = calibration().get("error_bands") or {}
    if kind == "ttft" and arrivals == "waves" and "ttft_waves" in bands:
        kind = "ttft_waves"
    groups = bands.get(kind)
    if not groups:
        return None
    keys = ["all"]
    if model is not None:
        cls = model_class(model)
        keys = [regime(cls, efficiency_key(gpu)), cls, "all"]
    group = next(k for k in keys if k in groups)
    return {**groups[group], "group": group, "kind": kind}


def regime_factors(gpu: Accelerator, model=None, arrivals: str = "spread") -> dict:
    """{'ttft', 'tpot', 'throughput': band_factors} of ``model`` on ``gpu``, those with data:
    looked up once for a curve whose every point carries its band (:func:`apply_bands`)."""
    return {
        k: f for k in ("ttft", "tpot", "throughput") if (f := band_factors(k, gpu, model, arrivals))
    }


def apply_bands(factors: dict, ttft_s: float, tpot_s: float, tokens_per_s: float) -> dict:
    """p10-p50-p90 of TTFT, time per output token, per-user speed and replica throughput: each
    value times its regime's quantiles of measured/predicted (``factors``:
    :func:`regime_factors`)."""
    out: dict = {}
    for kind, name, value in (
        ("ttft", "ttft_s", ttft_s),
        ("tpot", "tpot_s", tpot_s),
        ("throughput", "output_tokens_per_s", tokens_per_s),
    ):
        f = factors.get(kind)
        if f is None:
            continue
        out[name] = {"p10": value * f["p10"], "p50": value * f["p50"], "p90": value * f["p90"]}
        # per-user speed is 1 / TPOT: its low end is TPOT's high end (none where no token
        # follows the first: one output token has no time per output token)
        if kind == "tpot" and value > 0:
            out["per_user_tokens_per_s"] = {
                "p10": 1.0 / (value * f["p90"]),
                "p50": 1.0 / (value * f["p50"]),
                "p90": 1.0 / (value * f["p10"]),
            }
    return out


def bands_for(
    gpu: Accelerator,
    ttft_s: float,
    tpot_s: float,
    tokens_per_s: float,
    model=None,
    arrivals: str = "spread",
) -> dict:
    """p10-p90 of TTFT, time per output token, per-user speed and replica throughput
    (``arrivals``: see :func:`band_factors`), with the basis they were read from."""
    factors = regime_factors(gpu, model, arrivals)
    out = apply_bands(factors, ttft_s, tpot_s, tokens_per_s)
    if out:
        out["basis"] = band_basis(factors)
    return out


def band_basis(factors: dict) -> str:
    """What a band was read from: each kind's rows, sources and regime."""
    basis = []
    for kind, f in factors.items():
        harness = " of harnesses" if f["kind"] == "ttft_waves" else ""
        basis.append(f"{kind}: {f['n']} rows{harness}{_sources(f)} ({f['group']})")
    return (
        "quantiles of measured/predicted, leave-one-source-out, widened to hold 80% of a "
        "held-out publisher's rows: " + "; ".join(basis)
    )


def pessimistic_factor(
    kind: str, gpu: Accelerator, confidence: float | None, model=None, two_sided: bool = False
) -> float:
    """How much worse than its point estimate a latency ('ttft' or 'tpot') is at the given
    confidence: the ``confidence`` quantile of measured/predicted, interpolated between the
    stored quantiles, and never below 1 (a plan is never sized on a rosier number than the
    estimate itself) unless ``two_sided`` (a Monte-Carlo draw of the error, either way).
    None: the point estimate (factor 1)."""
    if confidence is None:
        return 1.0
    return _at_quantile(band_factors(kind, gpu, model), confidence, two_sided)


def _at_quantile(f: dict | None, q: float, two_sided: bool = False) -> float:
    """The ``q`` quantile of a band's measured/predicted (1: no band), at least 1 unless
    ``two_sided``; beyond the stored quantiles, the outermost."""
    if f is None:
        return 1.0
    qs = sorted(int(k[1:]) for k in f if k[0] == "p" and k[1:].isdigit())
    r = float(np.interp(100 * q, qs, [f[f"p{k}"] for k in qs]))
    return r if two_sided else max(1.0, r)


# The other families (diffusion, speech, encoders, VLA...): one band per family on the time a
# pass takes (measured / predicted time, ``family_error_bands`` in calibration.yaml; every
# rate they report is batch / time, so a rate's band is the inverse). Their metrics by which
# way they move with time (the rates in order of precedence: a family's headline rate is
# the first it reports):
FAMILY_TIMES = ("s_per_batch", "s_per_image", "s_per_video", "latency_ms", "rtf")
FAMILY_RATES = (
    "images_per_s",
    "videos_per_hour",
    "docs_per_s",
    "clips_per_s",
    "audio_s_per_s",
    "chunks_per_s",  # VLA: its robots per replica are those whose chunk meets the period
)


def family_band_factors(family: str) -> dict | None:
    """{'p5', ..., 'p95', 'n', 'group'} of measured/predicted time for a non-LLM family: its
    own group where it has enough rows, else every family's rows together; None without
    data."""
    groups = calibration().get("family_error_bands") or {}
    group = family if family in groups else "all" if "all" in groups else None
    return None if group is None else {**groups[group], "group": group}


def family_bands(family: str, metrics: dict) -> dict:
    """p10-p50-p90 of a family estimate's times and rates (those of :data:`FAMILY_TIMES` and
    :data:`FAMILY_RATES` it reports), and the basis they rest on."""
    f = family_band_factors(family)
    if f is None:
        return {}
    out: dict = {}
    for key, value in metrics.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if key in FAMILY_TIMES:
            out[key] = {q: value * f[q] for q in ("p10", "p50", "p90")}
        elif key in FAMILY_RATES:  # a slower pass (the time's p90) is the rate's p10
            out[key] = {
                q: value / f[r] for q, r in (("p10", "p90"), ("p50", "p50"), ("p90", "p10"))
            }
    if out:
        out["basis"] = (
            "quantiles of measured/predicted time, leave-one-source-out: "
            f"{f['n']} rows{_sources(f)} ({f['group']})"
        )
    return out


def family_time_factor(family: str, confidence: float | None, two_sided: bool = False) -> float:
    """How much slower than its point estimate a family's pass is at the given confidence
    (at least 1 unless ``two_sided``; None: the point estimate)."""
    if confidence is None:
        return 1.0
    return _at_quantile(family_band_factors(family), confidence, two_sided)
