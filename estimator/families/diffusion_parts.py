"""The components of a diffusion pipeline, each as the work of one pass over one image:
text encoders, UNet and DiT-family denoisers, VAE decoders.

Every component's parameters and FLOPs are derived from its diffusers config. Transformer
parts (CLIP, T5, DiT/MMDiT/Flux/CogVideoX blocks) are :class:`Stack` s; the convolutional
parts (SDXL's UNet, the VAE decoders) are walked block by block. Convolutions are
compute-bound and move their activations through HBM, so their bytes count input and output
feature maps as well as weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EstimatorError
from ..roofline import Machine, StepTimes
from ..stack import Stack

ACT = 2.0  # 16-bit activations


@dataclass
class Cost:
    """Work of one pass of one component over one image (batch 1)."""

    params: int = 0
    flops: float = 0.0  # matmul + conv FLOPs
    attn_flops: float = 0.0
    act_bytes: float = 0.0  # feature maps written and read back
    layers: int = 0  # for per-layer overhead
    tp_tokens: float = 0.0  # tokens whose hidden states cross TP all-reduces
    hidden: int = 0

    def __add__(self, o: Cost) -> Cost:
        return Cost(
            self.params + o.params,
            self.flops + o.flops,
            self.attn_flops + o.attn_flops,
            self.act_bytes + o.act_bytes,
            self.layers + o.layers,
            self.tp_tokens + o.tp_tokens,
            max(self.hidden, o.hidden),
        )

    def times(self, frames: int) -> Cost:
        """A per-frame cost over ``frames`` frames (the weights once)."""
        if frames == 1:
            return self
        return Cost(
            self.params,
            self.flops * frames,
            self.attn_flops * frames,
            self.act_bytes * frames,
            self.layers,
            self.tp_tokens * frames,
            self.hidden,
        )


def latent_frame_count(frames: int, temporal_compression: int) -> int:
    """The latent frames a causal video VAE encodes ``frames`` into: the first alone, then
    one per ``temporal_compression`` (CogVideoX: 49 -> 13 at 4)."""
    return (frames - 1) // temporal_compression + 1


def _stack_cost(
    s: Stack,
    tokens: float,
    kv_tokens: float | None = None,
    memory: float = 0,
    extra_params: int = 0,
    attn_tokens: float | None = None,
) -> Cost:
    kv = tokens if kv_tokens is None else kv_tokens
    q = tokens if attn_tokens is None else attn_tokens
    return Cost(
        params=s.params() + extra_params,
        flops=2.0 * s.matmul_params() * tokens,
        attn_flops=float(s.attn_flops(q, kv) + s.cross_flops(tokens, memory)),
        act_bytes=tokens * s.act_bytes_per_token(1),
        layers=s.layers,
        tp_tokens=tokens * s.layers,
        hidden=s.hidden,
    )


# ---- text encoders -----------------------------------------------------------------------
def text_encoder(cls: str, c: dict[str, Any], tokens: int) -> Cost:
    if cls.startswith("CLIPText"):
        d = c["hidden_size"]
        s = Stack(
            layers=c["num_hidden_layers"],
            hidden=d,
            heads=c["num_attention_heads"],
            ffn=c["intermediate_size"],
            causal=True,
        )
        extra = (c["vocab_size"] + c.get("max_position_embeddings", 77)) * d + 2 * d
        if "Projection" in cls:
            extra += d * c.get("projection_dim", d)
        return _stack_cost(s, c.get("max_position_embeddings", 77), extra_params=extra)
    if cls.startswith("T5"):
        d, heads = c["d_model"], c["num_heads"]
        s = Stack(
            layers=c["num_layers"],
            hidden=d,
            heads=heads,
            head_dim=c["d_kv"],
            ffn=c["d_ff"],
            gated=c.get("is_gated_act", True),
            qkv_bias=False,
            o_bias=False,
            ffn_bias=False,
            norm_params=1,
        )
        extra = c["vocab_size"] * d + d + c.get("relative_attention_num_buckets", 32) * heads
        return _stack_cost(s, tokens, extra_params=extra)
    raise EstimatorError(f"unsupported text encoder class {cls}")


# ---- convolutional parts -------------------------------------------------------------------
def _conv(cin: int, cout: int, h: int, w: int, k: int = 3, depth: int = 1) -> Cost:
    p = cin * cout * k * k * depth + cout
    return Cost(
        params=p,
        flops=2.0 * cin * cout * k * k * depth * h * w,
        act_bytes=ACT * (cin + cout) * h * w,
        layers=1,
    )


def _resnet(cin: int, cout: int, h: int, w: int, temb: int = 0, depth: int = 1) -> Cost:
    c = _conv(cin, cout, h, w, depth=depth) + _conv(cout, cout, h, w, depth=depth)
    c.params += 2 * (cin + cout)  # two group norms
    c.act_bytes += ACT * 2 * (cin + cout) * h * w  # norm + activation read/write
    if temb:
        c.params += temb * cout + cout
    if cin != cout:
        c = c + _conv(cin, cout, h, w, k=1)
    return c


def _spatial_attention(ch: int, h: int, w: int) -> Cost:
    """The VAE mid-block's single-head self-attention over every pixel."""
    n = h * w
    return Cost(
        params=4 * ch * ch + 4 * ch + 2 * ch,
        flops=2.0 * 4 * ch * ch * n,
        attn_flops=4.0 * ch * n * n,
        act_bytes=ACT * 6 * ch * n,
        layers=1,
    )


