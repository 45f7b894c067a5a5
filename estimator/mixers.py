"""The recurrent token mixers of hybrid language models (the state they keep instead of a KV
cache): Mamba's selective state space and linear attention's key-value state. Their
parameter counts, state bytes and FLOPs are derived in :mod:`estimator.model`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Mamba(BaseModel):
    """Selective state-space mixer. v1 (Mamba, Jamba) or v2 (Mamba-2, Nemotron-H)."""

    model_config = ConfigDict(extra="forbid")
    version: Literal[1, 2]
    d_inner: int = Field(gt=0)
    d_state: int = Field(gt=0)
    d_conv: int = Field(gt=0)
    n_groups: int = 1  # v2: B/C groups
    num_heads: int = 0  # v2: SSM heads
    dt_rank: int = 0  # v1: rank of the dt projection
    conv_bias: bool = True
    proj_bias: bool = False
    inner_norms: bool = False  # Jamba: RMSNorm on dt, B, C


class LinearAttention(BaseModel):
    """Linear attention: a fixed per-head key-value state instead of a KV cache.

    ``lightning`` (MiniMax-Text-01/M1): q/k/v, an output gate and the output projection over
    all heads. ``gated_delta`` (Gated DeltaNet: Qwen3-Next, Qwen3.5): fewer query/key heads
    than value heads (``key_heads`` x ``key_head_dim``), a causal depthwise conv over q, k and
    v (``conv_kernel``), per-head decay and write gates (beta, alpha), a gated output norm."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["lightning", "gated_delta"] = "lightning"
    num_heads: int = Field(gt=0)  # value heads (lightning: all heads)
    head_dim: int = Field(gt=0)  # value head dim
    key_heads: int | None = Field(default=None, gt=0)  # query/key heads (default: num_heads)
    key_head_dim: int | None = Field(default=None, gt=0)
    conv_kernel: int = Field(default=0, ge=0)  # depthwise causal conv width (0: none)
    output_gate: bool = True
    # The running k^T v state is accumulated in fp32 by the lightning-attention kernels
    # (a 16-bit running sum loses precision over long contexts); Qwen3.5 declares it
    # (mamba_ssm_dtype float32), which vLLM and SGLang adopt for their state cache.
    state_bytes: float = 4.0
    conv_state_bytes: float = 2.0  # the conv window is held in the model dtype

    @property
    def width(self) -> int:
        """Value width: what the output projection reads."""
        return self.num_heads * self.head_dim

    @property
    def key_width(self) -> int:
        return (self.key_heads or self.num_heads) * (self.key_head_dim or self.head_dim)

    @property
    def conv_dim(self) -> int:
        """Channels of the causal conv (q, k and v), 0 without one."""
        return 2 * self.key_width + self.width if self.conv_kernel else 0

    @property
    def state_values(self) -> int:
        """Recurrent state per layer per sequence: one key x value matrix per value head."""
        return self.num_heads * (self.key_head_dim or self.head_dim) * self.head_dim

    @property
    def state_bytes_per_layer(self) -> float:
        conv = self.conv_dim * max(self.conv_kernel - 1, 0) * self.conv_state_bytes
        return self.state_values * self.state_bytes + conv
