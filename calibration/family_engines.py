"""Host time per decoding step of the eager speech engines, fitted from their published runs.

Published faster-whisper, transformers and openai/whisper runs are 3-20x slower than the GPU
roofline of the same work, and nearly as slow on a V100S as on an A100: they are bound by the
engine's loop on the host, not by the GPU. Each such engine gets two numbers, a host time per
decoder layer per decoding step (launches are per layer) and one per running sequence
(logits processors, beam bookkeeping), added to the GPU's step
(`estimator.families.asr.asr_times`). For a row,

    measured time = GPU time + steps x layers x (layer_s + sequences x layer_seq_s),

so the fit is a non-negative linear least squares in relative error. The per-sequence term is
fitted only where an engine's rows run more than one batch width (else it is 0).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from estimator import EstimatorError
from estimator.families.asr import HOST_FITTED

from .family_cases import (
    TIME_METRICS,
    FamilyRow,
    estimate_case,
    metric_value,
    source_key,
    time_ratio,
)


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
    return {"asr": fitted} if fitted else {}


def cross_validate_engines(rows: list[FamilyRow], cases: list[tuple[int, dict, dict]]) -> None:
    """Each row's leave-one-source-out prediction (``cv_predicted``): an eager-engine row is
    predicted with its engine's host time fitted on the other sources' runs (none: left
    empty); every other row has no parameter fitted on this data, so it is its prediction."""
    runs = engine_runs(cases)
    by_number = {r.number: r for r in runs}
    by_engine = _by_engine(runs)
    for row in rows:
        run = by_number.get(row.row)
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
