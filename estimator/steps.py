"""The load model's inputs for one replica and request shape (:class:`Steps`: KV slots,
prefill seconds per prompt token, iteration seconds and memory per batch knot), prepared
from an evaluator (:func:`prepare_steps`), or from many at once (:func:`prepare_steps_many`),
and the serving options they are prepared under (:class:`ServingOptions`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .across_gpus import stack, stack_key
from .engines import stack_seconds
from .knots import BATCH_KNOTS, interp_table, knots_upto, last_knot
from .llm import Evaluator


class Speculative(BaseModel):
    """Speculative decoding: ``tokens`` proposed per step, each accepted with probability
    ``acceptance`` (independently; Leviathan et al. 2023). ``draft_cost``: one draft token's
    time as a share of a target decode step (a draft model ~0.05–0.15; n-gram lookup ~0)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    method: Literal["draft", "ngram"] = "draft"
    tokens: int = Field(4, ge=1, le=16)
    acceptance: float = Field(0.7, ge=0, le=1)
    draft_cost: float | None = Field(None, ge=0, le=1)

    def cost_ratio(self) -> float:
        if self.draft_cost is not None:
            return self.draft_cost
        return 0.0 if self.method == "ngram" else 0.1

    def tokens_per_step(self) -> float:
        a, k = self.acceptance, self.tokens
        return float(k + 1) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)


