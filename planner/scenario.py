"""Scenario files: YAML validated by pydantic; errors name the file, line and key."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from estimator.errors import EstimatorError
from estimator.formats import KV_FORMATS, WEIGHT_FORMATS
from estimator.load import ServingOptions, Speculative
from estimator.memory import ENGINES


class ScenarioError(EstimatorError):
    """Bad scenario input (exit code 2)."""


class LLMWorkload(BaseModel):
    """A language-model chat/agent workload sized in seats (concurrent sessions)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    kind: Literal["llm"] = "llm"
    model: str = Field(description="preset name/alias, or a path to a local config.json")
    weights: str = "bf16"
    kv_cache: str = "bf16"
    engine: str = "vllm"
    users: float = Field(gt=0, description="people (worker-equivalents)")
    hours_per_person: float = Field(
        gt=0, le=24, description="hours a day a person drives a session"
    )
    utilisation: float = Field(gt=0, le=1, description="usable share of round-the-clock capacity")
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    ttft_s: float | None = Field(None, gt=0, description="time-to-first-token target")
    ttft_percentile: float = Field(90, gt=0, lt=100)
    tokens_per_s: float | None = Field(None, gt=0, description="per-user decode speed target")
    # serving under load (estimator.load); every default is off or neutral
    think_time_s: float = Field(
        0.0,
        ge=0,
        description="mean pause between an answer and the next prompt; 0: a seat "
        "streams continuously (agents, pipelines); people chatting: 10-60 s",
    )
    prefix_hit_rate: float = Field(0.0, ge=0, lt=1, description="share of prompt tokens cached")
    chunk_tokens: int | None = Field(None, ge=16, description="chunked-prefill tokens per step")
    speculative: Speculative | None = None
    disaggregation: Literal["off", "auto", "only"] = Field(
        "off", description="separate prefill and decode pools: auto lets the planner choose"
    )
    # vision-language models: images in every prompt
    images_per_request: int = Field(0, ge=0)
    image_resolution: str = Field("1024x1024", description="WxH of each image")
    _vlm: Any = PrivateAttr(default=None)

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
    def _w(cls, v: str) -> str:
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


class _FamilyWorkload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    model: str = Field(description="a preset of the workload's family")
    weights: str = "bf16"

    _w = field_validator("weights")(LLMWorkload._w.__func__)


class EmbeddingWorkload(_FamilyWorkload):
    """Text embeddings or reranking: documents (query-document pairs) per second."""

    kind: Literal["embedding"]
    docs_per_s: float = Field(gt=0, description="documents (or pairs) per second at peak")
    input_tokens: int = Field(512, ge=1, description="tokens per document (pair)")
    max_batch_latency_s: float = Field(1.0, gt=0, description="time one batch may take")


class SpeechWorkload(_FamilyWorkload):
    """Speech recognition: concurrent real-time streams, or hours of audio a day."""

    kind: Literal["speech"]
    streams: float | None = Field(None, gt=0, description="concurrent real-time streams")
    audio_hours_per_day: float | None = Field(None, gt=0)
    utilisation: float = Field(1.0, gt=0, le=1, description="for audio_hours_per_day")
    max_rtf: float = Field(0.5, gt=0, le=1, description="processing s per audio s, per stream")
    beam: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _one_demand(self) -> SpeechWorkload:
        if (self.streams is None) == (self.audio_hours_per_day is None):
            raise ValueError("give exactly one of streams or audio_hours_per_day")
        return self


class WorldModelWorkload(_FamilyWorkload):
    """JEPA video world models: clips encoded per second."""

    kind: Literal["world_model"]
    clips_per_s: float = Field(gt=0)
    frames: int | None = Field(None, ge=1, description="frames per clip (default: the model's)")
    resolution: int | None = Field(None, ge=16, description="square side in pixels")
    max_latency_s: float = Field(1.0, gt=0, description="time one batch of clips may take")


class ImageGenerationWorkload(_FamilyWorkload):
    """Diffusion image generation: images per second (or per hour) at peak."""

    kind: Literal["image_generation"]
    images_per_s: float | None = Field(None, gt=0)
    images_per_hour: float | None = Field(None, gt=0)
    max_s_per_image: float = Field(10.0, gt=0, description="time one batch may take")
    resolution: int | None = Field(None, ge=64, description="square side (default: the model's)")
    steps: int | None = Field(None, ge=1, description="default: the model card's")
    guidance: bool | None = None

    @model_validator(mode="after")
    def _one_rate(self) -> ImageGenerationWorkload:
        if (self.images_per_s is None) == (self.images_per_hour is None):
            raise ValueError("give exactly one of images_per_s or images_per_hour")
        return self

    @property
    def rate(self) -> float:
        return self.images_per_s if self.images_per_s is not None else self.images_per_hour / 3600


class VideoGenerationWorkload(_FamilyWorkload):
    """Diffusion video generation: videos per hour at peak."""

    kind: Literal["video_generation"]
    videos_per_hour: float = Field(gt=0)
    max_latency_s: float = Field(600.0, gt=0, description="time one video may take")
    frames: int | None = Field(None, ge=1)
    steps: int | None = Field(None, ge=1)
    guidance: bool | None = None


