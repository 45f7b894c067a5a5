"""Language-model architecture schema and everything derived from it.

Parameter counts, KV-cache bytes and FLOPs are *derived* from the architecture (the same
fields as a Hugging Face ``config.json``), never typed in. Published totals are kept beside
each preset only so the tests can check these derivations.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .mixers import LinearAttention, Mamba

__all__ = ["Attention", "DenseMlp", "LanguageModel", "Layer", "LinearAttention", "Mamba", "Moe"]

Mixer = Literal["attention", "mamba", "linear", "none"]
MlpKind = Literal["dense", "moe", "none"]


class Attention(BaseModel):
    """Attention shared by every attention layer. ``gqa`` covers MHA, GQA and MQA."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["gqa", "mla"] = "gqa"
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0, description="query/key head dim (MLA: nope + rope)")
    v_head_dim: int | None = None
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sinks: bool = False  # gpt-oss learned attention sinks: one scalar per head
    output_gate: bool = False  # Qwen3-Next/3.5: q_proj also yields a sigmoid gate on the output
    # MLA (DeepSeek-V2/V3): low-rank query and a compressed latent KV
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.head_dim


class DenseMlp(BaseModel):
    model_config = ConfigDict(extra="forbid")
    intermediate_size: int = Field(gt=0)
    gated: bool = True  # SwiGLU/GeGLU: 3 matrices; plain (ReLU^2, GELU): 2
    bias: bool = False


class Moe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    num_experts: int = Field(gt=1)
    top_k: int = Field(gt=0)
    expert_intermediate_size: int = Field(gt=0)
    gated: bool = True
    expert_bias: bool = False  # gpt-oss: biases on every expert projection
    router_bias: bool = False
    shared_intermediate_size: int = 0  # total width of always-on shared experts (0 = none)
    shared_expert_gate: bool = False  # Qwen2-MoE: a sigmoid gate on the shared expert


class Layer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    mixer: Mixer = "attention"
    window: int | None = None  # sliding-window or chunked-local attention: KV held <= window
    mlp: MlpKind = "dense"


@dataclass(frozen=True)
class Counts:
    """Derived parameter counts (numbers of values, not bytes)."""

    embed: int
    lm_head: int  # 0 when tied to the embedding
    attention: int
    mamba: int
    dense_mlp: int
    routed_experts: int  # every routed expert of every MoE layer
    moe_always_on: int  # routers + shared experts
    norms: int
    extra: int  # modules outside the language model (e.g. a vision tower), resident but idle
    linear: int = 0  # linear-attention mixers (MiniMax lightning attention)

    @property
    def total(self) -> int:
        return (
            self.embed
            + self.lm_head
            + self.attention
            + self.mamba
            + self.dense_mlp
            + self.routed_experts
            + self.moe_always_on
            + self.norms
            + self.extra
            + self.linear
        )


