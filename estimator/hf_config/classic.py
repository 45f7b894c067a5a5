"""Pre-Llama decoders that papers and benchmarks still run: OPT, BLOOM, GPT-J, GPT-NeoX /
Pythia, GPT-2, StarCoder (GPT-BigCode), StarCoder2 and Phi-2. All use a plain two-matrix
MLP (ReLU/GELU, 4x hidden unless stated) and LayerNorm; they differ in biases, KV heads and
whether the LM head is tied. Learned position tables (OPT, GPT-2, StarCoder: at most 0.3% of
the weights) are not counted."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import DenseMlp, LanguageModel, Layer
from .keys import Cfg, base, gqa, window_layers


@dataclass(frozen=True)
class Classic:
    attn_bias: bool  # q/k/v/o projections carry biases
    tie: bool  # the config class's tie_word_embeddings default
    mqa_key: str | None = None  # a boolean key that, when true, means one shared KV head


# Source of each default: the transformers config/model classes (OPTConfig, BloomConfig,
# GPTJConfig, GPTNeoXConfig, GPT2Config, GPTBigCodeConfig, Starcoder2Config, PhiConfig).
CLASSIC: dict[str, Classic] = {
    "opt": Classic(attn_bias=True, tie=True),
    "bloom": Classic(attn_bias=True, tie=True),
    "gptj": Classic(attn_bias=False, tie=False),
    "gpt_neox": Classic(attn_bias=True, tie=False),
    "gpt2": Classic(attn_bias=True, tie=True),
    "gpt_bigcode": Classic(attn_bias=True, tie=True, mqa_key="multi_query"),
    "starcoder2": Classic(attn_bias=True, tie=True),
    "phi": Classic(attn_bias=True, tie=False),
}

# The older key names these config classes accept (their ``attribute_map``s).
KEY_ALIASES = {
    "n_embd": "hidden_size",
    "n_embed": "hidden_size",
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_positions": "max_position_embeddings",
    "n_inner": "intermediate_size",
    "ffn_dim": "intermediate_size",
}


def classic(c: Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    spec = CLASSIC[mt]
    h, n = c.req("hidden_size"), c.req("num_hidden_layers")
    d = dict(c.d)
    if spec.mqa_key and c.get(spec.mqa_key, True):
        d["num_key_value_heads"] = 1
    c2 = Cfg(d, c.where)
    bias = spec.attn_bias and bool(c.get("use_bias", True))
    windows = window_layers(c2, n, lambda i: True)  # StarCoder2: sliding window on every layer
    m = base(
        c2,
        name,
        [Layer(window=w) for w in windows],
        attention=gqa(c2, qkv_bias=bias, o_bias=bias),
        dense_mlp=DenseMlp(
            intermediate_size=c2.get("intermediate_size") or 4 * h, gated=False, bias=True
        ),
    )
    m.tie_word_embeddings = bool(c.get("tie_word_embeddings", spec.tie))
    return m
