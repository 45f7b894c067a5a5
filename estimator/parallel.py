"""Parallel splits (TP/PP/EP, attention data-parallel) and the rules that make one valid."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .errors import EstimatorError, SplitError
from .model import LanguageModel


class Parallel(BaseModel):
    """How one replica is split. ``gpus`` = tp × pp per replica; ``replicas`` copies run
    data-parallel. EP splits each MoE layer's experts over ``ep`` GPUs inside the TP group
    (TensorRT-LLM's moe_tp × moe_ep = tp), so ``ep`` divides ``tp``.
    ``attention_dp``: attention runs data-parallel across the TP group (each GPU holds the
    KV of its own sequences; attention weights are replicated), as engines do for MLA."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    ep: int = Field(1, ge=1)
    attention_dp: bool = False
    replicas: int = Field(1, ge=1)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def gpus(self) -> int:
        return self.gpus_per_replica * self.replicas

    def label(self) -> str:
        s = f"TP{self.tp}"
        if self.pp > 1:
            s += f" PP{self.pp}"
        if self.ep > 1:
            s += f" EP{self.ep}"
        if self.attention_dp:
            s += " attn-DP"
        if self.replicas > 1:
            s += f" x{self.replicas} replicas"
        return s


def check_split(model: LanguageModel, par: Parallel) -> None:
    """Raise :class:`SplitError` naming the rule a split breaks."""
    tp, pp, ep = par.tp, par.pp, par.ep
    a = model.attention
    if a is not None and a.num_heads % tp:
        raise SplitError(
            f"TP={tp} does not divide the {a.num_heads} attention heads of {model.name} "
            f"(rule: TP must divide the number of attention heads; try TP in "
            f"{_divisors(a.num_heads, 64)})"
        )
    if a is not None and a.kind == "gqa" and tp > 1:
        kv = a.num_kv_heads
        if kv % tp and tp % kv:
            raise SplitError(
                f"TP={tp} and the {kv} KV heads of {model.name} neither divide each other "
                f"(rule: TP divides the KV heads, or the KV heads divide TP and replicate)"
            )
    if model.mamba is not None and tp > 1:
        m = model.mamba
        heads = m.num_heads if m.version == 2 else m.d_inner
        if heads % tp:
            raise SplitError(
                f"TP={tp} does not divide the {heads} Mamba heads/channels of {model.name}"
            )
    if model.linear is not None and tp > 1:
        la = model.linear
        for heads, what in ((la.num_heads, "linear-attention"), (la.key_heads, "linear-key")):
            if heads and heads % tp:
                raise SplitError(
                    f"TP={tp} does not divide the {heads} {what} heads of {model.name} "
                    "(rule: TP divides the heads of every mixer)"
                )
    if pp > model.num_layers:
        raise SplitError(
            f"PP={pp} exceeds the {model.num_layers} layers of {model.name} "
            "(rule: each pipeline stage needs at least one layer)"
        )
    if ep > 1:
        if not model.is_moe:
            raise SplitError(f"EP={ep} needs a mixture-of-experts model; {model.name} is dense")
        if model.moe.num_experts % ep:
            raise SplitError(
                f"EP={ep} does not divide the {model.moe.num_experts} experts of {model.name} "
                "(rule: EP must divide the number of experts)"
            )
        if tp % ep:
            raise SplitError(
                f"EP={ep} must divide TP={tp}: experts are split over EP GPUs inside the TP "
                "group (moe_tp x moe_ep = tp)"
            )
    if par.attention_dp and tp == 1:
        raise SplitError(
            "attention data-parallel needs TP > 1 (it spreads sequences over the TP group)"
        )


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4 ... up to ``n``: the tensor-parallel sizes (and replica sizes) tried."""
    out, k = [], 1
    while k <= n:
        out.append(k)
        k *= 2
    return out


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def check_block_quant(model: LanguageModel, par: Parallel, weights: str = "fp8") -> None:
    """Block-wise FP8 weights shard only along whole blocks: every TP shard of an MLP or
    expert width must be a multiple of the block (vLLM's Fp8 linear and fused-MoE methods
    refuse the checkpoint otherwise: 'output_size ... is not divisible by weight quantization
    block_n'). Only the checkpoint's own FP8 layout has the blocks (``weights`` fp8)."""
    if weights != "fp8" or not model.weight_block:
        return
    block = max(model.weight_block)
    widths = []
    if model.dense_mlp is not None and any(la.mlp == "dense" for la in model.layers):
        widths.append(("dense MLP", model.dense_mlp.intermediate_size, par.tp))
    if model.moe is not None:
        widths.append(("expert", model.moe.expert_intermediate_size, par.tp // par.ep))
    for what, width, shards in widths:
        if shards > 1 and (width % shards or (width // shards) % block):
            raise SplitError(
                f"the block-FP8 weights of {model.name} cannot be split this way: each of the "
                f"{shards} {what} shards would be {width / shards:g} wide, not a multiple of the "
                f"{block}-wide quantisation blocks ("
                + (
                    "use EP for the experts, or a smaller TP)"
                    if what == "expert"
                    else "use a smaller TP)"
                )  # fmt: skip
            )


def parallel_for(
    gpus: int,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    attention_dp: bool = False,
) -> Parallel:
    """Fill in a split from a GPU count: unspecified TP takes what PP leaves; the rest are
    data-parallel replicas."""
    pp = pp or 1
    if tp is None:
        if gpus % pp:
            raise EstimatorError(f"--gpus {gpus} is not a multiple of PP={pp}")
        tp = gpus // pp
    per = tp * pp
    if gpus % per:
        raise EstimatorError(f"--gpus {gpus} is not a multiple of TP×PP = {tp}×{pp} = {per}")
    return Parallel(tp=tp, pp=pp, ep=ep or 1, attention_dp=attention_dp, replicas=gpus // per)