class LanguageModel(BaseModel):
    """A decoder-only language model (dense, MoE, MLA, sliding-window, hybrid Mamba)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["llm"] = "llm"
    model_type: str = ""  # the Hugging Face model_type it was read from
    hidden_size: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    tie_word_embeddings: bool = False
    layers: list[Layer]
    attention: Attention | None = None
    dense_mlp: DenseMlp | None = None
    moe: Moe | None = None
    mamba: Mamba | None = None
    linear: LinearAttention | None = None
    max_context: int | None = None
    extra_params: int = 0  # derived from a sub-config (vision tower); see hf_config
    # block-wise FP8 checkpoints (DeepSeek-V3, Kimi-K2): [block_n, block_k] of the scales
    weight_block: list[int] | None = None
    extra_params_note: str = ""
    mtp_layers: int = 0  # multi-token-prediction layers the checkpoint ships (see mtp_params)

    # ---- structure ------------------------------------------------------------------
    @cached_property
    def layer_counts(self) -> Counter[Layer]:
        return Counter(self.layers)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property  # read in every step evaluation; the layer list never changes
    def num_attention_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.mixer == "attention")

    @cached_property
    def num_moe_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.mlp == "moe")

    @property
    def is_moe(self) -> bool:
        return self.num_moe_layers > 0

    @property
    def uses_mla(self) -> bool:
        return self.attention is not None and self.attention.kind == "mla"

    def context_note(self, tokens: int) -> str | None:
        """A warning when a request (prompt + answer) runs past the context the config
        declares. A warning, not an error: RoPE scaling (YaRN) can stretch some models past
        ``max_position_embeddings``, and the memory and time physics still hold."""
        if self.max_context and tokens > self.max_context:
            return (
                f"{tokens:,} tokens per request exceed the {self.max_context:,} that "
                f"{self.name} declares (max_position_embeddings); serving it needs RoPE "
                "scaling the model supports, or shorter prompts"
            )
        return None

    def kind_label(self) -> str:
        parts = []
        if self.is_moe:
            parts.append(f"MoE {self.moe.num_experts}x top-{self.moe.top_k}")
        else:
            parts.append("dense")
        if self.uses_mla:
            parts.append("MLA")
        elif self.attention is not None:
            a = self.attention
            parts.append(
                "MHA" if a.num_kv_heads == a.num_heads else f"GQA {a.num_kv_heads} KV heads"
            )
        windows = {
            layer.window for layer in self.layers if layer.mixer == "attention" and layer.window
        }
        if windows:
            parts.append("sliding/local window " + "/".join(str(w) for w in sorted(windows)))
        n_mamba = sum(1 for layer in self.layers if layer.mixer == "mamba")
        if n_mamba:
            parts.append(
                f"hybrid: {n_mamba} Mamba-{self.mamba.version} + "
                f"{self.num_attention_layers} attention layers"
            )
        if self.num_linear_layers:
            parts.append(
                f"hybrid: {self.num_linear_layers} linear "
                f"({self.linear.kind.replace('_', ' ')}) + "
                f"{self.num_attention_layers} attention layers"
            )
        return ", ".join(parts)

    @cached_property
    def mtp_params(self) -> int:
        """Parameters of the checkpoint's multi-token-prediction layers (Qwen3-Next/3.5):
        each a full-attention decoder layer with the model's MLP, behind a projection that
        fuses the hidden state with the next token's embedding (and their two norms, and a
        final one). Engines load them only to draft for speculative decoding, so they are
        not in ``total_params``; a published checkpoint total may count them."""
        if not self.mtp_layers:
            return 0
        h = self.hidden_size
        if self.is_moe:
            mlp = self.moe.num_experts * self._expert_params() + self._moe_always_on_params()
        else:
            mlp = self._dense_mlp_params()
        return self.mtp_layers * (self._attention_params() + mlp + 2 * h) + 2 * h * h + 3 * h

    # ---- per-layer parameter counts -------------------------------------------------
    def _attention_params(self) -> int:
        a, h = self.attention, self.hidden_size
        if a.kind == "mla":
            qk = a.qk_nope_head_dim + a.qk_rope_head_dim
            if a.q_lora_rank:
                q = h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * a.num_heads * qk
            else:
                q = h * a.num_heads * qk
            kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
            kv += a.kv_lora_rank * a.num_heads * (a.qk_nope_head_dim + a.v_dim)
            return q + kv + a.num_heads * a.v_dim * h
        q_dim, kv_dim = a.num_heads * a.head_dim, a.num_kv_heads * a.head_dim
        n = h * q_dim + 2 * h * kv_dim + a.num_heads * a.v_dim * h
        if a.qkv_bias:
            n += q_dim + 2 * kv_dim
        if a.o_bias:
            n += h
        if a.qk_norm:
            n += 2 * a.head_dim
        if a.sinks:
            n += a.num_heads
        if a.output_gate:
            n += h * q_dim
        return n

    def _mamba_params(self) -> int:
        m, h = self.mamba, self.hidden_size
        if m.version == 1:
            n = h * 2 * m.d_inner  # in_proj: x and z
            n += m.d_inner * m.d_conv + (m.d_inner if m.conv_bias else 0)
            n += m.d_inner * (m.dt_rank + 2 * m.d_state)  # x_proj -> dt, B, C
            n += m.dt_rank * m.d_inner + m.d_inner  # dt_proj with bias
            n += m.d_inner * m.d_state + m.d_inner  # A_log, D
            n += m.d_inner * h  # out_proj
            if m.inner_norms:
                n += m.dt_rank + 2 * m.d_state
        else:
            conv_dim = m.d_inner + 2 * m.n_groups * m.d_state
            n = h * (2 * m.d_inner + 2 * m.n_groups * m.d_state + m.num_heads)  # in_proj
            n += conv_dim * m.d_conv + (conv_dim if m.conv_bias else 0)
            n += 3 * m.num_heads  # dt_bias, A_log, D
            n += m.d_inner  # gated RMSNorm
            n += m.d_inner * h  # out_proj
        if m.proj_bias:
            n += 2 * m.d_inner + h
        return n

    def _linear_params(self) -> int:
        la, h = self.linear, self.hidden_size
        n = 2 * h * la.key_width + h * la.width + la.width * h  # q, k, v, out
        if la.output_gate:
            n += h * la.width
        if la.kind == "gated_delta":
            n += 2 * h * la.num_heads + 2 * la.num_heads  # beta/alpha projections, A_log, dt_bias
            n += la.conv_dim * la.conv_kernel + la.head_dim  # conv1d (no bias), norm per head
        else:
            n += la.width  # norm over all heads
        return n

    def _dense_mlp_params(self) -> int:
        d, h = self.dense_mlp, self.hidden_size
        n = (3 if d.gated else 2) * h * d.intermediate_size
        if d.bias:
            n += (2 if d.gated else 1) * d.intermediate_size + h
        return n

    def _expert_params(self) -> int:
        """One routed expert."""
        m, h = self.moe, self.hidden_size
        n = (3 if m.gated else 2) * h * m.expert_intermediate_size
        if m.expert_bias:
            n += (2 if m.gated else 1) * m.expert_intermediate_size + h
        return n

    def _moe_always_on_params(self) -> int:
        """Router and shared experts of one MoE layer."""
        m, h = self.moe, self.hidden_size
        n = h * m.num_experts + (m.num_experts if m.router_bias else 0)
        n += (3 if m.gated else 2) * h * m.shared_intermediate_size
        if m.shared_expert_gate:
            n += h
        return n

    # ---- totals ---------------------------------------------------------------------
    @cached_property
    def counts(self) -> Counts:
        h = self.hidden_size
        attn = mamba = linear = dense = routed = always = 0
        norms = h  # final norm
        for layer, c in self.layer_counts.items():
            if layer.mixer == "attention":
                attn += c * self._attention_params()
            elif layer.mixer == "mamba":
                mamba += c * self._mamba_params()
            elif layer.mixer == "linear":
                linear += c * self._linear_params()
            if layer.mlp == "dense":
                dense += c * self._dense_mlp_params()
            elif layer.mlp == "moe":
                routed += c * self.moe.num_experts * self._expert_params()
                always += c * self._moe_always_on_params()
            norms += c * h * ((layer.mixer != "none") + (layer.mlp != "none"))
        embed = self.vocab_size * h
        return Counts(
            embed=embed,
            lm_head=0 if self.tie_word_embeddings else embed,
            attention=attn,
            mamba=mamba,
            dense_mlp=dense,
            routed_experts=routed,
            moe_always_on=always,
            norms=norms,
            extra=self.extra_params,
            linear=linear,
        )

    @property
    def total_params(self) -> int:
        return self.counts.total

    @property
    def active_params(self) -> int:
        """Parameters one token touches (routed experts at k/E), embeddings included."""
        c = self.counts
        active_routed = (
            c.routed_experts * self.moe.top_k / self.moe.num_experts if self.is_moe else 0
        )
        return int(c.total - c.extra - c.routed_experts + active_routed)

    @property
    def matmul_params_per_token(self) -> float:
        """Weights that take part in a matmul for one token: active minus the input-embedding
        lookup (a gather, not a GEMM); a tied embedding still costs one lm_head GEMM."""
        c = self.counts
        return self.active_params - c.embed - c.norms + (c.embed if self.tie_word_embeddings else 0)

    # ---- KV cache and recurrent state -----------------------------------------------
    def kv_values_per_token_layer(self) -> int:
        """Cached values per token in one attention layer (all KV heads)."""
        a = self.attention
        if a.kind == "mla":
            return a.kv_lora_rank + a.qk_rope_head_dim
        return a.num_kv_heads * (a.head_dim + a.v_dim)

    @cached_property
    def attention_windows(self) -> list[tuple[int | None, int]]:
        """(window, number of attention layers) groups; window None = full context."""
        c: Counter[int | None] = Counter(
            layer.window for layer in self.layers if layer.mixer == "attention"
        )
        return sorted(c.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        """KV bytes per token of context for full-context growth (every attention layer),
        i.e. before windows cap it; the headline 'bytes per token'."""
        if self.attention is None:
            return 0.0
        return self.num_attention_layers * self.kv_values_per_token_layer() * kv_bytes

    def kv_bytes_per_sequence(self, context, kv_bytes: float):
        """KV bytes one sequence holds at ``context`` tokens (array-friendly). Sliding/chunked
        layers hold at most their window."""
        context = np.asarray(context, dtype=float)
        if self.attention is None:
            return np.zeros_like(context)
        per = self.kv_values_per_token_layer() * kv_bytes
        total = np.zeros_like(context)
        for window, n in self.attention_windows:
            held = context if window is None else np.minimum(context, window)
            total = total + n * per * held
        return total

    @cached_property
    def num_mamba_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.mixer == "mamba")

    @cached_property
    def num_linear_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.mixer == "linear")

    def state_bytes_per_sequence(self, state_bytes: float = 2.0) -> float:
        """Fixed recurrent state per sequence (Mamba SSM + conv state, linear-attention k^T v),
        independent of context. Mamba state is held at 16-bit: engines keep it in the model
        dtype (vLLM's ``mamba_cache_dtype`` auto); linear-attention state in its own dtype."""
        linear = 0.0
        if self.num_linear_layers:
            la = self.linear
            linear = self.num_linear_layers * la.state_bytes_per_layer
        if not self.num_mamba_layers:
            return linear
        m = self.mamba
        if m.version == 1:
            per = m.d_inner * m.d_state + m.d_inner * (m.d_conv - 1)
        else:
            conv_dim = m.d_inner + 2 * m.n_groups * m.d_state
            per = m.d_inner * m.d_state + conv_dim * (m.d_conv - 1)
        return self.num_mamba_layers * per * state_bytes + linear

    # ---- FLOPs ----------------------------------------------------------------------
    def _score_dims(self, absorbed: bool) -> int:
        """Per-head dims multiplied per (query, key) pair: QK^T plus AV."""
        a = self.attention
        if a.kind == "mla":
            if absorbed:  # decode: attend in the latent space (DeepSeek-V2 weight absorption)
                return 2 * a.kv_lora_rank + a.qk_rope_head_dim
            return a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_dim
        return a.head_dim + a.v_dim

    def attention_flops_prefill(self, tokens):
        """Attention-score FLOPs for a causal prefill of ``tokens`` tokens (array-friendly)."""
        if self.attention is None:
            return np.zeros_like(np.asarray(tokens, dtype=float))
        t = np.asarray(tokens, dtype=float)
        per_pair = 2 * self.attention.num_heads * self._score_dims(absorbed=False)
        total = np.zeros_like(t)
        for window, n in self.attention_windows:
            if window is None:
                pairs = t * (t + 1) / 2  # causal: half the square
            else:
                w = np.minimum(t, window)
                pairs = w * (w + 1) / 2 + (t - w) * window
            total = total + n * per_pair * pairs
        return total

    def attention_flops_decode(self, context):
        """Attention-score FLOPs for one new token against ``context`` cached tokens."""
        if self.attention is None:
            return np.zeros_like(np.asarray(context, dtype=float))
        c = np.asarray(context, dtype=float)
        per_pair = 2 * self.attention.num_heads * self._score_dims(absorbed=True)
        total = np.zeros_like(c)
        for window, n in self.attention_windows:
            total = total + n * per_pair * (c if window is None else np.minimum(c, window))
        return total

    def ssm_flops_per_token(self) -> float:
        """Recurrent-mixer FLOPs beyond the projections: the selective scan's state update and
        readout (~6·D·N), and linear attention's k^T v update plus q·S readout (4 per state
        value; the delta rule also reads S·k before it writes: 6)."""
        flops = 0.0
        if self.num_mamba_layers:
            flops += self.num_mamba_layers * 6.0 * self.mamba.d_inner * self.mamba.d_state
        if self.num_linear_layers:
            la = self.linear
            per_value = 6.0 if la.kind == "gated_delta" else 4.0
            flops += self.num_linear_layers * per_value * la.state_values
        return flops
