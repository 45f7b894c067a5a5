"""Read a Hugging Face ``config.json`` (a dict, or a local file) into a :class:`LanguageModel`.

One parser per architecture family, registered by ``model_type``; presets store the verbatim
config and go through here too, so a preset and a user's local ``config.json`` are read by the
same code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ..errors import EstimatorError
from ..model import LanguageModel
from . import classic, dense, hybrid, moe
from .keys import Cfg, Config

PARSERS: dict[str, Callable[[Cfg, str], LanguageModel]] = {
    **dict.fromkeys(
        (
            "llama",
            "mistral",
            "qwen2",
            "qwen3",
            "phi3",
            "granite",
            "olmo2",
            "glm",
            "glm4",
            "internlm2",
        ),
        dense.llama_like,
    ),
    **dict.fromkeys(("gemma", "gemma2", "gemma3", "gemma3_text"), dense.gemma),
    **dict.fromkeys(("cohere", "cohere2"), dense.cohere),
    "falcon": dense.falcon,
    **dict.fromkeys(
        ("mixtral", "phimoe", "granitemoe", "granitemoeshared", "minimax_m2", "olmoe"), moe.mixtral
    ),
    "dbrx": moe.dbrx,
    **dict.fromkeys(("qwen2_moe", "qwen3_moe"), moe.qwen_moe),
    **dict.fromkeys(("llama4", "llama4_text"), moe.llama4),
    "gpt_oss": moe.gpt_oss,
    **dict.fromkeys(("deepseek_v2", "deepseek_v3", "kimi_k2", "glm4_moe"), moe.deepseek_like),
    **dict.fromkeys(classic.CLASSIC, classic.classic),
    "nemotron_h": hybrid.nemotron_h,
    "jamba": hybrid.jamba,
    **dict.fromkeys(("minimax", "MiniMaxText01", "minimax_m1"), hybrid.minimax),
    **dict.fromkeys(("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"), hybrid.qwen_next),
}

# Older spellings of a model_type and of its keys, as transformers' config classes map them
# (FalconConfig reads the RefinedWeb checkpoints' n_embed/n_head/n_layer/n_head_kv).
_TYPE_ALIASES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
_KEY_ALIASES: dict[str, dict[str, str]] = {
    "falcon": {
        "n_embed": "hidden_size",
        "n_head": "num_attention_heads",
        "n_layer": "num_hidden_layers",
        "n_head_kv": "num_kv_heads",
    },
    **dict.fromkeys(classic.CLASSIC, classic.KEY_ALIASES),
    "olmoe": {"num_experts": "num_local_experts"},  # OlmoeConfig names the expert count so
}

# Keys a released config.json may omit because transformers fills them from the config
# class's defaults (source: transformers Gemma3TextConfig: vocab 262208, 8 heads, 4 KV heads,
# head_dim 256, 131072 positions; google/gemma-3-4b-it's config.json relies on them).
_DEFAULTS: dict[str, Config] = {
    "gemma3_text": {
        "vocab_size": 262208,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
    },
}

# Multimodal wrappers whose language model sits in ``text_config``; those with a Qwen3-VL
# vision tower (3-D patches, patch mergers) count it with ``qwen3_vl_vision_params``.
_QWEN3_VL = {"qwen3_5", "qwen3_5_moe"}
_WRAPPERS = {"llama4", "gemma3", "mistral3", "qwen2_5_vl", "llava", "llava_onevision"} | _QWEN3_VL


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


def qwen3_vl_vision_params(v: Config) -> int:
    """Parameters of a Qwen3-VL-style vision tower (Qwen3-VL, Qwen3.5): a 3-D patch embedding
    over ``temporal_patch_size`` frames, learned positions, ViT blocks, a patch merger of
    ``spatial_merge_size``² patches into the language model's width (``out_hidden_size``),
    and one more merger per ``deepstack_visual_indexes`` entry (normalised after the merge)."""
    d, inter, n = v.get("hidden_size"), v.get("intermediate_size"), v.get("depth")
    out = v.get("out_hidden_size")
    if not (d and inter and n and out):
        return 0
    p, t, ch = v.get("patch_size", 16), v.get("temporal_patch_size", 2), v.get("in_channels", 3)
    merged = d * v.get("spatial_merge_size", 2) ** 2
    block = 4 * d * d + 4 * d + 2 * d * inter + inter + d + 4 * d
    fcs = merged * merged + merged + merged * out + out
    deep = len(v.get("deepstack_visual_indexes") or [])
    return (
        ch * t * p * p * d
        + d
        + v.get("num_position_embeddings", 0) * d
        + n * block
        + (2 * d + fcs)
        + deep * (2 * merged + fcs)
    )


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
            "model_type",
            {
                "llama4": "llama4_text",
                "gemma3": "gemma3_text",
                "qwen3_5": "qwen3_5_text",
                "qwen3_5_moe": "qwen3_5_moe_text",
            }.get(mt, mt),
        )
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in config:
            text["tie_word_embeddings"] = config["tie_word_embeddings"]
        if isinstance(config.get("vision_config"), dict):
            vision = qwen3_vl_vision_params if mt in _QWEN3_VL else vit_params
            extra = vision(config["vision_config"])
            if extra:
                note = (
                    f"vision encoder ~{extra / 1e9:.2f}B params from vision_config "
                    "(resident, idle for text)"
                )
    tmt = text.get("model_type")
    if tmt in _TYPE_ALIASES:  # keep the original spelling: Falcon reads it for its layout
        text = {"new_decoder_architecture": tmt == "RefinedWeb", **text}
        tmt = _TYPE_ALIASES[tmt]
    renames = _KEY_ALIASES.get(tmt, {})
    text = {renames.get(k, k): v for k, v in text.items()}
    text = {**_DEFAULTS.get(tmt, {}), **text}
    parser = PARSERS.get(tmt)
    if parser is None:
        raise EstimatorError(
            f"{name}: unsupported model_type '{tmt}'. Supported: {', '.join(sorted(PARSERS))}"
        )
    try:
        model = parser(Cfg(text, name), name)
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
    q = config.get("quantization_config") or text.get("quantization_config") or {}
    block = q.get("weight_block_size") if isinstance(q, dict) else None
    if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) for b in block):
        model.weight_block = block
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
