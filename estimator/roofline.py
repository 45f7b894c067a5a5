"""The roofline every model family runs on: one GPU group, its peaks, its efficiency factors.

A step's time is ``max(bytes / (bandwidth·eff), FLOPs / (peak·eff)) + collectives +
per-layer overhead`` per pipeline stage, times the stage passes, plus the host's per-step and
per-sequence work. Language models (:mod:`estimator.llm`) and every other family
(:mod:`estimator.families`) build their steps on this one implementation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import comm
from .efficiency import Efficiency, efficiency_for, efficiency_key
from .errors import SplitError
from .formats import compute_precision
from .hardware import Accelerator
from .parallel import Parallel

ACT_BYTES = 2.0  # activations travel in 16-bit between layers and over the links


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

    def bottleneck(self) -> Any:
        stack = np.stack(np.broadcast_arrays(self.memory, self.compute, self.comm))
        names = np.array(["memory", "compute", "interconnect"])
        return names[np.argmax(stack, axis=0)]


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
    ):
        self.gpu, self.par = gpu, par
        self.tp, self.pp, self.gpus = par.tp, par.pp, par.tp * par.pp
        if self.gpus > comm.domain(gpu) and not gpu.scale_out_gb_s:
            raise SplitError(
                f"{self.gpus} GPUs per replica exceed the {comm.domain(gpu)}-GPU domain of "
                f"{gpu.name}, which has no scale-out network in its preset"
            )
        self.precision, self.precision_note = compute_precision(compute, gpu.dense_tflops)
        self.attn_precision, _ = compute_precision("bf16", gpu.dense_tflops)
        self._set(efficiency or efficiency_for(efficiency_key(gpu), self.precision, engine))

    def _set(self, eff: Efficiency) -> None:
        self.eff = eff
        self.peak = self.gpu.peak_flops(self.precision) * eff.compute
        self.peak_attn = self.gpu.peak_flops(self.attn_precision) * eff.compute
        self.bw = self.gpu.bandwidth_bytes_s * eff.memory

    def with_efficiency(self, eff: Efficiency) -> Machine:
        m = copy.copy(self)
        m._set(eff)
        return m

    def tp_comm(self, tokens, hidden: int, layers: float, per_layer: int = 2):
        """Seconds of TP all-reduces: ``per_layer`` per layer of ``tokens × hidden`` values."""
        if self.tp == 1:
            return np.zeros_like(np.asarray(tokens, float))
        msg = np.asarray(tokens, float) * hidden * ACT_BYTES
        return layers * per_layer * comm.allreduce(self.gpu, self.tp, msg, self.eff)

    def pp_comm(self, tokens, hidden: int):
        if self.pp == 1:
            return 0.0
        msg = np.asarray(tokens, float) * hidden * ACT_BYTES
        return comm.p2p(self.gpu, self.gpus, msg, self.eff)

    def step(
        self, stage_bytes, mm_flops, attn_flops, comm_s, layers: float, seqs, passes
    ) -> StepTimes:
        """One stage's roofline plus collectives and per-layer overhead, times the stage
        passes, plus the host's per-step and per-sequence work."""
        t_mem = stage_bytes / self.bw
        t_cmp = mm_flops / self.peak + attn_flops / self.peak_attn
        over = layers * self.eff.layer_overhead_us * 1e-6
        stage = np.maximum(t_mem, t_cmp) + comm_s + over
        host = self.eff.step_overhead_ms * 1e-3 + seqs * self.eff.seq_overhead_us * 1e-6
        return StepTimes(
            memory=t_mem * passes,
            compute=t_cmp * passes,
            comm=comm_s * passes,
            overhead=over * passes + host,
            total=stage * passes + host,
            bytes_per_gpu=stage_bytes,
            flops_per_gpu=mm_flops + attn_flops,
        )