def vae_decoder(
    c: dict[str, Any], height: int, width: int, latent_frames: int = 1, temporal: bool = False
) -> Cost:
    """AutoencoderKL decoder (and, with ``temporal``, CogVideoX's 3D variant: causal 3x3x3
    convolutions in its resnets, approximated as 3x the 2D work per frame, and 2D upsampling
    convolutions per frame). The 3D decoder also upsamples time: its first
    log2(``temporal_compression_ratio``) up blocks double the frames after their resnets
    (odd counts keep the first: 13 latent frames -> 25 -> 49, diffusers
    CogVideoXUpsample3D with ``compress_time``), so the full-resolution blocks, most of
    the work, run over every output frame."""
    ch = list(c["block_out_channels"])
    f = 2 ** (len(ch) - 1)  # the decoder upsamples the latent by this factor
    h, w = height // f, width // f
    if h * f != height or w * f != width:
        raise EstimatorError(f"resolution {width}x{height} is not a multiple of {f}")
    depth = 3 if temporal else 1
    frames = max(latent_frames, 1)
    # up blocks that double time (CogVideoX: log2 of the temporal compression)
    time_ups = int(math.log2(c.get("temporal_compression_ratio", 4))) if temporal else 0
    top = ch[-1]
    cost = _conv(c["latent_channels"], top, h, w, depth=depth)
    cost = cost + _resnet(top, top, h, w, depth=depth) + _resnet(top, top, h, w, depth=depth)
    if c.get("mid_block_add_attention", True) and not temporal:
        cost = cost + _spatial_attention(top, h, w)
    cost = cost.times(frames)
    cin = top
    for i, cout in enumerate(reversed(ch)):
        block = Cost()
        for _ in range(c.get("layers_per_block", 2) + 1):
            block = block + _resnet(cin, cout, h, w, depth=depth)
            cin = cout
        cost = cost + block.times(frames)
        if i < len(ch) - 1:
            h, w = h * 2, w * 2
            if i < time_ups and frames > 1:
                frames = 1 + 2 * (frames - 1)
            cost = cost + _conv(cout, cout, h, w).times(frames)
    cost = cost + _conv(cin, c.get("out_channels", 3), h, w, depth=depth).times(frames)
    cost.params += 2 * cin
    return cost


