"""Vision-language-action policies (pi0, SmolVLA): a VLM prefix over the cameras' patch
tokens and the instruction, then a flow-matching action expert that denoises a chunk of
``horizon`` actions over ``flow_steps`` steps, attending to the prefix's KV cache.

Robots: each robot needs a new action chunk every ``execute / control_hz`` seconds (it runs
``execute`` of the chunk's actions at the control rate before re-planning); a replica serves
the largest batch of robots whose chunk latency fits that period."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..hardware import Accelerator
from ..parallel import Parallel
from ..roofline import ACT_BYTES, Machine
from ..stack import Stack
from .base import FamilyEstimate, FamilyOptions, memory, result, stack_pass, tp_machine
from .registry import Family, FamilyPreset, register


@dataclass
class VlaModel:
    name: str
    display_name: str
    vision: Stack
    tokens_per_image: int
    patches_per_image: int
    vision_extra: int
    prefix: Stack
    vocab: int
    expert: Stack
    expert_extra: int
    text_tokens: int
    horizon: int
    flow_steps: int
    family: str = "vla"

    @property
    def params(self) -> int:
        return (
            self.vision.params()
            + self.vision_extra
            + self.prefix.params()
            + self.vocab * self.prefix.hidden
            + self.expert.params()
            + self.expert_extra
        )

    def chunk_seconds(
        self,
        mc: Machine,
        robots: int,
        cameras: int,
        horizon: int | None = None,
        flow_steps: int | None = None,
    ) -> dict[str, float]:
        """Seconds to produce one action chunk for ``robots`` robots at once."""
        h = horizon or self.horizon
        k = flow_steps or self.flow_steps

        n = self.patches_per_image
        vis = _seconds(mc, self.vision, robots * cameras, n, n, extra_params=self.vision_extra)
        prefix_len = cameras * self.tokens_per_image + self.text_tokens
        pre = _seconds(mc, self.prefix, robots, prefix_len, prefix_len)
        kv = robots * self.prefix.kv_bytes_per_token(2.0) * prefix_len / mc.tp
        step = _seconds(
            mc,
            self.expert,
            robots,
            h + 1,
            prefix_len + h + 1,
            kv_bytes=kv,
            extra_params=self.expert_extra,
        )
        return {
            "vision_s": vis,
            "prefix_s": pre,
            "action_expert_s": k * step,
            "latency_s": vis + pre + k * step,
        }


def _seconds(mc: Machine, s: Stack, seqs, q, kv, **extra) -> float:
    """One 16-bit pass of a VLA stack (the policies ship and run in bf16)."""
    return float(stack_pass(mc, s, 2.0, seqs, q, kv, **extra).total)


def _gemma(c: dict[str, Any]) -> Stack:
    return Stack(
        layers=c["depth"],
        hidden=c["width"],
        heads=c["num_heads"],
        kv_heads=c.get("num_kv_heads"),
        head_dim=c.get("head_dim"),
        ffn=c["mlp_dim"],
        gated=True,
        qkv_bias=False,
        o_bias=False,
        ffn_bias=False,
        norm_params=1,
    )


def build_vla(name: str, display: str, c: dict[str, Any]) -> VlaModel:
    if "vlm" in c:  # openpi pi0: PaliGemma (SigLIP So400m + Gemma 2B) and a Gemma-300M expert
        v = c["vision"]
        vis = Stack(layers=v["depth"], hidden=v["width"], heads=v["num_heads"], ffn=v["mlp_dim"])
        n = (v["image_resolution"] // v["patch_size"]) ** 2
        w = c["vlm"]["width"]
        vextra = 3 * v["patch_size"] ** 2 * v["width"] + v["width"] + n * v["width"]
        vextra += 2 * v["width"] + v["width"] * w + w  # post-norm and projector to the LM
        exp = _gemma(c["action_expert"])
        a, ew = c.get("action_dim", 32), exp.hidden
        eextra = a * ew + ew + 2 * (ew * ew + ew) + ew * ew + ew + ew * a + a  # in, time MLP, out
        return VlaModel(
            name,
            display,
            vis,
            n,
            n,
            vextra,
            _gemma(c["vlm"]),
            c["vlm"]["vocab_size"],
            exp,
            eextra,
            c.get("max_token_len", 48),
            c.get("action_horizon", 50),
            c.get("num_flow_steps", 10),
        )
    # lerobot SmolVLA: SmolVLM2-500M truncated to num_vlm_layers, an expert 0.75x as wide
    b = c["backbone_reference"]
    vis = Stack(
        layers=b["vision_num_hidden_layers"],
        hidden=b["vision_hidden_size"],
        heads=b["vision_num_attention_heads"],
        ffn=b["vision_intermediate_size"],
    )
    patches = (b["vision_image_size"] // b["vision_patch_size"]) ** 2
    vd, td = b["vision_hidden_size"], b["text_hidden_size"]
    sf = b.get("scale_factor", 4)
    vextra = 3 * b["vision_patch_size"] ** 2 * vd + vd + patches * vd + 2 * vd
    vextra += vd * sf * sf * td  # pixel-shuffle connector to the text width
    prefix = Stack(
        layers=c["num_vlm_layers"],
        hidden=td,
        heads=b["text_num_attention_heads"],
        kv_heads=b["text_num_key_value_heads"],
        head_dim=b["text_head_dim"],
        ffn=b["text_intermediate_size"],
        gated=True,
        qkv_bias=False,
        o_bias=False,
        ffn_bias=False,
        norm_params=1,
    )
    e = c["expert_derived"]
    exp = Stack(
        layers=e["num_hidden_layers"],
        hidden=e["hidden_size"],
        heads=b["text_num_attention_heads"],
        kv_heads=b["text_num_key_value_heads"],
        head_dim=b["text_head_dim"],
        ffn=e["intermediate_size"],
        gated=True,
        qkv_bias=False,
        o_bias=False,
        ffn_bias=False,
        norm_params=1,
    )
    a, ew = c.get("max_action_dim", 32), e["hidden_size"]
    eextra = 2 * (a * ew + ew) + 2 * (ew * ew + ew) + c.get("max_state_dim", 32) * td + td
    return VlaModel(
        name,
        display,
        vis,
        b.get("image_seq_len", 64),
        patches,
        vextra,
        prefix,
        b["vocab_size"],
        exp,
        eextra,
        c.get("tokenizer_max_length", 48),
        c.get("chunk_size", 50),
        c.get("num_steps", 10),
    )


def estimate_vla(
    model,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    cameras: int,
    horizon: int | None = None,
    flow_steps: int | None = None,
    control_hz: float = 50.0,
    execute: int | None = None,
) -> FamilyEstimate:
    """One action chunk for ``batch`` robots; ``robots_per_replica``: the most robots whose
    chunk arrives within the period a robot takes to execute ``execute`` actions."""
    mc = tp_machine(model.name, [model.vision, model.prefix, model.expert], gpu, par, weights)
    h = horizon or model.horizon
    ex = execute or h
    period = ex / control_hz
    t = model.chunk_seconds(mc, batch, cameras, h, flow_steps)
    prefix_len = cameras * model.tokens_per_image + model.text_tokens
    kv = batch * model.prefix.kv_bytes_per_token(2.0) * prefix_len / mc.tp
    act = batch * cameras * model.patches_per_image * ACT_BYTES * 4 * model.vision.hidden
    mem = memory(mc, model.params * 2.0 / mc.tp, act, kv, batch)
    robots = 0
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        if model.chunk_seconds(mc, b, cameras, h, flow_steps)["latency_s"] > period:
            break
        robots = b
    metrics = {
        "latency_ms": t["latency_s"] * 1e3,
        "chunks_per_s": batch / t["latency_s"],  # action chunks the replica completes
        "vision_ms": t["vision_s"] * 1e3,
        "prefix_ms": t["prefix_s"] * 1e3,
        "action_expert_ms": t["action_expert_s"] * 1e3,
        "robots_per_replica": robots,
        "chunk_period_s": period,
        "cameras": cameras,
        "action_horizon": h,
        "control_hz": control_hz,
        "batch": batch,
        "s_per_batch": t["latency_s"],
    }
    return result(model, "vla", mc, weights, mem, "memory", metrics)


def _estimate(
    model: VlaModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    return estimate_vla(
        model,
        gpu,
        par,
        weights,
        o.batch,
        o.cameras,
        o.action_horizon,
        o.flow_steps,
        o.control_hz,
        o.execute,
    )


def _build(p: FamilyPreset) -> VlaModel:
    return build_vla(p.name, p.display_name, p.config)


register(Family("vla", _build, _estimate))
