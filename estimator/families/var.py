"""VAR (visual autoregressive modelling, next-scale prediction): a GPT-style transformer
predicts an image's token maps coarse to fine, one scale per forward pass, each scale
attending to every earlier one through the KV cache; a multi-scale VQ-VAE decodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats import weight_format
from ..hardware import Accelerator
from ..parallel import Parallel
from ..roofline import ACT_BYTES, Machine
from ..stack import Stack
from .base import FamilyEstimate, FamilyOptions, memory, result, stack_pass, tp_machine
from .diffusion_parts import component_time, vae_decoder
from .registry import Family, FamilyPreset, register


@dataclass
class VarModel:
    name: str
    display_name: str
    stack: Stack
    patch_nums: list[int]
    classes: int
    vae_vocab: int
    z_channels: int
    vae_ch: int
    resolution: int
    family: str = "var"

    @property
    def tokens(self) -> int:
        """Token count of one image: the sum of every scale's map (680 for 256 px)."""
        return sum(p * p for p in self.patch_nums)

    @property
    def params(self) -> int:
        d = self.stack.hidden
        extra = (self.classes + 1) * d + self.tokens * d + len(self.patch_nums) * d
        extra += self.z_channels * d + d  # word embedding of the VQ features
        extra += d * 2 * d + 2 * d + d * self.vae_vocab + self.vae_vocab  # head adaLN + head
        return self.stack.params() + extra

    def vae(self) -> Any:
        """The VQ-VAE decoder, approximated by an AutoencoderKL-style decoder with VAR's
        channel plan (ch 160, multipliers 1,1,2,2,4: x16 upsampling)."""
        c = self.vae_ch
        cfg = {
            "block_out_channels": [c, c, 2 * c, 2 * c, 4 * c],
            "layers_per_block": 2,
            "latent_channels": self.z_channels,
            "out_channels": 3,
        }
        return vae_decoder(cfg, self.resolution, self.resolution)

    def generate_times(self, mc: Machine, batch: int, wbytes: float, guidance: bool = True):
        """(transformer seconds, VAE seconds, bottleneck) for ``batch`` images: one pass per
        scale over that scale's tokens (x2 with classifier-free guidance), attending to the
        cache; the bottleneck is the roofline component (memory, compute, interconnect) with
        the most seconds summed over every pass."""
        s = self.stack
        seqs = batch * (2 if guidance else 1)
        t = 0.0
        parts = np.zeros(3)  # memory, compute, interconnect seconds over all passes
        cached = 0
        for p in self.patch_nums:
            q = p * p
            cached += q
            kv_read = seqs * s.kv_bytes_per_token(2.0) * cached / mc.tp
            st = stack_pass(mc, s, wbytes, seqs, q, cached, kv_bytes=kv_read)
            t += float(st.total)
            parts += [float(st.memory), float(st.compute), float(st.comm)]
        v = self.vae()
        st = component_time(mc, v, 2.0, batch)
        parts += [float(st.memory), float(st.compute), float(st.comm)]
        bottleneck = ("memory", "compute", "interconnect")[int(np.argmax(parts))]
        return t, float(st.total), bottleneck


def build_var(name: str, display: str, c: dict[str, Any]) -> VarModel:
    d, depth = c["embed_dim"], c["depth"]
    s = Stack(
        layers=depth,
        hidden=d,
        heads=c["num_heads"],
        ffn=int(d * c.get("mlp_ratio", 4)),
        modulation=0 if c.get("shared_aln") else 6,
        norm_params=0,
    )
    v = c.get("vae", {})
    return VarModel(
        name,
        display,
        s,
        list(c["patch_nums"]),
        c.get("num_classes", 1000),
        v.get("vocab_size", 4096),
        v.get("z_channels", 32),
        v.get("ch", 160),
        c.get("resolution", 256),
    )


def estimate_var(
    model, gpu: Accelerator, par: Parallel, weights: str, batch: int, guidance: bool = True
) -> FamilyEstimate:
    """``batch`` images by next-scale prediction (10 passes for 256 px) and VQ-VAE decode."""
    mc = tp_machine(model.name, [model.stack], gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    t, v, bottleneck = model.generate_times(mc, batch, wb, guidance)
    s = model.stack
    seqs = batch * (2 if guidance else 1)
    kv = seqs * s.kv_bytes_per_token(2.0) * model.tokens / mc.tp
    act = seqs * model.patch_nums[-1] ** 2 * ACT_BYTES * (4 * s.hidden + s.ffn / mc.tp)
    mem = memory(mc, model.params * wb / mc.tp, act, kv, batch)
    total = t + v
    metrics = {
        "s_per_image": total,
        "s_per_batch": total,
        "images_per_s": batch / total,
        "transformer_s": t,
        "vae_s": v,
        "tokens_per_image": model.tokens,
        "batch": batch,
        "guidance": guidance,
    }
    return result(model, "var", mc, weights, mem, bottleneck, metrics)


def _estimate(
    model: VarModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    guidance = True if o.guidance is None else o.guidance
    return estimate_var(model, gpu, par, weights, o.batch, guidance)


def _build(p: FamilyPreset) -> VarModel:
    return build_var(p.name, p.display_name, p.config)


register(Family("var", _build, _estimate))
