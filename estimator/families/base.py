"""What every non-LLM family shares: its workload options, its result, its memory box, one
TP-sharded pass through a transformer stack, and the one TP-only split check.

Each family's work is a sequence of stack passes (bidirectional encoders, ViTs) or decode
steps (Whisper's decoder); each pass is ``Machine.step`` over the bytes it streams (weights,
activations, cached keys and values) and the FLOPs it runs, with the TP collectives of its
layers. Batches are arrays, as for the LLMs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..bands import family_bands
from ..engines import runtime_overhead_bytes
from ..errors import EstimatorError, SplitError
from ..formats import weight_format
from ..hardware import Accelerator
from ..labels import Labelled
from ..memory_box import MemoryBox
from ..parallel import Parallel
from ..roofline import Machine, StepTimes
from ..stack import Stack

USABLE = 0.9  # serving frameworks keep ~10% of memory back (vLLM's default policy)
DEFAULT_INPUT_TOKENS = 1024  # the LLM default prompt; encoders cap it at what they read


class FamilyOptions(BaseModel):
    """A family workload's knobs; each family reads the ones it has and fills the rest from
    its preset's defaults (``None`` = the model's own value)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    batch: int = 1
    engine: str | None = None  # the family's serving engine (None: its default)
    input_tokens: int | None = None  # encoders: tokens per document (pair)
    kv: str = "bf16"
    audio_seconds: float = 30.0  # speech: audio per request
    beam: int = 1
    max_rtf: float = 0.5  # speech: seconds of processing per second of audio, per stream
    frames: int | None = None  # video / JEPA: frames per clip
    resolution: tuple[int, int] | None = None  # image / video / JEPA: width, height
    horizon: int = 0  # JEPA-AC planning horizon
    samples: int = 0  # JEPA-AC candidate action sequences
    steps: int | None = None  # diffusion denoising steps
    guidance: bool | None = None  # classifier-free guidance
    # diffusion: the denoiser's GEMMs accumulate in 16 bits (FP8 matmuls with fast
    # accumulation, TensorRT FP16), which GeForce cards run at twice their FP32-accumulate rate
    fast_accum: bool = False
    # diffusion: model CPU offload, each component on the GPU only while it runs
    offload: bool = False
    cameras: int = 1  # VLA
    action_horizon: int | None = None
    flow_steps: int | None = None
    control_hz: float = 50.0
    execute: int | None = None  # VLA: actions run before re-planning (default: the horizon)


@dataclass
class FamilyEstimate(Labelled):
    model: str
    family: str
    gpu: str
    parallel: dict
    weights_format: str
    compute_precision: str
    fits: bool
    memory_gb: MemoryBox
    max_batch: int
    bottleneck: str
    metrics: dict
    notes: list[str] = field(default_factory=list)
    labels: dict = field(default_factory=dict)  # display names for tables
    # p10-p50-p90 of its times and rates from the family's cross-validated residuals
    bands: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = super().to_dict()
        d.update(self.metrics)  # family metrics are top-level keys, as the CLI documents
        return d


def result(
    model: Any,
    family: str,
    mc: Machine,
    weights: str,
    memory: tuple[MemoryBox, Any, Any],
    bottleneck: str,
    metrics: dict,
) -> FamilyEstimate:
    """A family estimate from a pass's machine, memory box and metrics."""
    box, fits, max_b = memory
    return FamilyEstimate(
        model.name,
        family,
        mc.gpu.name,
        mc.par.model_dump(),
        weights,
        mc.precision,
        bool(fits),
        box,
        int(max_b),
        bottleneck,
        metrics,
        [mc.precision_note] if mc.precision_note else [],
        bands=family_bands(family, metrics),
    )


def memory(mc: Machine, weights_b: float, act_b, kv_b, batch) -> tuple[MemoryBox, Any, Any]:
    """(per-GPU box at the largest batch asked, fits per batch, largest batch that fits)."""
    over = runtime_overhead_bytes(mc.gpus)
    cap = mc.gpu.memory_bytes
    total = weights_b + act_b + kv_b + over
    per_item = (np.asarray(act_b, float) + np.asarray(kv_b, float)) / np.maximum(batch, 1)
    max_b = np.floor((USABLE * cap - weights_b - over) / np.maximum(per_item, 1e-9))
    box = MemoryBox(
        weights=weights_b / 1e9,
        kv_cache=float(np.max(kv_b)) / 1e9,
        activations=float(np.max(act_b)) / 1e9,
        overhead=over / 1e9,
        total=float(np.max(total)) / 1e9,
        capacity=cap / 1e9,
        usable=USABLE * cap / 1e9,
    )
    return box, total <= USABLE * cap, max_b


def tp_machine(
    name: str, stacks: list[Stack], gpu: Accelerator, par: Parallel, weights: str
) -> Machine:
    """These families run TP only (no PP/EP): TP must divide every stack's attention heads
    (and its KV heads, or be a multiple of them)."""
    if par.pp > 1 or par.ep > 1 or par.attention_dp:
        raise SplitError(f"{name}: only tensor parallelism is modelled for this family")
    for s in stacks:
        if s.heads % par.tp or s.kvh % par.tp and par.tp % s.kvh:
            raise SplitError(
                f"TP={par.tp} does not divide the {s.heads} attention heads of "
                f"{name} (rule: TP must divide the number of attention heads)"
            )
    return Machine(gpu, par, weight_format(weights).compute)


def stack_pass(
    mc: Machine,
    s: Stack,
    wbytes: float,
    seqs,
    q_tokens,
    kv_tokens,
    memory_tokens=0,
    kv_bytes=0.0,
    extra_flops=0.0,
    extra_params: int = 0,
    attn_flops=None,
    host_seqs=None,
) -> StepTimes:
    """One pass of ``seqs`` sequences of ``q_tokens`` through a stack, attending to
    ``kv_tokens`` (and to ``memory_tokens`` by cross-attention). ``extra_params``: weights
    run as matmuls beside the stack (patch embeddings, projectors). ``kv_bytes``: the
    cached keys and values the attention reads (its own roofline). ``attn_flops``: a
    sequence's attention FLOPs where they are not full attention (windowed, per crop);
    ``host_seqs``: sequences the host schedules (default ``seqs``; 0 for images)."""
    seqs = np.asarray(seqs, float)
    tokens = seqs * q_tokens
    weights = (s.params() + extra_params) * wbytes / mc.tp
    stage_bytes = weights + tokens * s.act_bytes_per_token(mc.tp)
    mm = 2.0 * (s.matmul_params() + extra_params) * tokens / mc.gpus + extra_flops / mc.gpus
    if attn_flops is None:
        attn_flops = s.attn_flops(q_tokens, kv_tokens) + s.cross_flops(q_tokens, memory_tokens)
    at = seqs * attn_flops
    comm = mc.tp_comm(tokens, s.hidden, s.layers, per_layer=3 if s.cross_attention else 2)
    host = seqs if host_seqs is None else host_seqs
    return mc.step(stage_bytes, mm, at / mc.gpus, comm, s.layers, host, 1, attn_bytes=kv_bytes)


def config_value(cfg: dict[str, Any], key: str, where: str, default: Any = None) -> Any:
    """A required config value; a missing one names the key."""
    v = cfg.get(key, default)
    if v is None:
        raise EstimatorError(f"{where}: config is missing required key '{key}'")
    return v
