"""What the other families' engines cost or save, fitted from their published runs: the host
time per decoding step of the eager speech engines, and the time factor torch.compile puts on
a diffusion pipeline's denoiser.

Published faster-whisper, transformers and openai/whisper runs are 3-20x slower than the GPU
roofline of the same work, and nearly as slow on a V100S as on an A100: they are bound by the
engine's loop on the host, not by the GPU. Each such engine gets two numbers, a host time per
decoder layer per decoding step (launches are per layer) and one per running sequence
(logits processors, beam bookkeeping), added to the GPU's step
(`estimator.families.asr.asr_times`). For a row,

    measured time = GPU time + steps x layers x (layer_s + sequences x layer_seq_s),

so the fit is a non-negative linear least squares in relative error. The per-sequence term is
fitted only where an engine's rows run more than one batch width (else it is 0).

A compiled diffusion pipeline runs the same denoiser passes faster (fused elementwise work,
autotuned GEMMs, CUDA graphs), by a ratio no launch count explains: FLUX.1-dev on an H100 saves
4.1 s over 50 steps at 1024², 82 ms a step, and its 4-step schnell saves the same share (0.66
and 0.69 of eager). So the engine is a factor on the denoiser's time, read off published pairs:
runs of one pipeline, on one GPU, at the same settings, eager and compiled. Compiling fuses
the elementwise work into the GEMMs around it; attention already runs as one fused kernel
(SDPA, FlashAttention) and is left as it is. With the eager run's measured time split as the
estimator splits it (share ``d`` in the denoiser outside attention), a compiled run at ``r`` of
the eager time puts that part at ``1 - (1 - r)/d`` of its eager time (a pair implying no
positive factor saved more than the estimator's split allows: the split, not the engine, is
off, and the pair is left out). Each source gives the median of its pairs, and the factor is
the median over sources (one vote each). Compiled runs with small tricks of their own beside
the compile (fused QKV projections, channels_last: 1-4% more) pair as compiled runs.

The eager pipeline itself runs its kernels one by one (norms, activations, residual adds,
layout changes between the GEMMs, each a pass over memory and a launch), where the roofline
at the language-model factors prices a serving engine's fused ones. Its factor on the same
part of the denoiser is read off its own published runs: with the estimate's split, a run
measured at ``r`` times the estimate's time puts that part at ``1 + (r - 1)/d`` of the
roofline's; each source gives its median, and the factor is the median over sources. The
compiled engine's pair factor is relative to it, read with the eager run's split at it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from estimator import EstimatorError
from estimator.efficiency import engine_time_factor
from estimator.families.asr import HOST_FITTED
from estimator.families.diffusion import DEFAULT_DIFFUSION_ENGINE, denoiser_factor

from .encoder_engines import cv_predicted as encoder_cv_predicted
from .family_cases import (
    TIME_METRICS,
    FamilyRow,
    estimate_case,
    metric_value,
    source_key,
    time_ratio,
)

# the encoder engine fitted on pairs (calibration.encoder_engines), and its families
EAGER_ENCODER, ENCODERS = "transformers", ("encoder", "reranker")


@dataclass(frozen=True)
class EngineRun:
    """One published run of an eager engine, reduced to what the fit needs."""

    number: int
    engine: str
    source: str
    measured_s: float  # seconds for the row's batch of work, as measured
    gpu_s: float  # the estimator's time for it without the engine's host time
    steps: float  # decoding steps x decoder layers
    seqs: float  # sequences per step (streams x beams)
    current_s: float  # the estimator's time with the current calibration
    current: float  # the estimator's value of the row's metric, current calibration


def engine_runs(cases: list[tuple[int, dict, dict]]) -> list[EngineRun]:
    out = []
    for number, case, src in cases:
        if case.get("engine") not in HOST_FITTED:
            continue
        try:
            e = estimate_case(case)
            if e.family != "asr":  # an encoder's eager engine shares a name: its own fit
                continue
            pred = metric_value(case, e)
        except (EstimatorError, KeyError, ValueError, TypeError):
            continue
        m, meas = e.metrics, float(case["value"])
        ratio = time_ratio(case["metric"], meas, pred)
        if ratio is None:
            continue
        out.append(
            EngineRun(
                number,
                case["engine"],
                source_key(src.get("source", "")),
                m["s_per_batch"] * ratio,
                m["s_per_batch"] - m["host_s"],
                float(m["decoder_steps"] * m["decoder_layers"]),
                float(m["streams"] * m["beam"]),
                m["s_per_batch"],
                pred,
            )
        )
    return out


def fit_host(runs: list[EngineRun]) -> tuple[float, float]:
    """(seconds per layer-step, per sequence per layer-step): least relative error of the
    runs' times."""
    from scipy.optimize import nnls

    t = np.array([r.measured_s for r in runs])
    a = np.array([[r.steps / ti, r.steps * r.seqs / ti] for r, ti in zip(runs, t, strict=True)])
    y = 1.0 - np.array([r.gpu_s for r in runs]) / t
    if len({r.seqs for r in runs}) < 2:  # one batch width: the per-sequence term is not identified
        x, _ = nnls(a[:, :1], y)
        return float(x[0]), 0.0
    x, _ = nnls(a, y)
    return float(x[0]), float(x[1])


