"""The roofline every model family runs on: one GPU group, its peaks, its efficiency factors.

A kernel takes ``max(bytes / (bandwidth·eff), FLOPs / (peak·eff))``. A pass is three kinds
of kernel run one after another, each its own roofline: the dense GEMMs (weights and
activations), the routed experts' grouped GEMMs (the experts the tokens touch; their own
tokens per expert) and attention (KV-cache and state reads). Add collectives and per-layer
overhead per pipeline stage, times the stage passes, plus the host's per-step and
per-sequence work. Language models (:mod:`estimator.llm`) and every other family
(:mod:`estimator.families`) build their steps on this one implementation.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from . import comm
from .efficiency import Efficiency, board_ratio, efficiency_for, efficiency_key
from .errors import SplitError
from .formats import compute_precision
from .hardware import Accelerator
from .parallel import Parallel

ACT_BYTES = 2.0  # activations travel in 16-bit between layers and over the links
_EFF_FIELDS = tuple(f.name for f in fields(Efficiency))


@dataclass
class StepTimes:
    """Seconds for one forward step of the whole replica (all pipeline stages)."""

    memory: Any
    compute: Any
    comm: Any
    overhead: Any
    total: Any
    bytes_per_gpu: Any  # at their streaming cost (int4 weights: over Efficiency.int4_stream)
    flops_per_gpu: Any
    # of memory and compute: the attention kernels' own (KV-cache and state reads, attention
    # FLOPs), which run after the GEMMs, not beside them
    attn_memory: Any = 0.0
    attn_compute: Any = 0.0
    # of memory and compute: the routed experts' grouped GEMMs (their own tokens per expert)
    expert_memory: Any = 0.0
    expert_compute: Any = 0.0

    def bottleneck(self) -> Any:
        stack = np.stack(np.broadcast_arrays(self.memory, self.compute, self.comm))
        names = np.array(["memory", "compute", "interconnect"])
        return names[np.argmax(stack, axis=0)]


def slower(a: StepTimes, b: StepTimes) -> StepTimes:
    """Elementwise, the step of the two that takes longer (e.g. the slowest pipeline stage)."""
    pick = np.asarray(b.total) > np.asarray(a.total)
    return StepTimes(
        **{f: np.where(pick, getattr(b, f), getattr(a, f)) for f in StepTimes.__dataclass_fields__}
    )


class Machine:
    """One replica's GPUs: peak FLOPS in the precision the math really runs in, achieved
    bandwidth, and the links its collectives cross."""

    def __init__(
        self,
        gpu: Accelerator,
        par: Parallel,
        compute: str,
        efficiency: Efficiency | None = None,
        engine: str | None = None,
        attention: str = "bf16",
        fast_accum: bool = False,
        dense: bool = False,
    ):
        """``fast_accum``: the GEMMs accumulate in 16 bits (Accelerator.fast_accum_tflops);
        ``dense``: the model has no experts (its request time: efficiency_for)."""
        self.gpu, self.par = gpu, par
        self.fast_accum = fast_accum
        self.tp, self.pp, self.gpus = par.tp, par.pp, par.tp * par.pp
        if self.gpus > comm.domain(gpu) and not gpu.scale_out_gb_s:
            raise SplitError(
                f"{self.gpus} GPUs per replica exceed the {comm.domain(gpu)}-GPU domain of "
                f"{gpu.name}, which has no scale-out network in its preset"
            )
        self.precision, self.precision_note = compute_precision(compute, gpu.dense_tflops)
        # the lm_head runs in 16-bit whatever the weights' format; attention too, unless the
        # engine runs its prompt attention in FP8 (``attention``: see
        # estimator.engines.attention_precision)
        self.head_precision, _ = compute_precision("bf16", gpu.dense_tflops)
        self.attn_precision, _ = compute_precision(attention, gpu.dense_tflops)
        self._set(efficiency or efficiency_for(efficiency_key(gpu), self.precision, engine, dense))

    def _set(self, eff: Efficiency) -> None:
        self.eff = eff
        share = eff.compute * board_ratio(self.gpu)  # the family's, at this board's clocks
        self.peak = self.gpu.peak_flops(self.precision, self.fast_accum) * share
        self.peak_head = self.gpu.peak_flops(self.head_precision) * share
        self.peak_attn = self.gpu.peak_flops(self.attn_precision) * share
        self.bw = self.gpu.bandwidth_bytes_s * eff.memory
        self.__dict__.pop("fabric", None)  # its links scale with these factors

    @functools.cached_property
    def fabric(self) -> comm.Fabric:
        """The links this replica's collectives cross (found when first needed: most
        machines a search builds only check memory)."""
        return comm.Fabric.of(self.gpu, self.eff)

    def with_efficiency(self, eff: Efficiency) -> Machine:
        m = copy.copy(self)
        m._set(eff)
        return m

    @staticmethod
    def stack(machines: list[Machine]) -> Machine:
        """One machine for the same split on several GPU types (every one's collectives in
        the same regime: :func:`~estimator.comm.regime`): its peaks, bandwidth, efficiency
        factors and links are columns, a row per machine, so a step over an array of batches
        gives a row of step times per machine, each the number that machine gives alone."""
        first = machines[0]
        if any((m.tp, m.pp) != (first.tp, first.pp) for m in machines):
            raise ValueError("stacked machines share one split")
        out = copy.copy(first)

        def col(values) -> np.ndarray:
            return np.array(values, float)[:, None]

        for name in ("peak", "peak_head", "peak_attn", "bw"):
            setattr(out, name, col([getattr(m, name) for m in machines]))
        out.eff = Efficiency(**{f: col([getattr(m.eff, f) for m in machines]) for f in _EFF_FIELDS})
        out.fabric = comm.Fabric.stack([m.fabric for m in machines])
        out.gpu = None  # many GPUs: what needs one reads the rows above
        return out

    def tp_comm(self, tokens, hidden: int, layers: float, per_layer: int = 2):
        """Seconds of TP all-reduces: ``per_layer`` per layer of ``tokens × hidden`` values."""
        if self.tp == 1:
            return np.zeros_like(np.asarray(tokens, float))
        msg = np.asarray(tokens, float) * hidden * ACT_BYTES
        return layers * per_layer * comm.allreduce(self.fabric, self.tp, msg)

    def pp_comm(self, tokens, hidden: int):
        if self.pp == 1:
            return 0.0
        msg = np.asarray(tokens, float) * hidden * ACT_BYTES
        return comm.p2p(self.fabric, self.gpus, msg)

    def step(
        self,
        stage_bytes,
        mm_flops,
        attn_flops,
        comm_s,
        layers: float,
        seqs,
        passes,
        attn_bytes=0.0,
        expert_bytes=0.0,
        expert_flops=0.0,
        head_flops=0.0,
    ) -> StepTimes:
        """One stage's rooflines plus collectives and per-layer overhead, times the stage
        passes, plus the host's per-step and per-sequence work. The pass is three kernel groups
        one after another, each its own roofline: the GEMMs (``stage_bytes``: weights and
        activations; ``mm_flops``), the routed experts' GEMMs (``expert_bytes``,
        ``expert_flops``) and attention (``attn_bytes``: KV cache and state; ``attn_flops``).
        ``head_flops``: the lm_head's, at the 16-bit peak (quantisation recipes leave it
        16-bit, so its GEMM runs in 16-bit whatever the layers' format).
        Kernels of a layer run in turn, so a memory-bound attention or expert GEMM does not
        hide behind compute-bound dense GEMMs (language models, leave-one-source-out over
        898 rows: throughput 13.8 -> 13.0%)."""
        t_mm = mm_flops / self.peak + head_flops / self.peak_head
        t_at = attn_flops / self.peak_attn
        t_mem = stage_bytes / self.bw
        over = layers * self.eff.layer_overhead_us * 1e-6
        a_mem = attn_bytes / self.bw
        core = np.maximum(t_mem, t_mm) + np.maximum(a_mem, t_at)
        e_mem = e_cmp = 0.0
        if np.ndim(expert_flops) or expert_flops:  # a MoE model's routed experts
            e_mem, e_cmp = expert_bytes / self.bw, expert_flops / self.peak
            core = core + np.maximum(e_mem, e_cmp)
        stage = core + comm_s + over
        host = self.eff.step_overhead_ms * 1e-3 + seqs * self.eff.seq_overhead_us * 1e-6
        # one stage pass (most steps): the stage's times are the step's
        times = (lambda x: x) if np.ndim(passes) == 0 and passes == 1 else (lambda x: x * passes)
        return StepTimes(
            memory=times(t_mem + a_mem + e_mem),
            compute=times(t_mm + t_at + e_cmp),
            comm=times(comm_s),
            overhead=times(over) + host,
            total=times(stage) + host,
            bytes_per_gpu=stage_bytes + attn_bytes + expert_bytes,
            flops_per_gpu=mm_flops + attn_flops + expert_flops + head_flops,
            attn_memory=times(a_mem),
            attn_compute=times(t_at),
            expert_memory=times(e_mem),
            expert_compute=times(e_cmp),
        )
