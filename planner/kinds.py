"""The planner's registry of workload kinds: kind -> its schema, the model families it takes,
its demand (in its own unit), a replica's capacity in that unit, and the limit a diagnosis
names when no candidate is fast enough.

Adding a family to the planner: its workload schema (:mod:`planner.workloads`), its demand
function (:mod:`planner.demand`), and a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from estimator.families import FamilyOptions, family_of
from estimator.families.asr import engine_note as asr_engine_note
from estimator.families.diffusion import engine_note as diffusion_engine_note
from estimator.families.encoder import engine_note as encoder_engine_note

from . import demand
from .family_capacity import batch_scan, robot_capacity, speech_capacity
from .workloads import (
    EmbeddingWorkload,
    ImageGenerationWorkload,
    LLMWorkload,
    RobotPolicyWorkload,
    SpeechWorkload,
    VideoGenerationWorkload,
    WorldModelWorkload,
)


@dataclass(frozen=True)
class WorkloadKind:
    schema: type
    families: tuple[str, ...]  # estimator families whose presets the kind takes
    demand: Callable[[Any], demand.Demand]
    capacity: Callable[..., Any] | None = None  # None: the language-model path (seats)
    limit_key: str | None = None  # the workload's time limit, named when nothing meets it
    too_slow: str | None = None  # message when nothing keeps up (format keys: w, label, s)
    # said once per workload of this kind (the workload, its model; None: nothing to say)
    note: Callable[[Any, Any], str | None] | None = None
    # the time a replica's pass (``s_per_batch``) is held to, from the workload and the
    # replica's metrics, where the limit is not a time of the workload's own (``limit_key``)
    pass_limit: Callable[[Any, dict], float | None] | None = None

    @property
    def language_model(self) -> bool:
        return self.capacity is None

    def pass_limit_s(self, w: Any, metrics: dict) -> float | None:
        """The time a replica's pass is held to (None where the kind has none)."""
        if self.pass_limit is not None:
            return self.pass_limit(w, metrics)
        return getattr(w, self.limit_key) if self.limit_key else None


def _square(side: int | None) -> tuple[int, int] | None:
    return (side, side) if side else None


def _takes_engine(m) -> bool:
    """Whether the model's family tells engines apart (an image workload's VAR model does
    not: it is timed on the roofline alone)."""
    return bool(family_of(m).engines)


def _pipe(w, m) -> dict[str, Any]:
    """A diffusion workload's pipeline switches (16-bit accumulation, model CPU offload) and,
    for a model whose family tells engines apart, its engine."""
    engine = {"engine": w.engine} if _takes_engine(m) else {}
    return {"fast_accum": w.fast_accum, "offload": w.offload, **engine}


def _diffusion_engine_said(w, m) -> str | None:
    """A diffusion workload's engine, said where its model takes one."""
    if not _takes_engine(m):
        return None
    return f"workload '{w.name}': {diffusion_engine_note(w.engine)}"


KINDS: dict[str, WorkloadKind] = {
    "llm": WorkloadKind(LLMWorkload, ("llm", "vlm"), demand.llm_seats),
    "embedding": WorkloadKind(
        EmbeddingWorkload,
        ("encoder", "reranker"),
        demand.embedding_rate,
        batch_scan(
            lambda w, m: FamilyOptions(input_tokens=w.input_tokens, engine=w.engine),
            "docs_per_s",
            "max_batch_latency_s",
        ),
        "max_batch_latency_s",
        note=lambda w, m: f"workload '{w.name}': {encoder_engine_note(w.engine)}",
    ),
    "speech": WorkloadKind(
        SpeechWorkload,
        ("asr",),
        demand.speech_streams,
        speech_capacity,
        "max_rtf",
        note=lambda w, m: f"workload '{w.name}': {asr_engine_note(w.engine)}",
        # a window of audio within max_rtf of its length
        pass_limit=lambda w, m: w.max_rtf * m["audio_seconds"] if "audio_seconds" in m else None,
    ),
    "world_model": WorkloadKind(
        WorldModelWorkload,
        ("jepa",),
        demand.clip_rate,
        batch_scan(
            lambda w, m: FamilyOptions(frames=w.frames, resolution=_square(w.resolution)),
            "clips_per_s",
            "max_latency_s",
        ),
        "max_latency_s",
    ),
    "image_generation": WorkloadKind(
        ImageGenerationWorkload,
        ("diffusion_image", "var"),
        demand.image_rate,
        batch_scan(
            lambda w, m: FamilyOptions(
                resolution=_square(w.resolution),
                steps=w.steps,
                guidance=w.guidance,
                **_pipe(w, m),
            ),
            "images_per_s",
            "max_s_per_image",
        ),
        "max_s_per_image",
        note=_diffusion_engine_said,
    ),
    "video_generation": WorkloadKind(
        VideoGenerationWorkload,
        ("diffusion_video",),
        demand.video_rate,
        batch_scan(
            lambda w, m: FamilyOptions(
                frames=w.frames, steps=w.steps, guidance=w.guidance, **_pipe(w, m)
            ),
            "videos_per_hour",
            "max_latency_s",
        ),
        "max_latency_s",
        note=_diffusion_engine_said,
    ),
    "robot_policy": WorkloadKind(
        RobotPolicyWorkload,
        ("vla",),
        demand.robots,
        robot_capacity,
        too_slow=(
            "no candidate keeps up with control_hz {w.control_hz:g}: the fastest, {label}, "
            "takes {ms:.3g} ms per action chunk; lower control_hz, execute more steps per "
            "chunk, or use fewer flow steps"
        ),
        pass_limit=lambda w, m: m.get("chunk_period_s"),  # its chunk within the period
    ),
}


def demand_of(w: Any) -> demand.Demand:
    return KINDS[w.kind].demand(w)


def family_capacity(model: Any, w: Any, gpu: Any, par: Any, factor: float = 1.0) -> Any:
    """A replica's capacity for a non-LLM workload, in its kind's unit, with its passes held
    to ``factor`` times their estimated time (a scenario's confidence)."""
    return KINDS[w.kind].capacity(model, w, gpu, par, factor)
