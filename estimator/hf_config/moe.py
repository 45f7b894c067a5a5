"""Mixture-of-experts parsers: Mixtral-style, Qwen-MoE, Llama 4, gpt-oss, DeepSeek-style
(MLA or GQA with shared experts) and DBRX."""

from __future__ import annotations

from ..model import Attention, DenseMlp, LanguageModel, Layer, Moe
from .keys import Cfg, base, gqa, window_layers


def mixtral(c: Cfg, name: str) -> LanguageModel:
    """Mixtral and the models that reuse its layout: Phi-3.5-MoE (biased attention),
    Granite MoE (optional shared experts), MiniMax-M2 (QK norm, biased router)."""
    n = c.req("num_hidden_layers")
    layers = [Layer(window=w, mlp="moe") for w in window_layers(c, n, lambda i: True)]
    shared = c.get("shared_intermediate_size", 0)
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=c.req("intermediate_size"),
        shared_intermediate_size=shared,
        router_bias=bool(c.get("use_routing_bias")),
    )
    bias = bool(c.get("attention_bias", c.get("model_type") == "phimoe"))
    attn = gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=bool(c.get("use_qk_norm")))
    return base(c, name, layers, attention=attn, moe=moe)


def dbrx(c: Cfg, name: str) -> LanguageModel:
    """DBRX: MPT-style names with nested ``attn_config`` and ``ffn_config``; every layer MoE."""
    attn_cfg, ffn = c.get("attn_config") or {}, c.get("ffn_config") or {}
    flat = {
        "model_type": "dbrx",
        "hidden_size": c.req("d_model"),
        "num_attention_heads": c.req("n_heads"),
        "num_hidden_layers": c.req("n_layers"),
        "num_key_value_heads": attn_cfg.get("kv_n_heads"),
        "max_position_embeddings": c.get("max_seq_len"),
        "vocab_size": c.req("vocab_size"),
        "tie_word_embeddings": c.get("tie_word_embeddings", False),
        "num_local_experts": ffn.get("moe_num_experts"),
        "num_experts_per_tok": ffn.get("moe_top_k"),
        "intermediate_size": ffn.get("ffn_hidden_size"),
    }
    return mixtral(Cfg(flat, c.where), name)


def qwen_mlps(c: Cfg, n: int) -> tuple[list[str], Moe | None, DenseMlp | None]:
    """The MLP of each of ``n`` layers in Qwen's MoE configs (Qwen2/3-MoE, Qwen3-Next,
    Qwen3.5): every ``decoder_sparse_step``-th layer not in ``mlp_only_layers`` is MoE with a
    gated shared expert, the rest dense; a config without ``num_experts`` is dense
    throughout (Qwen3.5-9B/27B)."""
    experts = c.get("num_experts")
    step = c.get("decoder_sparse_step", 1)
    dense_only = set(c.get("mlp_only_layers") or [])
    kinds = [
        "moe" if experts and i not in dense_only and (i + 1) % step == 0 else "dense"
        for i in range(n)
    ]
    moe = None
    if experts:
        shared = c.get("shared_expert_intermediate_size", 0)
        moe = Moe(
            num_experts=experts,
            top_k=c.req("num_experts_per_tok"),
            expert_intermediate_size=c.req("moe_intermediate_size"),
            shared_intermediate_size=shared,
            shared_expert_gate=bool(shared),
        )
    dense = DenseMlp(intermediate_size=c.req("intermediate_size")) if "dense" in kinds else None
    return kinds, moe, dense