def _by_engine(runs: list[EngineRun]) -> dict[str, list[EngineRun]]:
    out: dict[str, list[EngineRun]] = defaultdict(list)
    for r in runs:
        out[r.engine].append(r)
    return out


# diffusion engines with a denoiser time factor fitted against eager pairs, from this many
# sources at least (one source's pairs could be its own setup)
SPEED_FITTED = ("torch-compile",)
MIN_PAIR_SOURCES = 2
DIFFUSION = ("diffusion_image", "diffusion_video")
# what must match for two runs to be a pair: the pipeline, GPU and settings, all but the engine
PAIR_KEYS = (
    "preset",
    "gpu_preset",
    "n_gpus",
    "weights",
    "batch",
    "metric",
    "resolution",
    "steps",
    "guidance",
    "frames",
    "fast_accum",
)


@dataclass(frozen=True)
class EnginePair:
    """A compiled run and the eager run of the same pipeline, GPU and settings."""

    number: int  # the compiled run's row
    engine: str
    source: str
    factor: float  # the denoiser time factor the pair implies


def _times(case: dict, e) -> tuple[float, float]:
    """(the row's timed work, the part of it an engine speeds up: the denoiser but its
    attention) in the estimate ``e``; a step rate times the denoiser alone."""
    m = e.metrics
    sped = m["denoiser_s"] - m["denoiser_attention_s"]
    return (m["denoiser_s"] if case["metric"] == "steps_per_s" else m["s_per_batch"]), sped


def _at_eager(total: float, sped: float, eager: float | None) -> tuple[float, float]:
    """(timed work, sped part) of an eager estimate made at the calibration's eager factor,
    re-read at the eager factor ``eager`` (None: as made)."""
    if eager is None:
        return total, sped
    now = denoiser_factor(DEFAULT_DIFFUSION_ENGINE)
    new = sped / now * eager
    return total - sped + new, new


@dataclass(frozen=True)
class EagerRun:
    """A published eager diffusion run: the factor on the denoiser's work outside attention
    over the roofline's that its measured time implies."""

    number: int
    source: str
    factor: float


def eager_runs(cases: list[tuple[int, dict, dict]]) -> list[EagerRun]:
    """Every published eager diffusion run the estimator can time."""
    now = denoiser_factor(DEFAULT_DIFFUSION_ENGINE)
    out = []
    for number, case, src in cases:
        if case.get("engine") != DEFAULT_DIFFUSION_ENGINE:
            continue
        try:
            e = estimate_case(case)
            pred = metric_value(case, e)
        except (EstimatorError, KeyError, ValueError, TypeError):
            continue
        if e.family not in DIFFUSION:
            continue
        r = time_ratio(case["metric"], float(case["value"]), pred)  # measured / estimated
        total, den = _times(case, e)
        if r is None or not den > 0:
            continue
        factor = (r * total - (total - den)) / (den / now)
        if factor > 0:
            out.append(EagerRun(number, source_key(src.get("source", "")), factor))
    return out


def engine_pairs(
    cases: list[tuple[int, dict, dict]], eager_factor: float | None = None
) -> list[EnginePair]:
    """Every published compiled diffusion run with an eager run to pair it with;
    ``eager_factor``: the eager pipeline's factor to read the eager run's split at (None:
    the calibration's)."""
    eager, fast = {}, []
    for number, case, src in cases:
        eng = case.get("engine")
        key = (source_key(src.get("source", "")), tuple(case.get(k, "") for k in PAIR_KEYS))
        if eng == DEFAULT_DIFFUSION_ENGINE:
            eager[key] = case
        elif eng in SPEED_FITTED:
            fast.append((number, case, key))
    out = []
    for number, case, key in fast:
        base = eager.get(key)
        if base is None:
            continue
        try:
            e = estimate_case(base)
        except (EstimatorError, KeyError, ValueError, TypeError):
            continue
        if e.family not in DIFFUSION:
            continue
        total, den = _at_eager(*_times(base, e), eager_factor)
        r = time_ratio(case["metric"], float(case["value"]), float(base["value"]))
        if r is None or not den > 0:
            continue
        # r is compiled / eager here (time_ratio's "predicted" is the eager run's value)
        factor = 1.0 - (1.0 - r) * total / den
        if factor > 0:
            out.append(EnginePair(number, case["engine"], key[0], factor))
    return out


