"""Read a Hugging Face ``config.json`` (a dict, or a local file) into a :class:`LanguageModel`.

One parser per architecture family; presets store the verbatim config and go through here
too, so a preset and a user's local ``config.json`` are read by the same code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import EstimatorError
from .model import Attention, DenseMlp, LanguageModel, Layer, Mamba, Moe

Config = dict[str, Any]


# Structural sizes: whole numbers of at least 1 (a layer count, a width), at most these.
POSITIVE = {
    "hidden_size": 10**6,
    "intermediate_size": 10**7,
    "moe_intermediate_size": 10**7,
    "shared_expert_intermediate_size": 10**7,
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
}


class _Cfg:
    """Key access that names the key and the model in its error: a missing required key,
    or a structural size that is not a whole number in range (a string, a bool, zero)."""

    def __init__(self, d: Config, where: str):
        self.d, self.where = d, where

    def _checked(self, key: str, v: Any) -> Any:
        top = POSITIVE.get(key)
        if top is None:
            return v
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise EstimatorError(
                f"{self.where}: config key '{key}' must be a whole number from 1 to {top:,}, "
                f"not {v!r}"
            )
        return v

    def req(self, key: str) -> Any:
        if self.d.get(key) is None:
            raise EstimatorError(f"{self.where}: config is missing required key '{key}'")
        return self._checked(key, self.d[key])

    def get(self, key: str, default: Any = None) -> Any:
        v = self.d.get(key)
        return default if v is None else self._checked(key, v)


def _window_layers(c: _Cfg, n: int, sliding: Callable[[int], bool] | None) -> list[int | None]:
    """Per-layer attention window from ``layer_types`` (newer configs) or a pattern rule."""
    window = c.get("sliding_window")
    types = c.get("layer_types")
    if types and len(types) == n:
        return [window if "sliding" in t else None for t in types]
    if sliding is None or not window:
        return [None] * n
    return [window if sliding(i) else None for i in range(n)]


def _gqa(c: _Cfg, *, qkv_bias=False, o_bias=False, qk_norm=False, sinks=False) -> Attention:
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


def _base(c: _Cfg, name: str, layers: list[Layer], **kw) -> LanguageModel:
    return LanguageModel(
        name=name,
        model_type=c.get("model_type", ""),
        hidden_size=c.req("hidden_size"),
        vocab_size=c.req("vocab_size"),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        layers=layers,
        max_context=c.get("max_position_embeddings"),
        **kw,
    )


def _llama_like(c: _Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    bias = bool(c.get("attention_bias", False))
    attn = _gqa(c, qkv_bias=bias or mt == "qwen2", o_bias=bias, qk_norm=mt == "qwen3")
    n = c.req("num_hidden_layers")
    if mt == "qwen2" or mt == "qwen3":
        use_sw = c.get("use_sliding_window", False)
        max_sw = c.get("max_window_layers", n)
        windows = [c.get("sliding_window") if use_sw and i >= max_sw else None for i in range(n)]
    else:  # Mistral v0.1 has a global sliding window on every layer; v0.3 sets null
        windows = _window_layers(c, n, lambda i: True)
    layers = [Layer(window=w) for w in windows]
    return _base(
        c,
        name,
        layers,
        attention=attn,
        dense_mlp=DenseMlp(
            intermediate_size=c.req("intermediate_size"), bias=bool(c.get("mlp_bias", False))
        ),
    )


def _gemma(c: _Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    n = c.req("num_hidden_layers")
    if mt == "gemma2":
        rule = lambda i: i % 2 == 0  # noqa: E731  (Gemma 2: even layers are local)
    else:  # Gemma 3: every `sliding_window_pattern`-th layer is global, the rest local
        p = c.get("sliding_window_pattern", 6)
        rule = lambda i: (i + 1) % p != 0  # noqa: E731
    layers = [Layer(window=w) for w in _window_layers(c, n, rule)]
    m = _base(
        c,
        name,
        layers,
        attention=_gqa(c, qk_norm=mt.startswith("gemma3")),
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )
    m.tie_word_embeddings = bool(c.get("tie_word_embeddings", True))  # Gemma ties by default
    return m


def _mixtral(c: _Cfg, name: str) -> LanguageModel:
    n = c.req("num_hidden_layers")
    layers = [Layer(window=w, mlp="moe") for w in _window_layers(c, n, lambda i: True)]
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=c.req("intermediate_size"),
    )
    return _base(c, name, layers, attention=_gqa(c), moe=moe)


def _qwen_moe(c: _Cfg, name: str) -> LanguageModel:
    mt = c.get("model_type")
    n = c.req("num_hidden_layers")
    step = c.get("decoder_sparse_step", 1)
    dense_only = set(c.get("mlp_only_layers", []))
    layers = [
        Layer(mlp="moe" if (i not in dense_only and (i + 1) % step == 0) else "dense")
        for i in range(n)
    ]
    shared = c.get("shared_expert_intermediate_size", 0)
    moe = Moe(
        num_experts=c.req("num_experts"),
        top_k=c.req("num_experts_per_tok"),
        expert_intermediate_size=c.req("moe_intermediate_size"),
        shared_intermediate_size=shared,
        shared_expert_gate=bool(shared),
    )
    dense = (
        DenseMlp(intermediate_size=c.req("intermediate_size"))
        if any(la.mlp == "dense" for la in layers)
        else None
    )
    attn = _gqa(
        c, qkv_bias=mt == "qwen2_moe" or bool(c.get("attention_bias")), qk_norm=mt == "qwen3_moe"
    )
    return _base(c, name, layers, attention=attn, moe=moe, dense_mlp=dense)


def _llama4(c: _Cfg, name: str) -> LanguageModel:
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
    return _base(
        c,
        name,
        layers,
        attention=_gqa(c, qkv_bias=bool(c.get("attention_bias"))),
        moe=moe,
        dense_mlp=dense,
    )


def _gpt_oss(c: _Cfg, name: str) -> LanguageModel:
    n = c.req("num_hidden_layers")
    layers = [Layer(window=w, mlp="moe") for w in _window_layers(c, n, lambda i: i % 2 == 0)]
    moe = Moe(
        num_experts=c.req("num_local_experts"),
        top_k=c.get("num_experts_per_tok") or c.req("experts_per_token"),
        expert_intermediate_size=c.req("intermediate_size"),
        expert_bias=True,
        router_bias=True,
    )
    attn = _gqa(
        c,
        qkv_bias=bool(c.get("attention_bias", True)),
        o_bias=bool(c.get("attention_bias", True)),
        sinks=True,
    )
    return _base(c, name, layers, attention=attn, moe=moe)


def _deepseek_like(c: _Cfg, name: str) -> LanguageModel:
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
        attn = _gqa(c, qkv_bias=bool(c.get("attention_bias")), qk_norm=bool(c.get("use_qk_norm")))
    return _base(
        c,
        name,
        layers,
        attention=attn,
        moe=moe,
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )


def _nemotron_h(c: _Cfg, name: str) -> LanguageModel:
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
    return _base(
        c,
        name,
        layers,
        attention=_gqa(c, qkv_bias=bool(c.get("attention_bias"))),
        mamba=mamba,
        dense_mlp=DenseMlp(
            intermediate_size=c.req("intermediate_size"), gated=False, bias=bool(c.get("mlp_bias"))
        ),
    )


def _jamba(c: _Cfg, name: str) -> LanguageModel:
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
    return _base(
        c,
        name,
        layers,
        attention=_gqa(c),
        mamba=mamba,
        moe=moe,
        dense_mlp=DenseMlp(intermediate_size=c.req("intermediate_size")),
    )


PARSERS: dict[str, Callable[[_Cfg, str], LanguageModel]] = {
    "llama": _llama_like,
    "mistral": _llama_like,
    "qwen2": _llama_like,
    "qwen3": _llama_like,
    "gemma2": _gemma,
    "gemma3": _gemma,
    "gemma3_text": _gemma,
    "mixtral": _mixtral,
    "qwen2_moe": _qwen_moe,
    "qwen3_moe": _qwen_moe,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek_like,
    "deepseek_v3": _deepseek_like,
    "kimi_k2": _deepseek_like,
    "glm4_moe": _deepseek_like,
    "nemotron_h": _nemotron_h,
    "jamba": _jamba,
}

# Keys a released config.json may omit because transformers fills them from the config
# class's defaults (source: transformers Gemma3TextConfig / Gemma3Config defaults).
_DEFAULTS: dict[str, Config] = {
    "gemma3_text": {"vocab_size": 262208, "sliding_window_pattern": 6, "tie_word_embeddings": True},
}

# Multimodal wrappers whose language model sits in ``text_config``.
_WRAPPERS = {"llama4", "gemma3", "mistral3", "qwen2_5_vl", "llava", "llava_onevision"}


def vit_params(v: Config) -> int:
    """Parameters of a standard ViT encoder from a ``vision_config`` (patch embedding,
    blocks with biased attention and 2-matrix MLP, two LayerNorms each, learned positions)."""
    d, inter = v.get("hidden_size"), v.get("intermediate_size")
    n = v.get("num_hidden_layers") or v.get("depth")
    if not (d and inter and n):
        return 0
    p, img, ch = v.get("patch_size", 14), v.get("image_size", 224), v.get("num_channels", 3)
    block = 4 * d * d + 4 * d + 2 * d * inter + inter + d + 4 * d
    patches = (img // p) ** 2
    return n * block + ch * p * p * d + d + patches * d + 2 * d


def model_from_config(config: Config, name: str, display_name: str = "") -> LanguageModel:
    """Build a :class:`LanguageModel` from a config.json dict."""
    if not isinstance(config, dict):
        raise EstimatorError(f"{name}: config must be a JSON object")
    mt = config.get("model_type")
    text = config
    extra, note = 0, ""
    if mt in _WRAPPERS and isinstance(config.get("text_config"), dict):
        text = dict(config["text_config"])
        text.setdefault(
            "model_type", {"llama4": "llama4_text", "gemma3": "gemma3_text"}.get(mt, mt)
        )
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in config:
            text["tie_word_embeddings"] = config["tie_word_embeddings"]
        if isinstance(config.get("vision_config"), dict):
            extra = vit_params(config["vision_config"])
            if extra:
                note = (
                    f"vision encoder ~{extra / 1e9:.2f}B params from vision_config "
                    "(resident, idle for text)"
                )
    tmt = text.get("model_type")
    text = {**_DEFAULTS.get(tmt, {}), **text}
    parser = PARSERS.get(tmt)
    if parser is None:
        raise EstimatorError(
            f"{name}: unsupported model_type '{tmt}'. Supported: {', '.join(sorted(PARSERS))}"
        )
    try:
        model = parser(_Cfg(text, name), name)
    except EstimatorError:
        raise
    except ValidationError as e:
        err = e.errors()[0]
        raise EstimatorError(
            f"{name}: config values give an invalid {'.'.join(map(str, err['loc']))}: {err['msg']}"
        ) from None
    except (TypeError, ValueError, ZeroDivisionError, KeyError, IndexError) as e:
        raise EstimatorError(
            f"{name}: config.json has values the {tmt} parser cannot use ({e!r})"
        ) from None
    a = model.attention
    if a is not None and a.num_kv_heads and a.num_heads % a.num_kv_heads:
        raise EstimatorError(
            f"{name}: num_key_value_heads {a.num_kv_heads} does not divide "
            f"num_attention_heads {a.num_heads}"
        )
    model.display_name = display_name or name
    model.extra_params, model.extra_params_note = extra, note
    return model


def load_config_file(path: str | Path) -> LanguageModel:
    """Read a local Hugging Face config.json into a model named after its folder."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise EstimatorError(f"config file not found: {p}") from None
    except json.JSONDecodeError as e:
        raise EstimatorError(
            f"{p}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    name = p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    return model_from_config(data, name=name, display_name=f"{name} (from {p})")
