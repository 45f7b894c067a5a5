"""A transformer stack described by its dimensions: the building block of every non-LLM
family (text encoders, ViTs, DiTs, Whisper's encoder and decoder, action experts,
predictors). Parameters and FLOPs are derived from the dimensions, like the LLM's."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class Stack(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int | None = None  # GQA; None = heads
    head_dim: int | None = None  # None = hidden / heads
    ffn: int = Field(ge=1)
    gated: bool = False  # SwiGLU/GeGLU: 3 FFN matrices, else 2
    qkv_bias: bool = True
    o_bias: bool = True
    ffn_bias: bool = True
    k_bias: bool = True  # Whisper has no bias on the key projection
    norm_params: int = 2  # per hidden unit: LayerNorm weight+bias = 2, RMSNorm = 1
    norms_per_layer: int = 2
    cross_attention: bool = False  # decoder layers that also attend to an encoder's output
    cross_kv_dim: int | None = None  # width of the memory cross-attention reads (None: hidden)
    causal: bool = False
    modulation: int = 0  # DiT adaLN: this many hidden-sized vectors regressed per layer

    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def kvh(self) -> int:
        return self.kv_heads or self.heads

    def _attn(self, kv_in: int) -> int:
        q, kv = self.heads * self.hd, self.kvh * self.hd
        n = self.hidden * q + 2 * kv_in * kv + q * self.hidden
        if self.qkv_bias:
            n += q + kv * (2 if self.k_bias else 1)
        if self.o_bias:
            n += self.hidden
        return n

    def layer_matmul_params(self) -> int:
        n = self._attn(self.hidden)
        if self.cross_attention:
            n += self._attn(self.cross_kv_dim or self.hidden)
        n += (3 if self.gated else 2) * self.hidden * self.ffn
        if self.ffn_bias:
            n += (2 if self.gated else 1) * self.ffn + self.hidden
        if self.modulation:
            n += self.hidden * self.modulation * self.hidden + self.modulation * self.hidden
        return n

    def matmul_params(self) -> int:
        return self.layers * self.layer_matmul_params()

    def params(self) -> int:
        norms = self.norms_per_layer + (1 if self.cross_attention else 0)
        return self.matmul_params() + self.layers * norms * self.norm_params * self.hidden

    def attn_flops(self, q_tokens, kv_tokens):
        """Score FLOPs (QK^T and AV) of one sequence: ``q_tokens`` attending to ``kv_tokens``;
        causal self-attention over the same tokens costs half."""
        q = np.asarray(q_tokens, float)
        k = np.asarray(kv_tokens, float)
        pairs = q * k / 2 if self.causal else q * k
        return self.layers * 2 * 2 * self.heads * self.hd * pairs

    def cross_flops(self, q_tokens, memory_tokens):
        if not self.cross_attention:
            return np.zeros_like(np.asarray(q_tokens, float))
        q, m = np.asarray(q_tokens, float), np.asarray(memory_tokens, float)
        return self.layers * 2 * 2 * self.heads * self.hd * q * m

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        return self.layers * 2 * self.kvh * self.hd * bytes_per_value

    def act_bytes_per_token(self, tp: int, act_bytes: float = 2.0) -> float:
        """HBM traffic of one token's activations between kernels, per GPU (as for LLMs)."""
        q, kv = self.heads * self.hd, self.kvh * self.hd
        per = 4 * self.hidden + 2 * self.hidden + 2 * (q + 2 * kv) / tp + 2 * q / tp
        if self.cross_attention:
            per += 2 * self.hidden + 4 * q / tp
        per += 2 * self.hidden + (6 if self.gated else 4) * self.ffn / tp
        return self.layers * per * act_bytes
