"""Capacity of one replica for the non-LLM families, in each family's demand unit:
documents per second (embeddings, rerankers), real-time audio streams (speech), clips per
second (world models). Rates are counted in thousandths so the optimiser works in integers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimator import Accelerator, EstimatorError, Parallel
from estimator.families.diffusion import DiffusionModel
from estimator.families.models import AsrModel, EncoderModel, FamilyModel, JepaModel
from estimator.families.perf import (
    asr_streams_per_replica,
    estimate_diffusion,
    estimate_encoder,
    estimate_jepa,
    estimate_var,
    estimate_vla,
    machine_for,
)

from .scenario import (
    EmbeddingWorkload,
    ImageGenerationWorkload,
    RobotPolicyWorkload,
    SpeechWorkload,
    VideoGenerationWorkload,
    WorldModelWorkload,
)

RATE_SCALE = 1000  # demand and capacity of rate units in thousandths


@dataclass(frozen=True)
class FamilyCapacity:
    units: int  # scaled: see unit_scale
    batch: int  # the batch the capacity is reached at
    latency_s: float  # per batch (speech: per 30 s window)
    binding: str
    metrics: dict


def _batch_scan(run, limit: int, max_latency: float, rate_key: str):
    """Largest rate over batches whose pass time meets ``max_latency`` and fits memory."""
    best = None
    for b in np.unique(np.round(np.geomspace(1, max(limit, 1), 24))).astype(int):
        e = run(int(b))
        if not e.fits:
            break
        if e.metrics["s_per_batch"] > max_latency:
            break
        if best is None or e.metrics[rate_key] > best.metrics[rate_key]:
            best = e
    return best


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def family_capacity(model: FamilyModel, w, gpu: Accelerator, par: Parallel) -> FamilyCapacity:
    if isinstance(model, DiffusionModel):
        return _diffusion_capacity(model, w, gpu, par)
    family = getattr(model, "family", "")
    if family == "var" and isinstance(w, ImageGenerationWorkload):
        guidance = True if w.guidance is None else w.guidance

        def run(b: int):
            return estimate_var(model, gpu, par, w.weights, b, guidance)

        return _scan_capacity(run, w.max_s_per_image, "images_per_s")
    if family == "vla" and isinstance(w, RobotPolicyWorkload):
        try:
            e = estimate_vla(
                model,
                gpu,
                par,
                w.weights,
                1,
                w.cameras,
                w.action_horizon,
                w.flow_steps,
                w.control_hz,
                w.execute_steps,
            )
        except EstimatorError as err:
            return FamilyCapacity(0, 0, float("inf"), f"split: {err}", {})
        if not e.fits:
            return FamilyCapacity(0, 0, float("inf"), "memory", {})
        r = e.metrics["robots_per_replica"]
        return FamilyCapacity(r, r, e.metrics["s_per_batch"], "control rate", e.metrics)
    try:
        machine_for(model, gpu, par, w.weights)
    except EstimatorError as e:
        return FamilyCapacity(0, 0, float("inf"), f"split: {e}", {})
    if isinstance(w, EmbeddingWorkload) and isinstance(model, EncoderModel):
        return _scan_capacity(
            lambda b: estimate_encoder(model, gpu, par, w.weights, b, w.input_tokens),
            w.max_batch_latency_s,
            "docs_per_s",
        )
    if isinstance(w, SpeechWorkload) and isinstance(model, AsrModel):
        streams, b = asr_streams_per_replica(model, gpu, par, w.weights, w.max_rtf, w.beam)
        return FamilyCapacity(streams, b, float("nan"), "rtf", {"batch": b})
    if isinstance(w, WorldModelWorkload) and isinstance(model, JepaModel):
        frames, res = w.frames or model.frames, w.resolution or model.resolution
        return _scan_capacity(
            lambda b: estimate_jepa(model, gpu, par, w.weights, b, frames, res, res),
            w.max_latency_s,
            "clips_per_s",
        )
    raise EstimatorError(
        f"workload '{w.name}': model {model.name} is {_a(model.family)} model, "
        f"which a workload of kind '{w.kind}' cannot use"
    )


def _diffusion_capacity(model, w, gpu: Accelerator, par: Parallel) -> FamilyCapacity:
    video = isinstance(w, VideoGenerationWorkload)
    if not isinstance(w, (ImageGenerationWorkload, VideoGenerationWorkload)) or video != (
        model.family == "diffusion_video"
    ):
        raise EstimatorError(
            f"workload '{w.name}': model {model.name} is {_a(model.family)} model, "
            f"which a workload of kind '{w.kind}' cannot use"
        )
    d = model.defaults
    r = d.get("resolution", [1024, 1024])
    res = getattr(w, "resolution", None)
    width, height = (res, res) if res else (r[0], r[1])
    steps = w.steps or d.get("steps", 30)
    guidance = d.get("guidance", True) if w.guidance is None else w.guidance
    frames = (w.frames or d.get("frames", 1)) if video else 1
    limit = w.max_latency_s if video else w.max_s_per_image

    def run(b: int):
        return estimate_diffusion(
            model, gpu, par, w.weights, b, width, height, steps, guidance, frames
        )

    key = "videos_per_hour" if video else "images_per_s"
    return _scan_capacity(run, limit, key)


def _scan_capacity(run, limit: float, key: str) -> FamilyCapacity:
    try:
        first = run(1)
    except EstimatorError as e:
        return FamilyCapacity(0, 0, float("inf"), f"split: {e}", {})
    if not first.fits:
        return FamilyCapacity(0, 0, float("inf"), "memory", {})
    best = _batch_scan(run, first.max_batch, limit, key)
    if best is None:
        return FamilyCapacity(0, 0, first.metrics["s_per_batch"], "latency", first.metrics)
    m = best.metrics
    return FamilyCapacity(int(m[key] * RATE_SCALE), m["batch"], m["s_per_batch"], "latency", m)
