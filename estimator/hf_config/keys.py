"""Checked access to a config.json dict, and the pieces every parser shares (GQA attention,
per-layer windows, the model skeleton)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import EstimatorError
from ..model import Attention, LanguageModel, Layer

Config = dict[str, Any]

# Structural sizes: whole numbers of at least 1 (a layer count, a width), at most these.
POSITIVE = {
    "hidden_size": 10**6,
    "intermediate_size": 10**7,
    "moe_intermediate_size": 10**7,
    "num_hidden_layers": 10**4,
    "num_attention_heads": 10**4,
    "num_key_value_heads": 10**4,
    "head_dim": 10**5,
    "vocab_size": 10**8,
    "num_experts_per_tok": 10**4,
    "n_routed_experts": 10**5,
    "num_local_experts": 10**5,
    "num_experts": 10**5,
    "kv_lora_rank": 10**6,
    "qk_nope_head_dim": 10**5,
    "qk_rope_head_dim": 10**5,
    "v_head_dim": 10**5,
    "max_position_embeddings": 10**9,
    "linear_num_value_heads": 10**4,
    "linear_num_key_heads": 10**4,
    "linear_value_head_dim": 10**5,
    "linear_key_head_dim": 10**5,
    "linear_conv_kernel_dim": 64,
    "full_attention_interval": 10**4,
}
# Sizes where 0 means "none" (Qwen3-Coder-480B: no shared expert).
NON_NEGATIVE = {"shared_expert_intermediate_size": 10**7, "shared_intermediate_size": 10**7}


class Cfg:
    """Key access that names the key and the model in its error: a missing required key,
    or a structural size that is not a whole number in range (a string, a bool, zero)."""

    def __init__(self, d: Config, where: str):
        self.d, self.where = d, where

    def _checked(self, key: str, v: Any) -> Any:
        low = 1 if key in POSITIVE else 0
        top = POSITIVE.get(key) or NON_NEGATIVE.get(key)
        if top is None:
            return v
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= top:
            raise EstimatorError(
                f"{self.where}: config key '{key}' must be a whole number from {low} to "
                f"{top:,}, not {v!r}"
            )
        return v

    def req(self, key: str) -> Any:
        if self.d.get(key) is None:
            raise EstimatorError(f"{self.where}: config is missing required key '{key}'")
        return self._checked(key, self.d[key])

    def get(self, key: str, default: Any = None) -> Any:
        v = self.d.get(key)
        return default if v is None else self._checked(key, v)


def window_layers(c: Cfg, n: int, sliding: Callable[[int], bool] | None) -> list[int | None]:
    """Per-layer attention window from ``layer_types`` (newer configs) or a pattern rule."""
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if types and len(types) == n:
        return [window if "sliding" in t else None for t in types]
    if sliding is None or not window:
        return [None] * n
    return [window if sliding(i) else None for i in range(n)]


def gqa(c: Cfg, *, qkv_bias=False, o_bias=False, qk_norm=False, sinks=False) -> Attention:
    h, nh = c.req("hidden_size"), c.req("num_attention_heads")
    return Attention(
        num_heads=nh,
        num_kv_heads=c.get("num_key_value_heads", nh),
        head_dim=c.get("head_dim") or c.get("attention_head_dim") or h // nh,
        qkv_bias=qkv_bias,
        o_bias=o_bias,
        qk_norm=qk_norm,
        sinks=sinks,
    )


def base(c: Cfg, name: str, layers: list[Layer], **kw) -> LanguageModel:
    return LanguageModel(
        name=name,
        model_type=c.get("model_type", ""),
        hidden_size=c.req("hidden_size"),
        vocab_size=c.req("vocab_size"),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        layers=layers,
        # LLaMA 1 and BLOOM-era configs name the trained length max_sequence_length/seq_length
        max_context=c.get("max_position_embeddings")
        or c.get("max_sequence_length")
        or c.get("seq_length"),
        **kw,
    )
