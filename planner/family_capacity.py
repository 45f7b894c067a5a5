"""Capacity of one replica for the non-LLM workload kinds, in each kind's demand unit:
documents per second (embeddings, rerankers), real-time audio streams (speech), clips per
second (world models), images per second, videos per hour, robots. Rates are counted in
thousandths (:data:`planner.demand.RATE_SCALE`) so the optimiser works in integers.

Every estimate goes through the estimator's family registry; which workload kind may use
which family is the planner's registry (:mod:`planner.kinds`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator import Accelerator, EstimatorError, Parallel
from estimator.families import FamilyOptions, family_of
from estimator.families.asr import asr_streams_per_replica

from .demand import RATE_SCALE


@dataclass(frozen=True)
class FamilyCapacity:
    units: int  # scaled: see unit_scale
    batch: int  # the batch the capacity is reached at
    latency_s: float  # per batch (speech: per 30 s window)
    binding: str
    metrics: dict


def refused(reason: str) -> FamilyCapacity:
    """A candidate the model cannot run on (the split, or an input the model refuses)."""
    return FamilyCapacity(0, 0, float("inf"), f"split: {reason}", {})


def _batch_scan(run, limit: int, max_latency: float, rate_key: str, factor: float = 1.0):
    """Largest rate over batches whose pass time (times ``factor``) meets ``max_latency``
    and fits memory."""
    best = None
    for b in np.unique(np.round(np.geomspace(1, max(limit, 1), 24))).astype(int):
        e = run(int(b))
        if not e.fits:
            break
        if e.metrics["s_per_batch"] * factor > max_latency:
            break
        if best is None or e.metrics[rate_key] > best.metrics[rate_key]:
            best = e
    return best


def _scan_capacity(run, limit: float, key: str, factor: float = 1.0) -> FamilyCapacity:
    """``factor``: how much slower than estimated a pass is held to be (a confidence's
    pessimistic error, :func:`estimator.bands.family_time_factor`): the limit is met, and
    the rate counted, at that time."""
    try:
        first = run(1)
    except EstimatorError as e:
        return refused(str(e))
    if not first.fits:
        return FamilyCapacity(0, 0, float("inf"), "memory", {})
    best = _batch_scan(run, first.max_batch, limit, key, factor)
    if best is None:
        return FamilyCapacity(0, 0, first.metrics["s_per_batch"], "latency", first.metrics)
    m = best.metrics
    units = int(m[key] / factor * RATE_SCALE)
    return FamilyCapacity(units, m["batch"], m["s_per_batch"], "latency", m)


def batch_scan(
    options: Callable[[Any, Any], FamilyOptions], rate_key: str, limit_key: str
) -> Callable[..., FamilyCapacity]:
    """The capacity of a kind served in batches: the best rate (``rate_key``) over batch sizes
    whose pass time meets the workload's ``limit_key`` and that fit memory."""

    def capacity(
        model: Any, w: Any, gpu: Accelerator, par: Parallel, factor: float = 1.0
    ) -> FamilyCapacity:
        fam, opts = family_of(model), options(w, model)

        def run(b: int):
            return fam.estimate(model, gpu, par, w.weights, opts.model_copy(update={"batch": b}))

        return _scan_capacity(run, getattr(w, limit_key), rate_key, factor)

    return capacity


def speech_capacity(
    model: Any, w: Any, gpu: Accelerator, par: Parallel, factor: float = 1.0
) -> FamilyCapacity:
    try:  # a window's time x factor within max_rtf: its time within max_rtf / factor
        streams, b = asr_streams_per_replica(
            model, gpu, par, w.weights, w.max_rtf / factor, w.beam, engine=w.engine
        )
    except EstimatorError as e:
        return refused(str(e))
    if streams < 1:
        return FamilyCapacity(0, b, float("nan"), "rtf", {"batch": b})
    # the metrics of the batch the replica runs, one window of each stream (the time the
    # limit reads: max_rtf x the window)
    opts = FamilyOptions(
        batch=b, beam=w.beam, engine=w.engine, max_rtf=w.max_rtf, audio_seconds=model.window_s
    )
    e = family_of(model).estimate(model, gpu, par, w.weights, opts)
    m = {**e.metrics, "streams_per_replica": streams}
    return FamilyCapacity(streams, b, m["s_per_batch"], "rtf", m)


def robot_capacity(
    model: Any, w: Any, gpu: Accelerator, par: Parallel, factor: float = 1.0
) -> FamilyCapacity:
    # a chunk's time x factor within the period a robot executes it in (execute / control
    # rate) is its time within the period at factor x the control rate
    opts = FamilyOptions(
        cameras=w.cameras,
        action_horizon=w.action_horizon,
        flow_steps=w.flow_steps,
        control_hz=w.control_hz * factor,
        execute=w.execute_steps,
    )
    try:
        e = family_of(model).estimate(model, gpu, par, w.weights, opts)
    except EstimatorError as err:
        return refused(str(err))
    if not e.fits:
        return FamilyCapacity(0, 0, float("inf"), "memory", {})
    r = e.metrics["robots_per_replica"]
    if r > 1:  # the metrics of the batch the replica runs: all its robots' chunks at once
        e = family_of(model).estimate(
            model, gpu, par, w.weights, opts.model_copy(update={"batch": r})
        )
    # the workload's own rate and period, as it set them
    m = {
        **e.metrics,
        "control_hz": w.control_hz,
        "chunk_period_s": e.metrics["chunk_period_s"] * factor,
    }
    return FamilyCapacity(r, r, e.metrics["s_per_batch"], "control rate", m)