def unet(c: dict[str, Any], h: int, w: int, text_tokens: int) -> Cost:
    """UNet2DConditionModel (SDXL): resnets with time embedding, spatial transformers with
    self- and cross-attention and GEGLU feed-forward, at each resolution of the U."""
    ch = list(c["block_out_channels"])
    lpb = c.get("layers_per_block", 2)
    tl = c.get("transformer_layers_per_block", 1)
    tl = tl if isinstance(tl, list) else [tl] * len(ch)
    hd = c.get("attention_head_dim", 8)
    hd = hd if isinstance(hd, list) else [hd] * len(ch)
    xdim = c["cross_attention_dim"]
    temb = 4 * ch[0]
    down_attn = ["CrossAttn" in t for t in c["down_block_types"]]
    up_attn = ["CrossAttn" in t for t in c["up_block_types"]]

    def transformer(chn: int, n_blocks: int, heads: int, hh: int, ww: int) -> Cost:
        s = Stack(
            layers=n_blocks,
            hidden=chn,
            heads=heads,
            ffn=4 * chn,
            gated=True,
            qkv_bias=False,
            cross_attention=True,
            cross_kv_dim=xdim,
            ffn_bias=True,
        )
        n = hh * ww
        cost = _stack_cost(s, n, memory=text_tokens)
        io = 2 * (chn * chn + chn) + 2 * chn  # proj_in / proj_out (linear) and group norm
        cost.params += io
        cost.flops += 2.0 * 2 * chn * chn * n
        return cost

    cost = _conv(c["in_channels"], ch[0], h, w)
    cost.params += ch[0] * temb + temb + temb * temb + temb  # time embedding MLP
    if c.get("addition_embed_type") == "text_time":
        pin = c["projection_class_embeddings_input_dim"]
        cost.params += pin * temb + temb + temb * temb + temb
    skips = [ch[0]]
    cin, hh, ww = ch[0], h, w
    for i, cout in enumerate(ch):
        for _ in range(lpb):
            cost = cost + _resnet(cin, cout, hh, ww, temb)
            if down_attn[i]:
                cost = cost + transformer(cout, tl[i], cout // hd[i], hh, ww)
            cin = cout
            skips.append(cout)
        if i < len(ch) - 1:
            cost = cost + _conv(cout, cout, hh // 2, ww // 2)
            hh, ww = hh // 2, ww // 2
            skips.append(cout)
    mid = ch[-1]
    cost = cost + _resnet(mid, mid, hh, ww, temb)
    cost = cost + transformer(mid, tl[-1], mid // hd[-1], hh, ww)
    cost = cost + _resnet(mid, mid, hh, ww, temb)
    rch, rtl, rhd = list(reversed(ch)), list(reversed(tl)), list(reversed(hd))
    for i, cout in enumerate(rch):
        for _ in range(lpb + 1):
            cost = cost + _resnet(cin + skips.pop(), cout, hh, ww, temb)
            if up_attn[i]:
                cost = cost + transformer(cout, rtl[i], cout // rhd[i], hh, ww)
            cin = cout
        if i < len(rch) - 1:
            hh, ww = hh * 2, ww * 2
            cost = cost + _conv(cout, cout, hh, ww)
    cost = cost + _conv(cin, c["out_channels"], hh, ww)
    cost.params += 2 * cin
    return cost


# ---- transformer denoisers -----------------------------------------------------------------
def dit_denoiser(
    cls: str, c: dict[str, Any], h: int, w: int, text_tokens: int, frames: int = 1
) -> Cost:
    """DiT, PixArt, SD3 (MMDiT), Flux and CogVideoX transformers over latent patches
    (``h`` x ``w`` latent pixels, patch ``p``) plus, where joint, the text tokens."""
    heads, hd = c["num_attention_heads"], c["attention_head_dim"]
    d = heads * hd
    p = c.get("patch_size", 1) or 1
    lat_frames = 1
    if cls.startswith("CogVideoX"):
        lat_frames = latent_frame_count(frames, c.get("temporal_compression_ratio", 4))
    n_img = lat_frames * (h // p) * (w // p)
    in_ch = c["in_channels"]
    embed = in_ch * p * p * d + d + 256 * d + d + d * d + d  # patchify + timestep MLP
    if cls.startswith("Flux"):
        return _flux(c, d, heads, n_img, text_tokens, embed)
    if cls.startswith("SD3"):
        return _mmdit(c, d, heads, n_img, text_tokens, embed)
    if cls.startswith("CogVideoX"):
        s = Stack(layers=c["num_layers"], hidden=d, heads=heads, ffn=4 * d)
        n = n_img + text_tokens
        te = c.get("time_embed_dim", 512)
        extra = (
            embed + c["num_layers"] * 2 * (te * 6 * d + 6 * d) + c.get("text_embed_dim", 4096) * d
        )
        return _stack_cost(s, n, extra_params=extra)
    if cls.startswith("PixArt"):
        s = Stack(
            layers=c["num_layers"],
            hidden=d,
            heads=heads,
            ffn=4 * d,
            cross_attention=True,
            cross_kv_dim=d,
            norm_params=0,
        )
        cap = c.get("caption_channels", 4096)
        extra = embed + c["num_layers"] * 6 * d + d * 6 * d + 6 * d + cap * d + d + d * d + d
        extra += 2 * d + d * p * p * c.get("out_channels", in_ch)
        return _stack_cost(s, n_img, memory=text_tokens, extra_params=extra)
    # DiT-XL/2: class-conditional, adaLN-zero (6 vectors) per block
    s = Stack(layers=c["num_layers"], hidden=d, heads=heads, ffn=4 * d, modulation=6, norm_params=0)
    n_cls = (c.get("num_embeds_ada_norm") or 1000) + 1
    extra = embed + n_cls * d + d * 2 * d + 2 * d + d * p * p * c.get("out_channels", in_ch) + d
    return _stack_cost(s, n_img, extra_params=extra)


def _joint_stream(layers: int, d: int, heads: int) -> Stack:
    return Stack(layers=layers, hidden=d, heads=heads, ffn=4 * d, modulation=6, norm_params=0)


def _mmdit(c, d, heads, n_img, n_txt, embed) -> Cost:
    """SD3: every block has an image and a text stream (own weights) attending jointly."""
    L = c["num_layers"]
    img, txt = _joint_stream(L, d, heads), _joint_stream(L, d, heads)
    n = n_img + n_txt
    cost = _stack_cost(img, n_img, kv_tokens=n, attn_tokens=n_img)
    cost = cost + _stack_cost(txt, n_txt, kv_tokens=n, attn_tokens=n_txt)
    jd = c.get("joint_attention_dim", 4096)
    pd = c.get("pooled_projection_dim", 2048)
    cost.params += embed + jd * d + d + pd * d + d + d * d + d
    return cost


def _flux(c, d, heads, n_img, n_txt, embed) -> Cost:
    """Flux: ``num_layers`` double-stream blocks (as MMDiT) then ``num_single_layers``
    single-stream blocks over the joint sequence (fused QKV+MLP in, attention+MLP out,
    3 modulation vectors)."""
    n = n_img + n_txt
    dbl = _mmdit(
        {
            **c,
            "joint_attention_dim": c.get("joint_attention_dim", 4096),
            "pooled_projection_dim": c.get("pooled_projection_dim", 768),
        },
        d,
        heads,
        n_img,
        n_txt,
        embed,
    )
    ls = c["num_single_layers"]
    per = d * 7 * d + 7 * d + 5 * d * d + d + d * 3 * d + 3 * d  # linear1, linear2, modulation
    single = Cost(
        params=ls * per,
        flops=2.0 * ls * (7 * d * d + 5 * d * d) * n,
        attn_flops=ls * 4.0 * d * n * n,
        act_bytes=ls * n * ACT * 24 * d,
        layers=ls,
        tp_tokens=n * ls,
        hidden=d,
    )
    cost = dbl + single
    if c.get("guidance_embeds"):
        cost.params += 256 * d + d + d * d + d
    return cost


def component_time(mc: Machine, cost, wbytes: float, items) -> StepTimes:
    """One pass of a diffusion pipeline component over ``items`` images (or prompts)."""
    items = np.asarray(items, float)
    stage_bytes = cost.params * wbytes + items * cost.act_bytes
    comm = 0.0
    return mc.step(
        stage_bytes, items * cost.flops, items * cost.attn_flops, comm, cost.layers, items, passes=1
    )
