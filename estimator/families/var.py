"""VAR (visual autoregressive modelling, next-scale prediction): a GPT-style transformer
predicts an image's token maps coarse to fine, one scale per forward pass, each scale
attending to every earlier one through the KV cache; a multi-scale VQ-VAE decodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..roofline import Machine
from ..stack import Stack
from .diffusion import vae_decoder


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

    def generate_seconds(self, mc: Machine, batch: int, wbytes: float, guidance: bool = True):
        """(transformer seconds, VAE seconds) for ``batch`` images: one pass per scale over
        that scale's tokens (x2 with classifier-free guidance), attending to the cache."""
        t, vae_t, _ = self.generate_times(mc, batch, wbytes, guidance)
        return t, vae_t

    def generate_times(self, mc: Machine, batch: int, wbytes: float, guidance: bool = True):
        """As :meth:`generate_seconds`, plus the bottleneck of the whole generation: the
        roofline component (memory, compute, interconnect) with the most seconds summed over
        every pass."""
        s = self.stack
        seqs = batch * (2 if guidance else 1)
        t = 0.0
        parts = np.zeros(3)  # memory, compute, interconnect seconds over all passes
        cached = 0
        for p in self.patch_nums:
            q = p * p
            cached += q
            tokens = seqs * q
            kv_read = seqs * s.kv_bytes_per_token(2.0) * cached / mc.tp
            stage = s.params() * wbytes / mc.tp + tokens * s.act_bytes_per_token(mc.tp) + kv_read
            mm = 2.0 * s.matmul_params() * tokens / mc.gpus
            at = seqs * float(s.attn_flops(q, cached)) / mc.gpus
            comm = mc.tp_comm(tokens, s.hidden, s.layers)
            st = mc.step(stage, mm, at, comm, s.layers, seqs, 1)
            t += float(st.total)
            parts += [float(st.memory), float(st.compute), float(st.comm)]
        v = self.vae()
        st = mc.step(
            v.params * 2.0 + batch * v.act_bytes,
            batch * v.flops,
            batch * v.attn_flops,
            0.0,
            v.layers,
            batch,
            1,
        )
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


def images_per_s(model: VarModel, mc: Machine, batch, wbytes: float, guidance: bool = True):
    t, v = model.generate_seconds(mc, int(batch), wbytes, guidance)
    return float(np.asarray(batch) / (t + v)), t, v
