"""Workload schemas, one per kind: a language-model workload sized in seats, and one per
other model family with its own demand unit (see :mod:`planner.kinds`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from estimator.engines import (
    DIFFUSION_ENGINES,
    ENCODER_ENGINES,
    ENGINES,
    KNOBS,
    SPEECH_ENGINES,
    Engine,
    configure,
)
from estimator.errors import EstimatorError
from estimator.families.asr import DEFAULT_ASR_ENGINE, asr_engine
from estimator.families.diffusion import DEFAULT_DIFFUSION_ENGINE, diffusion_engine
from estimator.families.encoder import encoder_engine
from estimator.formats import KV_FORMATS, WEIGHT_FORMATS
from estimator.steps import ServingOptions, Speculative

from .errors import ScenarioError

# no `yes` for a count, no string for a number, no NaN or infinity (`null` is "no limit")
STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class LLMWorkload(BaseModel):
    """A language-model chat/agent workload sized in seats (concurrent sessions)."""

    model_config = STRICT
    name: str = Field(min_length=1)
    kind: Literal["llm"] = "llm"
    model: str = Field(description="preset name/alias, or a path to a local config.json")
    weights: str | None = Field(
        None, description="weight format; default: what the model name or config implies, else bf16"
    )
    kv_cache: str = "bf16"
    engine: str = "vllm"
    # the engine's knobs, as its users set them (default: the engine's own)
    gpu_memory_utilization: float | None = Field(
        None, ge=KNOBS["gpu_memory_utilization"][0], le=KNOBS["gpu_memory_utilization"][1]
    )
    max_num_seqs: int | None = Field(None, ge=KNOBS["max_num_seqs"][0], le=KNOBS["max_num_seqs"][1])
    max_num_batched_tokens: int | None = Field(
        None, ge=KNOBS["max_num_batched_tokens"][0], le=KNOBS["max_num_batched_tokens"][1]
    )
    max_model_len: int | None = Field(
        None, ge=KNOBS["max_model_len"][0], le=KNOBS["max_model_len"][1]
    )
    mamba_full_memory_ratio: float | None = Field(
        None,
        ge=KNOBS["mamba_full_memory_ratio"][0],
        le=KNOBS["mamba_full_memory_ratio"][1],
        description="SGLang: a hybrid's state pool over its attention KV pool (default 0.9)",
    )
    serving_stack_ms: float | None = Field(
        None,
        ge=KNOBS["serving_stack_ms"][0],
        le=KNOBS["serving_stack_ms"][1],
        description="the serving stack's own time to a first token, ms, as measured on one's "
        "own stack (default: the one fitted for the engine's own server)",
    )
    users: float = Field(gt=0, le=1e9, description="people (worker-equivalents)")
    hours_per_person: float = Field(
        ge=0.01, le=24, description="hours a day a person drives a session"
    )
    utilisation: float = Field(
        ge=0.01, le=1, description="usable share of round-the-clock capacity"
    )
    input_tokens: int = Field(ge=1, le=10_000_000)
    output_tokens: int = Field(ge=1, le=1_000_000)
    ttft_s: float | None = Field(None, gt=0, le=86400, description="time-to-first-token target")
    ttft_percentile: float = Field(90, gt=0, lt=100)
    tokens_per_s: float | None = Field(
        None, gt=0, le=1e6, description="per-user decode speed target"
    )
    # serving under load (estimator.load); every default is off or neutral
    think_time_s: float = Field(
        0.0,
        ge=0,
        le=86400,
        description="mean pause between an answer and the next prompt; 0: a seat "
        "streams continuously (agents, pipelines); people chatting: 10-60 s",
    )
    prefix_hit_rate: float = Field(0.0, ge=0, lt=1, description="share of prompt tokens cached")
    chunk_tokens: int | None = Field(
        None, ge=16, le=10_000_000, description="chunked-prefill tokens per step"
    )
    speculative: Speculative | None = None
    disaggregation: Literal["off", "auto", "only"] = Field(
        "off", description="separate prefill and decode pools: auto lets the planner choose"
    )
    # vision-language models: images in every prompt
    images_per_request: int = Field(0, ge=0, le=1000)
    image_resolution: str = Field("1024x1024", description="WxH of each image")
    _vlm: Any = PrivateAttr(default=None)
    # the scenario's Scenario.error_at (quantile, two-sided), set by the planner
    _error_at: tuple[float, bool] | None = PrivateAttr(default=None)

    @property
    def vision_model(self) -> Any:
        return self._vlm

    def image_size(self) -> tuple[int, int]:
        try:
            w, h = (int(x) for x in self.image_resolution.lower().split("x"))
        except ValueError:
            raise ScenarioError(
                f"workload '{self.name}': image_resolution must be WxH, "
                f"not '{self.image_resolution}'"
            ) from None
        return w, h

    def engine_config(self, name: str | None = None) -> Engine:
        """This workload's engine with the knobs it sets (``name``: another engine's, as a
        launch command for it takes them: those it has not got left out); a knob the
        workload's own engine has not got is bad input naming the workload."""
        e = ENGINES[name or self.engine]
        knobs = {k: getattr(self, k) for k in KNOBS}
        if name and e.state_pool_ratio is None:
            knobs.pop("mamba_full_memory_ratio")  # it keeps the states in its KV pool
        if name and name != self.engine:
            knobs.pop("serving_stack_ms")  # measured on the workload's own stack, not this one
        try:
            return configure(e, **knobs)
        except EstimatorError as err:
            raise ScenarioError(f"workload '{self.name}': {err}") from None

    def serving(self) -> ServingOptions:
        return ServingOptions(
            think_time_s=self.think_time_s,
            prefix_hit_rate=self.prefix_hit_rate,
            chunk_tokens=self.chunk_tokens,
            speculative=self.speculative,
        )

    @field_validator("disaggregation", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        # YAML 1.1 reads a bare `off` / `on` as a boolean
        return {False: "off", True: "auto"}.get(v, v) if isinstance(v, bool) else v

    @field_validator("weights")
    @classmethod
    def _w(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.lower() not in WEIGHT_FORMATS:
            raise ValueError(f"unknown weight format '{v}'; use one of {', '.join(WEIGHT_FORMATS)}")
        return v.lower()

    @field_validator("kv_cache")
    @classmethod
    def _kv(cls, v: str) -> str:
        if v.lower() not in KV_FORMATS:
            raise ValueError(f"unknown KV format '{v}'; use one of {', '.join(KV_FORMATS)}")
        return v.lower()

    @field_validator("engine")
    @classmethod
    def _e(cls, v: str) -> str:
        if v.lower() not in ENGINES:
            raise ValueError(f"unknown engine '{v}'; use one of {', '.join(ENGINES)}")
        return v.lower()


def _checked(check, v: str) -> str:
    """``check(v)``, its estimator error as the validation error pydantic reports."""
    try:
        return check(v)
    except EstimatorError as e:
        raise ValueError(str(e)) from None


class _FamilyWorkload(BaseModel):
    model_config = STRICT
    name: str = Field(min_length=1)
    model: str = Field(description="a preset of the workload's family")
    weights: str = "bf16"

    _w = field_validator("weights")(LLMWorkload._w.__func__)


class EmbeddingWorkload(_FamilyWorkload):
    """Text embeddings or reranking: documents (query-document pairs) per second."""

    kind: Literal["embedding"]
    docs_per_s: float = Field(gt=0, le=1e9, description="documents (or pairs) per second at peak")
    input_tokens: int = Field(512, ge=1, le=10_000_000, description="tokens per document (pair)")
    max_batch_latency_s: float = Field(1.0, gt=0, le=86400, description="time one batch may take")
    engine: str = Field(
        next(iter(ENCODER_ENGINES)), description="serving engine: " + ", ".join(ENCODER_ENGINES)
    )

    _engine = field_validator("engine")(classmethod(lambda cls, v: _checked(encoder_engine, v)))


class SpeechWorkload(_FamilyWorkload):
    """Speech recognition: concurrent real-time streams, or hours of audio a day."""

    kind: Literal["speech"]
    streams: float | None = Field(None, gt=0, le=1e9, description="concurrent real-time streams")
    audio_hours_per_day: float | None = Field(None, gt=0, le=1e10)
    utilisation: float = Field(1.0, ge=0.01, le=1, description="for audio_hours_per_day")
    max_rtf: float = Field(0.5, gt=0, le=1, description="processing s per audio s, per stream")
    beam: int = Field(1, ge=1, le=64)
    engine: str = Field(
        DEFAULT_ASR_ENGINE, description="serving engine: " + ", ".join(SPEECH_ENGINES)
    )

    _engine = field_validator("engine")(classmethod(lambda cls, v: _checked(asr_engine, v)))

    @model_validator(mode="after")
    def _one_demand(self) -> SpeechWorkload:
        if (self.streams is None) == (self.audio_hours_per_day is None):
            raise ValueError("give exactly one of streams or audio_hours_per_day")
        return self


class WorldModelWorkload(_FamilyWorkload):
    """JEPA video world models: clips encoded per second."""

    kind: Literal["world_model"]
    clips_per_s: float = Field(gt=0, le=1e9)
    frames: int | None = Field(
        None, ge=1, le=100_000, description="frames per clip (default: the model's)"
    )
    resolution: int | None = Field(None, ge=16, le=16384, description="square side in pixels")
    max_latency_s: float = Field(
        1.0, gt=0, le=86400, description="time one batch of clips may take"
    )


FAST_ACCUM = (
    "the denoiser's GEMMs accumulate in 16 bits (FP8 with fast accumulation, TensorRT FP16): "
    "GeForce cards run them at twice their FP32-accumulate rate"
)


OFFLOAD = (
    "model CPU offload: each component is on the GPU only while it runs (the GPU holds the "
    "largest; each batch moves all of them over PCIe)"
)


PIPELINE_ENGINE = (
    "the pipeline's engine, which sets how fast the denoiser runs (diffusion models; VAR "
    "models ignore it): " + ", ".join(DIFFUSION_ENGINES)
)


class _DiffusionWorkload(_FamilyWorkload):
    """What image and video generation share: the pipeline's switches and engine."""

    fast_accum: bool = Field(False, description=FAST_ACCUM)
    offload: bool = Field(False, description=OFFLOAD)
    engine: str = Field(DEFAULT_DIFFUSION_ENGINE, description=PIPELINE_ENGINE)

    _engine = field_validator("engine")(classmethod(lambda cls, v: _checked(diffusion_engine, v)))


class ImageGenerationWorkload(_DiffusionWorkload):
    """Diffusion image generation: images per second (or per hour) at peak."""

    kind: Literal["image_generation"]
    images_per_s: float | None = Field(None, gt=0, le=1e9)
    images_per_hour: float | None = Field(None, gt=0, le=1e12)
    max_s_per_image: float = Field(10.0, gt=0, le=86400, description="time one batch may take")
    resolution: int | None = Field(
        None, ge=64, le=16384, description="square side (default: the model's)"
    )
    steps: int | None = Field(None, ge=1, le=10_000, description="default: the model card's")
    guidance: bool | None = None

    @model_validator(mode="after")
    def _one_rate(self) -> ImageGenerationWorkload:
        if (self.images_per_s is None) == (self.images_per_hour is None):
            raise ValueError("give exactly one of images_per_s or images_per_hour")
        return self

    @property
    def rate(self) -> float:
        return self.images_per_s if self.images_per_s is not None else self.images_per_hour / 3600


class VideoGenerationWorkload(_DiffusionWorkload):
    """Diffusion video generation: videos per hour at peak."""

    kind: Literal["video_generation"]
    videos_per_hour: float = Field(gt=0, le=1e9)
    max_latency_s: float = Field(600.0, gt=0, le=86400, description="time one video may take")
    frames: int | None = Field(None, ge=1, le=100_000)
    steps: int | None = Field(None, ge=1, le=10_000)
    guidance: bool | None = None


class RobotPolicyWorkload(_FamilyWorkload):
    """Vision-language-action policies: robots driven at a control rate."""

    kind: Literal["robot_policy"]
    robots: float = Field(gt=0, le=1e9, description="robots running at once")
    control_hz: float = Field(50.0, gt=0, le=100_000)
    cameras: int = Field(1, ge=1, le=64)
    action_horizon: int | None = Field(None, ge=1, le=100_000, description="default: the model's")
    execute_steps: int | None = Field(
        None, ge=1, description="actions executed before re-planning (default: the horizon)"
    )
    flow_steps: int | None = Field(None, ge=1, le=10_000)
