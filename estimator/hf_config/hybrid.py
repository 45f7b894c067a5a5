"""Hybrid parsers: attention interleaved with state-space (Mamba) or linear-attention mixers."""

from __future__ import annotations

import math

from ..errors import EstimatorError
from ..model import DenseMlp, LanguageModel, Layer, LinearAttention, Mamba, Moe
from .keys import Cfg, base, gqa
from .moe import qwen_mlps


def nemotron_h(c: Cfg, name: str) -> LanguageModel:
    """Nemotron-H: `hybrid_override_pattern` names each block: M Mamba-2, * attention,
    - MLP (squared-ReLU, two matrices)."""
    pattern = c.req("hybrid_override_pattern")
    kinds = {
        "M": Layer(mixer="mamba", mlp="none"),
        "*": Layer(mixer="attention", mlp="none"),
        "-": Layer(mixer="none", mlp="dense"),
    }
    bad = sorted(set(pattern) - set(kinds))
    if bad:
        raise EstimatorError(f"{name}: unsupported block kinds {bad} in hybrid_override_pattern")
    layers = [kinds[ch] for ch in pattern]
    nh, hd = c.req("mamba_num_heads"), c.req("mamba_head_dim")
    mamba = Mamba(
        version=2,
        d_inner=nh * hd,
        d_state=c.req("ssm_state_size"),
        d_conv=c.get("conv_kernel", 4),
        n_groups=c.get("n_groups", 1),
        num_heads=nh,
        conv_bias=bool(c.get("use_conv_bias", True)),
        proj_bias=bool(c.get("use_bias", False)),
    )
    return base(
        c,
        name,
        layers,
        attention=gqa(c, qkv_bias=bool(c.get("attention_bias"))),
        mamba=mamba,
        dense_mlp=DenseMlp(
            intermediate_size=c.req("intermediate_size"), gated=False, bias=bool(c.get("mlp_bias"))
        ),
    )


def jamba(c: Cfg, name: str) -> LanguageModel:
    n, h = c.req("num_hidden_layers"), c.req("hidden_size")
    ap, ao = c.get("attn_layer_period", 8), c.get("attn_layer_offset", 4)
    ep, eo = c.get("expert_layer_period", 2), c.get("expert_layer_offset", 1)
    layers = [
        Layer(
            mixer="attention" if i % ap == ao else "mamba", mlp="moe" if i % ep == eo else "dense"
        )
        for i in range(n)
    ]
    dt_rank = c.get("mamba_dt_rank", "auto")
    dt_rank = math.ceil(h / 16) if dt_rank == "auto" else int(dt_rank)
    mamba = Mamba(
        version=1,
        d_inner=c.get("mamba_expand", 2) * h,
        d_state=c.get("mamba_d_state", 16),
        d_conv=c.get("mamba_d_conv", 4),
        dt_rank=dt_rank,
        conv_bias=bool(c.get("mamba_conv_bias", True)),
        proj_bias=bool(c.get("mamba_proj_bias", False)),
        inner_norms=True,
    )
    moe = Moe(
        num_experts=c.req("num_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=c.req("intermediate_size"),
    )
    return base(
        c,
        name,
        layers,
        attention=gqa(c),
        mamba=mamba,
        moe=moe,
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )


def minimax(c: Cfg, name: str) -> LanguageModel:
    """MiniMax-Text-01 / M1: ``attn_type_list`` marks each layer 0 = lightning (linear)
    attention, 1 = softmax attention (GQA); every layer's MLP is a top-k MoE."""
    n = c.req("num_hidden_layers")
    types = c.get("attn_type_list") or [1] * n
    if len(types) != n or set(types) - {0, 1}:
        raise EstimatorError(f"{name}: attn_type_list must give 0 or 1 for each of {n} layers")
    layers = [Layer(mixer="attention" if t == 1 else "linear", mlp="moe") for t in types]
    attn = gqa(c)
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=c.req("intermediate_size"),
        shared_intermediate_size=c.get("shared_intermediate_size", 0),
    )
    linear = LinearAttention(num_heads=attn.num_heads, head_dim=attn.head_dim)
    return base(c, name, layers, attention=attn, moe=moe, linear=linear)


def qwen_next(c: Cfg, name: str) -> LanguageModel:
    """Qwen3-Next and Qwen3.5 (``qwen3_next``, ``qwen3_5_text``, ``qwen3_5_moe_text``): Gated
    DeltaNet linear attention in three of every four layers (``layer_types``, else every
    ``full_attention_interval``-th layer is full attention), gated GQA attention with q/k
    norms in the rest; MoE with a gated shared expert where the config names experts, else
    a dense SwiGLU MLP (Qwen3.5-9B/27B)."""
    n = c.req("num_hidden_layers")
    types = c.get("layer_types")
    if types is not None:
        if len(types) != n or set(types) - {"linear_attention", "full_attention"}:
            raise EstimatorError(
                f"{name}: layer_types must give 'linear_attention' or 'full_attention' for "
                f"each of {n} layers"
            )
        full = [t == "full_attention" for t in types]
    else:
        every = c.get("full_attention_interval", 4)
        full = [(i + 1) % every == 0 for i in range(n)]
    kinds, moe, dense = qwen_mlps(c, n)
    layers = [
        Layer(mixer="attention" if f else "linear", mlp=k) for f, k in zip(full, kinds, strict=True)
    ]
    attn = gqa(c, qkv_bias=bool(c.get("attention_bias")), qk_norm=True)
    attn = attn.model_copy(update={"output_gate": bool(c.get("attn_output_gate", True))})
    # the state dtype the checkpoint declares (Qwen3.5: float32), which vLLM adopts as its
    # mamba_ssm_cache_dtype; without one, vLLM's 'auto' holds it in the model dtype
    ssm = c.get("mamba_ssm_dtype")
    linear = LinearAttention(
        kind="gated_delta",
        num_heads=c.req("linear_num_value_heads"),
        head_dim=c.req("linear_value_head_dim"),
        key_heads=c.req("linear_num_key_heads"),
        key_head_dim=c.req("linear_key_head_dim"),
        conv_kernel=c.get("linear_conv_kernel_dim", 4),
        state_bytes=4.0 if ssm in ("float32", "fp32") else 2.0,
    )
    return base(
        c,
        name,
        layers,
        attention=attn,
        moe=moe,
        dense_mlp=dense,
        linear=linear,
        mtp_layers=c.get("mtp_num_hidden_layers", 0),
    )