class RobotPolicyWorkload(_FamilyWorkload):
    """Vision-language-action policies: robots driven at a control rate."""

    kind: Literal["robot_policy"]
    robots: float = Field(gt=0, description="robots running at once")
    control_hz: float = Field(50.0, gt=0)
    cameras: int = Field(1, ge=1)
    action_horizon: int | None = Field(None, ge=1, description="default: the model's")
    execute_steps: int | None = Field(
        None, ge=1, description="actions executed before re-planning (default: the horizon)"
    )
    flow_steps: int | None = Field(None, ge=1)


def _kind(v: Any) -> str:
    return (v.get("kind") or "llm") if isinstance(v, dict) else getattr(v, "kind", "llm")


# Each family is a `kind` with its own demand unit; a workload without `kind` is an LLM.
Workload = Annotated[
    Union[  # noqa: UP007
        Annotated[LLMWorkload, Tag("llm")],
        Annotated[EmbeddingWorkload, Tag("embedding")],
        Annotated[SpeechWorkload, Tag("speech")],
        Annotated[WorldModelWorkload, Tag("world_model")],
        Annotated[ImageGenerationWorkload, Tag("image_generation")],
        Annotated[VideoGenerationWorkload, Tag("video_generation")],
        Annotated[RobotPolicyWorkload, Tag("robot_policy")],
    ],
    Discriminator(_kind),
]


class Fleet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gpus: list[str] | None = None  # allowed GPU types (default: the whole catalogue)
    vendors: list[Literal["nvidia", "amd", "intel"]] | None = None
    single_type: bool = False
    max_types: int | None = Field(None, ge=1, description="at most this many GPU types")
    max_gpus_per_replica: int = Field(16, ge=1)
    available: dict[str, int] = {}  # GPUs obtainable per type

    @field_validator("available")
    @classmethod
    def _nonneg(cls, v: dict[str, int]) -> dict[str, int]:
        for k, n in v.items():
            if n < 0:
                raise ValueError(f"available[{k}] must be >= 0")
        return v


class Cost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    basis: Literal["purchase", "rental"] = "purchase"
    years: float = Field(3, gt=0, description="horizon: purchase is paid off over it")
    electricity_usd_per_kwh: float = Field(0.10, ge=0)
    pue: float = Field(1.3, ge=1)
    cost_of_capital: float = Field(0.08, ge=0, description="annual rate on the capex")
    hosting_usd_per_kw_month: float = Field(
        0.0,
        ge=0,
        description="colocation/facility cost per kW of IT load per month (0: not included)",
    )


class Budget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_usd: float | None = Field(None, gt=0, description="on the chosen basis, over the horizon")
    max_power_kw: float | None = Field(None, gt=0)


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "scenario"
    workloads: list[Workload] = Field(min_length=1)
    fleet: Fleet = Fleet()
    cost: Cost = Cost()
    budget: Budget = Budget()

    @model_validator(mode="after")
    def _unique_names(self) -> Scenario:
        names = [w.name for w in self.workloads]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(dup)}")
        return self


def _locate(node: yaml.Node | None, loc: tuple[Any, ...]) -> tuple[int | None, str]:
    """1-based line and dotted key of the YAML node at a pydantic error location. Location
    parts that are not in the file (the union tag 'llm') are skipped."""
    line = node.start_mark.line + 1 if node is not None else None
    keys: list[str] = []
    for key in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        if nxt is None:
            if isinstance(key, str) and key in (
                "llm",
                "embedding",
                "speech",
                "world_model",
                "image_generation",
                "video_generation",
            ):
                continue  # a discriminator tag, not a key of the file
            keys.append(str(key))  # a missing key: report it at its parent's line
            continue
        node = nxt
        keys.append(str(key))
        line = node.start_mark.line + 1
    return line, ".".join(keys)


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read and validate a scenario file. ``overrides`` applies dotted-key values first."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {p}: {e.strerror}") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        m = e.problem_mark
        where = f"{p}:{m.line + 1}" if m else str(p)
        raise ScenarioError(f"{where}: malformed YAML: {e.problem}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{p}: a scenario must be a mapping with at least 'workloads'")
    if overrides:
        data = apply_overrides(data, overrides, p)
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            line, key = _locate(node, err["loc"])
            where = f"{p}:{line}" if line else str(p)
            lines.append(f"{where}: {key}: {err['msg']}")
        raise ScenarioError("invalid scenario\n" + "\n".join(lines)) from None


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any], path: Path) -> dict[str, Any]:
    """Set dotted keys (``budget.max_usd``, ``workloads.chat.users``): a list element is
    addressed by its ``name`` or index."""
    import copy

    data = copy.deepcopy(data)
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        cur: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(cur, list):
                idx = next(
                    (
                        j
                        for j, it in enumerate(cur)
                        if isinstance(it, dict) and it.get("name") == part
                    ),
                    None,
                )
                if idx is None and part.isdigit() and int(part) < len(cur):
                    idx = int(part)
                if idx is None:
                    names = [it.get("name") for it in cur if isinstance(it, dict)]
                    raise ScenarioError(
                        f"{path}: --set {dotted}: no list item named '{part}' "
                        f"(have: {', '.join(map(str, names))})"
                    )
                if last:
                    cur[idx] = value
                else:
                    cur = cur[idx]
            elif isinstance(cur, dict):
                if last:
                    cur[part] = value
                else:
                    cur = cur.setdefault(part, {})
            else:
                raise ScenarioError(f"{path}: --set {dotted}: '{part}' is not inside a mapping")
    return data
