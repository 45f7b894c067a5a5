"""Text encoders and rerankers (XLM-R/BERT, jina LoRA adapters, E5-Mistral): one
bidirectional pass over a batch of documents (reranker: query-document pairs)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..efficiency import engine_host, engine_time_factor
from ..engines import ENCODER_ENGINES, family_engine
from ..errors import EstimatorError
from ..formats import weight_format
from ..hardware import Accelerator
from ..hf_config import model_from_config
from ..parallel import Parallel
from ..roofline import ACT_BYTES
from ..stack import Stack
from .base import (
    DEFAULT_INPUT_TOKENS,
    FamilyEstimate,
    FamilyOptions,
    config_value,
    memory,
    result,
    stack_pass,
    tp_machine,
)
from .registry import Family, FamilyPreset, register


class EncoderModel(BaseModel):
    """A bidirectional text encoder (embeddings) or cross-encoder (reranker); or a decoder
    LLM used as an embedder (E5-Mistral), then ``causal``."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["encoder", "reranker"]
    stack: Stack
    vocab: int
    positions: int = 0  # learned position embeddings
    type_vocab: int = 0
    embed_norm: bool = True
    pooler: bool = False  # BERT-style dense pooler
    head_outputs: int = 0  # classification head (reranker: 1 score)
    extra_params: int = 0
    extra_note: str = ""
    max_tokens: int | None = None  # longest input the model reads (from its config)

    @property
    def params(self) -> int:
        s = self.stack
        n = (self.vocab + self.positions + self.type_vocab) * s.hidden
        n += 2 * s.hidden if self.embed_norm else 0
        n += s.params()
        if self.pooler:
            n += s.hidden * s.hidden + s.hidden
        if self.head_outputs:  # RobertaClassificationHead: dense + out_proj
            n += s.hidden * s.hidden + s.hidden + s.hidden * self.head_outputs + self.head_outputs
        return n + self.extra_params


def build_encoder(p: FamilyPreset) -> EncoderModel:
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
    h = config_value(c, "hidden_size", w)
    stack = Stack(
        layers=config_value(c, "num_hidden_layers", w),
        hidden=h,
        heads=config_value(c, "num_attention_heads", w),
        ffn=config_value(c, "intermediate_size", w),
    )
    extra, note = 0, ""
    if c.get("lora_rank") and c.get("lora_adaptations"):
        # jina-embeddings-v3: a rank-r LoRA per task on the embeddings and every linear layer
        r, tasks = int(c["lora_rank"]), len(c["lora_adaptations"])
        per_layer = r * ((h + 3 * h) + (h + h) + (h + stack.ffn) + (stack.ffn + h))
        extra = tasks * (stack.layers * per_layer + r * (config_value(c, "vocab_size", w) + h))
        note = f"{tasks} task LoRA adapters of rank {r}"
    reranker = p.family == "reranker"
    return EncoderModel(
        name=w,
        display_name=p.display_name,
        family=p.family,
        stack=stack,
        vocab=config_value(c, "vocab_size", w),
        positions=0
        if c.get("position_embedding_type") == "rotary"
        else config_value(c, "max_position_embeddings", w),
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


def encoder_engine(name: str | None) -> str:
    """An encoder engine's name, checked (None: the default)."""
    return family_engine(name, ENCODER_ENGINES, "encoder")


def engine_note(engine: str | None) -> str:
    """What an encoder estimate assumes of its engine, and where its numbers come from."""
    eng = encoder_engine(engine)
    host = engine_host("encoder", eng)
    if host.rows:
        factor = engine_time_factor("encoder", eng)[0]
        return (
            f"engine {eng}: {ENCODER_ENGINES[eng]}; at least {host.layer_us:.0f} us of host "
            f"time a layer, else {factor:.2f}x the fused kernels' time, fitted on "
            f"{host.rows} published pairs of the same model run both ways (docs/VALIDATION.md)"
        )
    return f"engine {eng}: {ENCODER_ENGINES[eng]}; timed on the roofline"


def eager_pass_time(layers, fused_s, layer_s: float, factor: float):
    """An eager engine's time for a pass a fused engine runs in ``fused_s``: it launches
    each layer's kernels from Python (at least ``layer_s`` a layer) and runs unfused
    attention and elementwise kernels (``factor`` over the fused time). Array-friendly: the
    fit (calibration.encoder_engines) calls it with its trial numbers."""
    return np.maximum(np.asarray(layers) * layer_s, factor * np.asarray(fused_s))


def eager_time(fused_s: float, layers: int, engine: str) -> tuple[float, bool]:
    """(seconds, host-bound) of a pass a fused engine runs in ``fused_s`` under ``engine``,
    with the engine's fitted numbers (none: the fused time)."""
    host = engine_host("encoder", engine)
    if not host.rows:
        return fused_s, False
    layer_s, factor = host.layer_us * 1e-6, engine_time_factor("encoder", engine)[0]
    host_bound = layers * layer_s > factor * fused_s
    return float(eager_pass_time(layers, fused_s, layer_s, factor)), host_bound


def estimate_encoder(
    model: EncoderModel,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    tokens: int,
    engine: str | None = None,
) -> FamilyEstimate:
    """One bidirectional pass over ``batch`` documents (reranker: query+document pairs) of
    ``tokens`` tokens each, under ``engine`` (:data:`~estimator.engines.ENCODER_ENGINES`)."""
    eng = encoder_engine(engine)
    if model.max_tokens and tokens > model.max_tokens:
        # an error, not a note: serving stacks truncate, so the estimate would time text
        # the model never reads
        raise EstimatorError(
            f"{model.name} reads at most {model.max_tokens:,} tokens per input "
            f"(max_position_embeddings in its config); {tokens:,} asked. Split documents "
            f"into chunks of at most {model.max_tokens:,} tokens and count each chunk"
        )
    mc = tp_machine(model.name, [model.stack], gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    s = model.stack
    st = stack_pass(mc, s, wb, batch, tokens, tokens)
    act = batch * tokens * ACT_BYTES * (4 * s.hidden + (3 * s.heads * s.hd + s.ffn) / mc.tp)
    mem = memory(mc, model.params * wb / mc.tp, act, 0.0, batch)
    t, host_bound = eager_time(float(st.total), s.layers, eng)
    unit = "pairs" if model.family == "reranker" else "docs"
    metrics = {
        "s_per_batch": t,
        "docs_per_s": batch / t,
        "tokens_per_s": batch * tokens / t,
        "batch": batch,
        "input_tokens": tokens,
        "unit": unit,
        "engine": eng,
    }
    bottleneck = "host (kernel launches)" if host_bound else str(st.bottleneck())
    e = result(model, model.family, mc, weights, mem, bottleneck, metrics)
    e.notes.append(engine_note(eng))
    return e


def _estimate(
    model: EncoderModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    tokens = o.input_tokens or DEFAULT_INPUT_TOKENS
    # the LLM default is longer than a BERT reads: unasked, use the model's maximum
    capped = o.input_tokens is None and model.max_tokens and tokens > model.max_tokens
    tokens = model.max_tokens if capped else tokens
    e = estimate_encoder(model, gpu, par, weights, o.batch, tokens, o.engine)
    if capped:
        e.notes.append(f"--input-tokens not given: {tokens} ({model.name}'s maximum) used")
    return e


register(Family("encoder", build_encoder, _estimate, engines=tuple(ENCODER_ENGINES)))
register(Family("reranker", build_encoder, _estimate, engines=tuple(ENCODER_ENGINES)))