def _enough_sources(items: list[EnginePair] | list[EagerRun]) -> bool:
    """Whether runs or pairs come from enough sources to fit a factor on (one source's could
    be its own setup)."""
    return len({x.source for x in items}) >= MIN_PAIR_SOURCES


def fit_speed(pairs: list[EnginePair] | list[EagerRun]) -> float:
    """The median over sources of each source's median factor."""
    by_src: dict[str, list[float]] = defaultdict(list)
    for p in pairs:
        by_src[p.source].append(p.factor)
    return float(np.median([np.median(v) for v in by_src.values()]))


def fit_family_engines(cases: list[tuple[int, dict, dict]]) -> dict:
    """The ``family_engines`` section of the calibration file."""
    fitted = {}
    for eng, runs in sorted(_by_engine(engine_runs(cases)).items()):
        step, seq = fit_host(runs)
        fitted[eng] = {
            "layer_us": round(step * 1e6, 2),
            "layer_seq_us": round(seq * 1e6, 3),
            "rows": len(runs),
            "sources": sorted({r.source for r in runs}),
        }
    out = {"asr": fitted} if fitted else {}
    speed, eager = {}, eager_runs(cases)
    f_eager = None
    if _enough_sources(eager):
        f_eager = fit_speed(eager)
        speed[DEFAULT_DIFFUSION_ENGINE] = {
            "time_factor": round(f_eager, 4),
            "rows": len(eager),
            "sources": sorted({r.source for r in eager}),
        }
    every = engine_pairs(cases, f_eager)
    for eng in SPEED_FITTED:
        pairs = [p for p in every if p.engine == eng]
        if _enough_sources(pairs):
            speed[eng] = {
                "time_factor": round(fit_speed(pairs), 4),
                "rows": len(pairs),
                "sources": sorted({p.source for p in pairs}),
            }
    if speed:
        out["diffusion"] = speed
    return out


def cross_validate_engines(rows: list[FamilyRow], cases: list[tuple[int, dict, dict]]) -> None:
    """Each row's leave-one-source-out prediction (``cv_predicted``): an eager-engine row is
    predicted with its engine's host time fitted on the other sources' runs (none: left
    empty); every other row has no parameter fitted on this data, so it is its prediction."""
    runs = engine_runs(cases)
    by_number = {r.number: r for r in runs}
    by_engine = _by_engine(runs)
    pairs = engine_pairs(cases)
    eager = eager_runs(cases)
    by_case = {number: case for number, case, _ in cases}
    for row in rows:
        run = by_number.get(row.row)
        eager_encoder = row.family in ENCODERS and row.engine == EAGER_ENCODER
        if eager_encoder and row.predicted is not None:
            row.cv_predicted = encoder_cv_predicted(row, by_case[row.row])
            continue
        if row.engine in SPEED_FITTED and row.predicted is not None:
            others = [p for p in pairs if p.engine == row.engine and p.source != row.source]
            plain = [r for r in eager if r.source != row.source]
            row.cv_predicted = _with_factor(row, by_case[row.row], others, plain)
            continue
        if row.family in DIFFUSION and row.engine == DEFAULT_DIFFUSION_ENGINE and row.predicted:
            plain = [r for r in eager if r.source != row.source]
            row.cv_predicted = _with_factor(row, by_case[row.row], None, plain)
            continue
        if run is None:
            row.cv_predicted = row.predicted
            continue
        others = [r for r in by_engine[run.engine] if r.source != run.source]
        if not others:
            row.cv_predicted = None
            continue
        step, seq = fit_host(others)
        t = run.gpu_s + run.steps * (step + run.seqs * seq)
        time_metric = row.metric in TIME_METRICS
        row.cv_predicted = run.current * (t / run.current_s if time_metric else run.current_s / t)


def _with_factor(
    row: FamilyRow, case: dict, pairs: list[EnginePair] | None, plain: list[EagerRun]
) -> float | None:
    """A diffusion row's prediction with its engine's factors fitted on ``pairs`` (the
    compiled engine's, relative to eager; None: an eager row) and ``plain`` (the eager
    pipeline's runs): None where too few sources fit a factor the row's engine has."""
    if pairs is not None and not _enough_sources(pairs):
        return None
    e = estimate_case(case)
    if e.family not in DIFFUSION:
        return row.predicted
    total, den = _times(case, e)
    shipped = denoiser_factor(row.engine)
    f_eager = (
        fit_speed(plain)
        if _enough_sources(plain)
        else engine_time_factor("diffusion", DEFAULT_DIFFUSION_ENGINE)[0]
    )
    factor = f_eager * (fit_speed(pairs) if pairs is not None else 1.0)
    t = total + den * (factor / shipped - 1.0)
    return row.predicted * (t / total if row.metric in TIME_METRICS else total / t)