class ServingOptions(BaseModel):
    """Optional serving features; every default is off or neutral."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    think_time_s: float = Field(0.0, ge=0, description="mean pause between answer and next prompt")
    prefix_hit_rate: float = Field(0.0, ge=0, lt=1, description="share of prompt tokens cached")
    chunk_tokens: int | None = Field(None, ge=16, description="prefill tokens per iteration")
    speculative: Speculative | None = None
    # how requests arrive: spread in time (people), or in the synchronised waves of a
    # synthetic benchmark harness (all clients start together, fixed lengths, no think time)
    arrivals: Literal["spread", "waves"] = "spread"

    @model_validator(mode="after")
    def _waves_have_no_think_time(self) -> ServingOptions:
        if self.arrivals == "waves" and self.think_time_s > 0:
            raise ValueError("arrivals 'waves' is a benchmark harness: it has no think time")
        return self


@dataclass
class Steps:
    """Everything the load model and the simulator need about one replica and request; or,
    stacked (:meth:`stack`), about many: then every scalar is an array over the configurations
    and every table a row of a 2-D array, and :func:`~estimator.load.load_point` evaluates
    them all at once
    (``config``: each user count's configuration)."""

    slots: Any  # most sequences holding KV at once
    input_tokens: Any  # prompt tokens still to prefill (after prefix-cache hits)
    output_tokens: Any
    chunk: Any
    s_token: Any  # marginal prefill seconds per prompt token (rides on a decode iteration)
    s_alone: Any  # prefill of one prompt on an idle replica
    tokens_per_iter: Any  # E
    iter_table: np.ndarray  # iteration seconds at each batch knot (BATCH_KNOTS) through slots
    kv_gb_table: np.ndarray  # per-GPU KV+state GB at the same knots
    weights_gb: Any
    fixed_gb: Any
    config: np.ndarray | None = None  # stacked and aligned: each user count's table row
    stages: Any = 1  # pipeline stages a prompt crosses in turn (PP)
    # a prompt's own prefill seconds to its first token, every stage in turn (None: s_token ×
    # prompt tokens, one stage)
    s_first: Any = None
    request_s: Any = 0.0  # the serving stack's own time to a first token (no GPU held)
    # MoE: expert weights a prompt's chunk streams beyond a one-sequence decode iteration's
    # where its own compute does not hide them (a few hundred prompt tokens pick most of the
    # experts, one decoding token eight): an iteration carrying a prompt lasts at least
    # t_iter(1) + this; a large decode batch already streams every expert (0 for dense)
    prompt_experts_s: Any = 0.0

    @staticmethod
    def stack(items: list[Steps]) -> Steps:
        """Many configurations as one (tables padded with their last value: beyond a
        configuration's slots its table is never read)."""
        width = max(len(st.iter_table) for st in items)

        def padded(name: str) -> np.ndarray:
            out = np.empty((len(items), width))
            for row, st in zip(out, items, strict=True):
                t = getattr(st, name)
                row[: len(t)] = t
                row[len(t) :] = t[-1]  # its last value (np.pad's "edge", without its cost)
            return out

        def col(name: str, dtype=float) -> np.ndarray:
            return np.array([getattr(st, name) for st in items], dtype)

        return Steps(
            slots=col("slots", np.int64),
            input_tokens=col("input_tokens", np.int64),
            output_tokens=col("output_tokens", np.int64),
            chunk=col("chunk", np.int64),
            s_token=col("s_token"),
            s_alone=col("s_alone"),
            tokens_per_iter=col("tokens_per_iter"),
            iter_table=padded("iter_table"),
            kv_gb_table=padded("kv_gb_table"),
            weights_gb=col("weights_gb"),
            fixed_gb=col("fixed_gb"),
            stages=col("stages", np.int64),
            s_first=np.array([st.first_token_prefill for st in items]),
            request_s=col("request_s"),
            prompt_experts_s=col("prompt_experts_s"),
        )

    @functools.cached_property
    def decode_ratio(self) -> np.ndarray:
        """Per configuration, the running minimum of ``t_iter(x)/x`` over the batch knots
        ``x >= 1`` (what :func:`decode_batch` searches)."""
        table = np.atleast_2d(self.iter_table)
        width = table.shape[1]
        return np.minimum.accumulate(table[:, 1:] / BATCH_KNOTS[1:width], axis=1)

    @property
    def stacked(self) -> bool:
        return np.ndim(self.iter_table) == 2

    def at(self, config) -> Steps:
        """Each user count's own values (``config``: its configuration, per user count) of a
        stacked Steps, as arrays aligned with the user counts; a single Steps is itself."""
        if not self.stacked:
            return self
        config = np.asarray(config, np.intp)
        aligned = Steps(
            *(getattr(self, f)[config] for f in _SCALARS),
            iter_table=self.iter_table,
            kv_gb_table=self.kv_gb_table,
            weights_gb=self.weights_gb[config],
            fixed_gb=self.fixed_gb[config],
            config=config,
            stages=self.stages[config],
            s_first=self.s_first[config],
            request_s=self.request_s[config],
            prompt_experts_s=self.prompt_experts_s[config],
        )
        aligned.__dict__["decode_ratio"] = self.decode_ratio  # the tables' (computed once)
        return aligned

    @property
    def first_token_prefill(self):
        """A prompt's own prefill to its first token (every stage in turn)."""
        return self.input_tokens * self.s_token if self.s_first is None else self.s_first

    def memory_gb(self, in_flight):
        """Per-GPU memory with ``in_flight`` sequences holding KV."""
        kv = interp_table(self.kv_gb_table, in_flight, self.config)
        return self.weights_gb + self.fixed_gb + kv

    def t_iter(self, b):
        """Iteration seconds at (possibly fractional) decode batch ``b``."""
        b = np.clip(np.asarray(b, float), 0, self.slots)
        return interp_table(self.iter_table, b, self.config)

    def t_prompt_iter(self, b):
        """Seconds of an iteration at decode batch ``b`` that also carries a prompt chunk,
        before the chunk's own compute: at least a lone sequence's iteration plus the
        experts the chunk streams (:attr:`prompt_experts_s`)."""
        return np.maximum(self.t_iter(b), self.t_iter(1) + self.prompt_experts_s)


_SCALARS = (
    "slots",
    "input_tokens",
    "output_tokens",
    "chunk",
    "s_token",
    "s_alone",
    "tokens_per_iter",
)


def prepare_steps(
    ev: Evaluator,
    input_tokens: int,
    output_tokens: int,
    opts: ServingOptions | None = None,
    encoder_s: float = 0.0,
) -> Steps:
    """``encoder_s``: seconds of per-request work before the language model's prefill (a
    vision-language model's image encoder); it adds to every prompt's prefill."""
    return prepare_steps_many([ev], input_tokens, output_tokens, opts, [encoder_s])[0]


def prepare_steps_many(
    evs: list[Evaluator],
    input_tokens: int,
    output_tokens: int,
    opts: ServingOptions | None = None,
    encoder_s=None,
) -> list[Steps]:
    """:func:`prepare_steps` of many evaluators of one workload (``encoder_s``: one per
    evaluator, or None), those that differ in their GPU alone evaluated together
    (:mod:`estimator.across_gpus`): the same numbers, a fraction of the calls."""
    enc = [0.0] * len(evs) if encoder_s is None else [float(x) for x in encoder_s]
    if len(enc) != len(evs):
        raise ValueError(f"{len(enc)} encoder times for {len(evs)} evaluators")
    if len(evs) == 1:
        return _prepare(evs, input_tokens, output_tokens, opts, enc)
    groups: dict = {}
    for i, ev in enumerate(evs):
        groups.setdefault(stack_key(ev), []).append(i)
    out: list = [None] * len(evs)
    for rows in groups.values():
        group = [evs[i] for i in rows]
        steps = _prepare(group, input_tokens, output_tokens, opts, [enc[i] for i in rows])
        for i, st in zip(rows, steps, strict=True):
            out[i] = st
    return out


def _seq_cap(ev: Evaluator) -> int:
    """The most sequences the replica runs: the engine's cap, and the requests its pool of
    recurrent states holds where it keeps one (:attr:`Evaluator.state_request_cap`)."""
    cap = ev.state_request_cap
    return ev.max_seqs if cap is None else min(ev.max_seqs, cap)


def _prepare(evs, input_tokens, output_tokens, opts, encoder_s) -> list[Steps]:
    """:func:`prepare_steps_many` of evaluators that stack, one step-time call for all."""
    opts = opts or ServingOptions()
    ev = evs[0] if len(evs) == 1 else stack(evs)
    h = opts.prefix_hit_rate
    i_eff = max(1, round(input_tokens * (1 - h)))
    ctx_mem = i_eff + output_tokens  # a sequence's own KV; the shared prefix is held once
    # KV per sequence depends on the model and split, not the GPU: alike in every row
    shared = ev.kv_bytes_per_gpu(1, input_tokens - i_eff) if h > 0 else 0.0
    per_seq = float(ev.slot_bytes(ctx_mem))
    slots = [
        max(0, min(int(max(e.kv_budget - shared, 0) // max(per_seq, 1e-9)), _seq_cap(e)))
        for e in evs
    ]
    one = ev.prefill(1, i_eff)
    first = np.reshape(np.asarray(one.compute + one.comm, float), -1).tolist()
    alone = np.reshape(np.asarray(one.total, float), -1).tolist()
    b = knots_upto(max(max(slots), 1))
    ctx = input_tokens + output_tokens / 2
    chunk = opts.chunk_tokens or ev.engine.max_num_batched_tokens
    spec = opts.speculative
    bb = np.maximum(b, 1)  # an iteration with only prefill still streams the weights
    dec = ev.decode_step(bb, ctx)
    if spec is None:
        it = dec.total
        e = 1.0
    else:
        verify = ev.decode_step(bb, ctx, tokens_per_seq=spec.tokens + 1).total
        it = verify + spec.tokens * spec.cost_ratio() * dec.total
        e = spec.tokens_per_step()
    # the experts a prompt chunk streams beyond a lone decoding sequence's (bb[0] = 1)
    piece = one if i_eff <= chunk else ev.prefill(1, chunk)  # one iteration's share
    own = np.reshape(np.asarray(piece.expert_memory - piece.expert_compute, float), -1)
    lone = np.atleast_2d(np.asarray(dec.expert_memory, float))[:, 0]
    experts = np.broadcast_to(np.maximum(own - lone, 0.0), (len(evs),)).tolist()
    it = np.atleast_2d(np.asarray(it, float))
    kv = np.asarray(ev.kv_bytes_per_gpu(b, ctx_mem), float) + shared
    widths = last_knot(slots) + 1  # each one's knots_upto
    out = []
    for g, (e_g, n, width) in enumerate(zip(evs, slots, widths.tolist(), strict=True)):
        out.append(
            Steps(
                slots=n,
                input_tokens=i_eff,
                output_tokens=output_tokens,
                chunk=chunk,
                # under load, prompts pipeline through the PP stages, which work at once: a
                # prompt token's marginal cost is one stage's share; alone, a prompt crosses
                # every stage
                s_token=(first[g] / ev.pp + encoder_s[g]) / i_eff,
                s_alone=alone[g] + encoder_s[g],
                stages=ev.pp,
                s_first=first[g] + encoder_s[g],
                tokens_per_iter=e,
                iter_table=it[g, :width],
                kv_gb_table=kv[:width] / 1e9,
                weights_gb=e_g.weight_bytes / 1e9,
                fixed_gb=(e_g.activation_bytes + e_g.overhead_bytes) / 1e9,
                request_s=stack_seconds(e_g.engine, e_g.machine.eff),
                prompt_experts_s=experts[g],
            )
        )
    return out