def qwen_moe(c: Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    c.req("num_experts")  # an MoE config must name its experts (qwen_mlps reads none as dense)
    kinds, moe, dense = qwen_mlps(c, c.req("num_hidden_layers"))
    layers = [Layer(mlp=k) for k in kinds]
    attn = gqa(
        c, qkv_bias=mt == "qwen2_moe" or bool(c.get("attention_bias")), qk_norm=mt == "qwen3_moe"
    )
    return base(c, name, layers, attention=attn, moe=moe, dense_mlp=dense)


def llama4(c: Cfg, name: str) -> LanguageModel:
    n = c.req("num_hidden_layers")
    step = c.get("interleave_moe_layer_step", 1)
    moe_layers = c.get("moe_layers")
    moe_set = (
        set(moe_layers) if moe_layers is not None else {i for i in range(n) if (i + 1) % step == 0}
    )
    # Layers that use RoPE use chunked local attention (chunk = attention_chunk_size); every
    # `no_rope_layer_interval`-th layer is a global NoPE layer (Llama 4 iRoPE).
    nope = c.get("no_rope_layers")
    chunk = c.get("attention_chunk_size")
    if nope and len(nope) == n:
        rope = [bool(x) for x in nope]
    else:
        interval = c.get("no_rope_layer_interval", 4)
        rope = [(i + 1) % interval != 0 for i in range(n)]
    layers = [
        Layer(window=chunk if rope[i] and chunk else None, mlp="moe" if i in moe_set else "dense")
        for i in range(n)
    ]
    ei = c.req("intermediate_size")
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=ei,
        shared_intermediate_size=ei,
    )  # one shared expert
    dense = DenseMlp(intermediate_size=c.req("intermediate_size_mlp")) if len(moe_set) < n else None
    return base(
        c,
        name,
        layers,
        attention=gqa(c, qkv_bias=bool(c.get("attention_bias"))),
        moe=moe,
        dense_mlp=dense,
    )


def gpt_oss(c: Cfg, name: str) -> LanguageModel:
    n = c.req("num_hidden_layers")
    layers = [Layer(window=w, mlp="moe") for w in window_layers(c, n, lambda i: i % 2 == 0)]
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.get("num_experts_per_tok") or c.req("experts_per_token"),
        expert_intermediate_size=c.req("intermediate_size"),
        expert_bias=True,
        router_bias=True,
    )
    attn = gqa(
        c,
        qkv_bias=bool(c.get("attention_bias", True)),
        o_bias=bool(c.get("attention_bias", True)),
        sinks=True,
    )
    return base(c, name, layers, attention=attn, moe=moe)


def deepseek_like(c: Cfg, name: str) -> LanguageModel:
    """DeepSeek-V2/V3, Kimi-K2 (MLA + MoE) and GLM-4.5 (GQA + MoE): the first
    ``first_k_dense_replace`` layers are dense, the rest MoE with shared experts."""
    n = c.req("num_hidden_layers")
    k_dense = c.get("first_k_dense_replace", 0)
    freq = c.get("moe_layer_freq", 1)
    layers = [Layer(mlp="moe" if i >= k_dense and i % freq == 0 else "dense") for i in range(n)]
    mi = c.req("moe_intermediate_size")
    moe = Moe(
        num_experts=c.req("n_routed_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=mi,
        shared_intermediate_size=c.get("n_shared_experts", 0) * mi,
        router_bias=c.get("topk_method") == "noaux_tc" or c.get("model_type") == "glm4_moe",
    )
    if c.get("kv_lora_rank"):
        nope, rope = c.req("qk_nope_head_dim"), c.req("qk_rope_head_dim")
        attn = Attention(
            kind="mla",
            num_heads=c.req("num_attention_heads"),
            num_kv_heads=c.req("num_attention_heads"),
            head_dim=nope + rope,
            v_head_dim=c.req("v_head_dim"),
            q_lora_rank=c.get("q_lora_rank"),
            kv_lora_rank=c.req("kv_lora_rank"),
            qk_nope_head_dim=nope,
            qk_rope_head_dim=rope,
        )
    else:
        attn = gqa(c, qkv_bias=bool(c.get("attention_bias")), qk_norm=bool(c.get("use_qk_norm")))
    return base(
        c,
        name,
        layers,
        attention=attn,
        moe=moe,
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )
