"""Family presets: ``presets/families/<family>/*.yaml``, each the model's verbatim config
(or published architecture values) plus where it was read; built into family models."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import EstimatorError
from ..hf_config import model_from_config
from ..presets import Catalog, Published, _user_dirs, read_yaml, shipped_dir
from ..stack import Stack
from .diffusion import DiffusionModel
from .models import AsrModel, EncoderModel, FamilyModel, JepaModel, _get


class FamilyPublished(Published):
    model_config = ConfigDict(extra="allow")  # e.g. denoiser_params_b beside the total


class FamilyPreset(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    display_name: str = ""
    family: str
    aliases: list[str] = []
    source: str
    verified: bool = True
    published: FamilyPublished = FamilyPublished()
    notes: str = ""
    config: dict[str, Any] = {}


def _bert_like(p: FamilyPreset) -> EncoderModel:
    c, w = p.config, p.name
    mt = c.get("model_type", "")
    if mt == "mistral":  # a decoder LLM used as an embedder: no LM head
        lm = model_from_config(c, name=w)
        a = lm.attention
        stack = Stack(
            layers=lm.num_layers,
            hidden=lm.hidden_size,
            heads=a.num_heads,
            kv_heads=a.num_kv_heads,
            head_dim=a.head_dim,
            ffn=lm.dense_mlp.intermediate_size,
            gated=True,
            qkv_bias=False,
            o_bias=False,
            ffn_bias=False,
            norm_params=1,
            causal=True,
        )
        return EncoderModel(
            name=w,
            display_name=p.display_name,
            family=p.family,
            stack=stack,
            vocab=lm.vocab_size,
            embed_norm=False,
            extra_params=lm.hidden_size,
            extra_note="final RMSNorm",
            max_tokens=lm.max_context,
        )
    if "XLMRobertaFlashConfig" in str(c.get("auto_map", {})):
        # keys a jina config omits fall back to its config class's defaults (source:
        # jinaai/xlm-roberta-flash-implementation configuration_xlm_roberta.py)
        c = {"vocab_size": 250002, "type_vocab_size": 1, **c}
    h = _get(c, "hidden_size", w)
    stack = Stack(
        layers=_get(c, "num_hidden_layers", w),
        hidden=h,
        heads=_get(c, "num_attention_heads", w),
        ffn=_get(c, "intermediate_size", w),
    )
    extra, note = 0, ""
    if c.get("lora_rank") and c.get("lora_adaptations"):
        # jina-embeddings-v3: a rank-r LoRA per task on the embeddings and every linear layer
        r, tasks = int(c["lora_rank"]), len(c["lora_adaptations"])
        per_layer = r * ((h + 3 * h) + (h + h) + (h + stack.ffn) + (stack.ffn + h))
        extra = tasks * (stack.layers * per_layer + r * (_get(c, "vocab_size", w) + h))
        note = f"{tasks} task LoRA adapters of rank {r}"
    reranker = p.family == "reranker"
    return EncoderModel(
        name=w,
        display_name=p.display_name,
        family=p.family,
        stack=stack,
        vocab=_get(c, "vocab_size", w),
        positions=0
        if c.get("position_embedding_type") == "rotary"
        else _get(c, "max_position_embeddings", w),
        type_vocab=c.get("type_vocab_size", 0) or 0,
        pooler=not reranker,
        head_outputs=1 if reranker else 0,
        extra_params=extra,
        extra_note=note,
        max_tokens=_max_tokens(c),
    )


def _max_tokens(c: dict) -> int | None:
    """Longest input an encoder reads. RoBERTa-style position ids start after the padding
    index (HF ``create_position_ids_from_input_ids``), so ``max_position_embeddings`` 8194
    holds 8,192 tokens (bge-m3's documented maximum); BERT uses every position."""
    n = c.get("max_position_embeddings")
    if not n:
        return None
    return n - (c.get("pad_token_id", 1) + 1) if "roberta" in c.get("model_type", "") else n


def _whisper(p: FamilyPreset) -> AsrModel:
    c, w = p.config, p.name
    d = _get(c, "d_model", w)

    def stack(prefix: str, decoder: bool) -> Stack:
        return Stack(
            layers=_get(c, f"{prefix}_layers", w),
            hidden=d,
            heads=_get(c, f"{prefix}_attention_heads", w),
            ffn=_get(c, f"{prefix}_ffn_dim", w),
            k_bias=False,
            cross_attention=decoder,
            causal=decoder,
        )

    return AsrModel(
        name=w,
        display_name=p.display_name,
        encoder=stack("encoder", False),
        decoder=stack("decoder", True),
        n_mels=_get(c, "num_mel_bins", w),
        vocab=_get(c, "vocab_size", w),
        source_positions=c.get("max_source_positions", 1500),
        target_positions=c.get("max_target_positions", 448),
    )


def _vit(d: int, depth: int, heads: int, mlp_ratio: float) -> Stack:
    return Stack(layers=depth, hidden=d, heads=heads, ffn=int(d * mlp_ratio))


def _jepa(p: FamilyPreset) -> JepaModel:
    """V-JEPA (facebookresearch/jepa yaml: encoder.embed_dim/depth/num_heads/mlp_ratio) or
    V-JEPA 2 (HF vjepa2 config: hidden_size/num_hidden_layers/...). Only the encoder runs at
    inference; the pretraining predictor is not counted. The action-conditioned variant adds
    its predictor (a ``predictor`` block with ``action_dim``)."""
    c, w = p.config, p.name
    if "encoder" in c:
        e = c["encoder"]
        enc = _vit(
            _get(e, "embed_dim", w),
            _get(e, "depth", w),
            _get(e, "num_heads", w),
            e.get("mlp_ratio", 4.0),
        )
        patch, tub = _get(c, "patch_size", w), _get(c, "tubelet_size", w)
        frames, res, ch = c.get("num_frames", 16), c.get("crop_size", 224), c.get("in_chans", 3)
    else:
        enc = _vit(
            _get(c, "hidden_size", w),
            _get(c, "num_hidden_layers", w),
            _get(c, "num_attention_heads", w),
            c.get("mlp_ratio", 4.0),
        )
        patch, tub = _get(c, "patch_size", w), _get(c, "tubelet_size", w)
        frames, res = c.get("frames_per_clip", 16), c.get("crop_size", 256)
        ch = c.get("in_chans", 3)
    pred, io = None, 0
    ac = c.get("predictor") if (c.get("predictor") or {}).get("action_dim") else None
    if ac:  # V-JEPA 2-AC: an action-conditioned predictor (action/state inputs) is part of it
        pd = _get(ac, "embed_dim", w)
        pred = _vit(pd, _get(ac, "depth", w), _get(ac, "num_heads", w), ac.get("mlp_ratio", 4.0))
        # in/out projections between encoder and predictor width, and the action and state
        # encoders (linear maps of the action/state vectors to the predictor width)
        io = 2 * enc.hidden * pd + enc.hidden + pd
        io += (ac.get("action_dim", 0) + ac.get("state_dim", 0)) * pd + 2 * pd
    return JepaModel(
        name=w,
        display_name=p.display_name,
        encoder=enc,
        patch=patch,
        tubelet=tub,
        channels=ch,
        frames=frames,
        resolution=res,
        predictor=pred,
        predictor_io=io,
        action_conditioned=bool(ac),
    )


def _diffusion(p: FamilyPreset) -> DiffusionModel:
    extra = p.model_extra or {}
    if "components" not in extra or "denoiser" not in extra["components"]:
        raise EstimatorError(f"{p.name}: a diffusion preset needs components.denoiser")
    return DiffusionModel(
        p.name, p.display_name, p.family, extra["components"], extra.get("defaults", {})
    )


def _vlm(p: FamilyPreset):
    from .vlm import build_vlm

    return build_vlm(p.name, p.display_name, p.config)


def _var(p: FamilyPreset):
    from .var import build_var

    return build_var(p.name, p.display_name, p.config)


def _vla(p: FamilyPreset):
    from .vla import build_vla

    return build_vla(p.name, p.display_name, p.config)


BUILDERS = {
    "var": _var,
    "vla": _vla,
    "vlm": _vlm,
    "encoder": _bert_like,
    "reranker": _bert_like,
    "asr": _whisper,
    "jepa": _jepa,
    "diffusion_image": _diffusion,
    "diffusion_video": _diffusion,
}


def register(family: str):
    def deco(fn):
        BUILDERS[family] = fn
        return fn

    return deco


@lru_cache(maxsize=8)
def family_catalog(extra_dirs: tuple[str, ...] = ()) -> Catalog[FamilyPreset]:
    items: dict[str, FamilyPreset] = {}
    aliases: dict[str, str] = {}
    roots = [shipped_dir() / "families"] + [d / "families" for d in _user_dirs(extra_dirs)]
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*/*.yaml")):
            try:
                preset = FamilyPreset.model_validate(read_yaml(path))
            except ValidationError as e:
                raise EstimatorError(f"{path}: invalid preset: {e.errors()[0]['msg']}") from None
            if preset.family not in BUILDERS:
                continue  # transcribed, but this family's physics is not built yet
            items[preset.name] = preset
            aliases.update({a: preset.name for a in preset.aliases})
    return Catalog("model", items, aliases)


@lru_cache(maxsize=128)
def _build(name: str, extra_dirs: tuple[str, ...]) -> FamilyModel:
    p = family_catalog(extra_dirs).items[name]
    return BUILDERS[p.family](p)


def get_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> FamilyModel:
    return _build(family_catalog(extra_dirs).resolve_name(name), extra_dirs)


def is_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> bool:
    try:
        family_catalog(extra_dirs).resolve_name(name)
        return True
    except EstimatorError:
        return False
