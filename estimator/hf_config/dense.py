"""Dense decoder parsers: Llama and its many relatives, Gemma, Falcon, Cohere."""

from __future__ import annotations

from ..model import DenseMlp, LanguageModel, Layer
from .keys import Cfg, base, gqa, window_layers

# Llama-shaped model types that differ only in attention details. qkv_only: the bias
# (Qwen2 always, GLM when attention_bias) sits on q/k/v but not on the output projection.
_QKV_BIAS_ALWAYS = {"qwen2"}
_QKV_ONLY_BIAS = {"qwen2", "glm", "glm4"}
_QK_NORM = {"qwen3", "olmo2"}  # OLMo 2 normalises the full q/k projections: counted per head
_BIAS_DEFAULT = {"glm"}  # transformers GlmConfig: attention_bias defaults to True


def llama_like(c: Cfg, name: str) -> LanguageModel:
    """Llama, Mistral, Qwen2/3, Phi-3, Granite, OLMo 2, GLM-4, Yi, Falcon 3, SmolLM2..."""
    mt = c.get("model_type")
    bias = bool(c.get("attention_bias", mt in _BIAS_DEFAULT))
    attn = gqa(
        c,
        qkv_bias=bias or mt in _QKV_BIAS_ALWAYS,
        o_bias=bias and mt not in _QKV_ONLY_BIAS,
        qk_norm=mt in _QK_NORM,
    )
    n = c.req("num_hidden_layers")
    if mt == "qwen2" or mt == "qwen3":
        use_sw = c.get("use_sliding_window", False)
        max_sw = c.get("max_window_layers", n)
        windows = [c.get("sliding_window") if use_sw and i >= max_sw else None for i in range(n)]
    else:  # Mistral v0.1 / Phi-3 mini: a global sliding window on every layer; v0.3 sets null
        windows = window_layers(c, n, lambda i: True)
    layers = [Layer(window=w) for w in windows]
    return base(
        c,
        name,
        layers,
        attention=attn,
        dense_mlp=DenseMlp(
            intermediate_size=c.req("intermediate_size"), bias=bool(c.get("mlp_bias", False))
        ),
    )


def gemma(c: Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    n = c.req("num_hidden_layers")
    if mt == "gemma":
        rule = None  # Gemma 1: global attention everywhere
    elif mt == "gemma2":
        rule = lambda i: i % 2 == 0  # noqa: E731  (Gemma 2: even layers are local)
    else:  # Gemma 3: every `sliding_window_pattern`-th layer is global, the rest local
        p = c.get("sliding_window_pattern", 6)
        rule = lambda i: (i + 1) % p != 0  # noqa: E731
    layers = [Layer(window=w) for w in window_layers(c, n, rule)]
    m = base(
        c,
        name,
        layers,
        attention=gqa(c, qk_norm=mt.startswith("gemma3")),
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )
    m.tie_word_embeddings = bool(c.get("tie_word_embeddings", True))  # Gemma ties by default
    return m


def cohere(c: Cfg, name: str) -> LanguageModel:
    """Command R / R+ (parallel attention and MLP off one LayerNorm) and Command R7B
    (cohere2: every `sliding_window_pattern`-th layer global, the rest local)."""
    n = c.req("num_hidden_layers")
    if c.get("model_type") == "cohere2":
        p = c.get("sliding_window_pattern", 4)
        windows = window_layers(c, n, lambda i: (i + 1) % p != 0)
    else:
        windows = [None] * n
    bias = bool(c.get("attention_bias", False))
    m = base(
        c,
        name,
        [Layer(window=w) for w in windows],
        attention=gqa(c, qkv_bias=bias, o_bias=bias, qk_norm=bool(c.get("use_qk_norm"))),
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )
    m.tie_word_embeddings = bool(c.get("tie_word_embeddings", True))  # CohereConfig default
    return m


def falcon(c: Cfg, name: str) -> LanguageModel:
    """Falcon 7B/40B/180B: a plain GELU MLP (4h unless ffn_hidden_size), multi-query attention
    (7B) or grouped KV heads under the 'new decoder architecture' (40B, 180B)."""
    nh = c.req("num_attention_heads")
    mt = c.get("model_type")
    new_arch = bool(c.get("new_decoder_architecture", mt == "RefinedWeb"))
    if new_arch:
        kv = c.get("num_kv_heads") or nh
    else:
        kv = 1 if c.get("multi_query", True) else nh
    d = dict(c.d, num_key_value_heads=kv)
    c2 = Cfg(d, c.where)
    bias = bool(c.get("bias", False))
    h, n = c.req("hidden_size"), c.req("num_hidden_layers")
    m = base(
        c2,
        name,
        [Layer() for _ in range(n)],
        attention=gqa(c2, qkv_bias=bias, o_bias=bias),
        dense_mlp=DenseMlp(
            intermediate_size=c.get("ffn_hidden_size") or 4 * h, gated=False, bias=bias
        ),
    )
    m.tie_word_embeddings = bool(c.get("tie_word_embeddings", True))  # FalconConfig default
    if m.max_context is None:
        m.max_context = 2048  # FalconConfig default (the released 7B/40B/180B trained at 2k)
    return m
