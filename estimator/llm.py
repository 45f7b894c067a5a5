"""A language-model replica: memory box, prefill pass, decode step, and the static-batch estimate
on an idle replica.

:class:`Evaluator` prepares every scalar that depends on (model, GPU, split, formats, engine)
once; its methods then evaluate numpy arrays of batch sizes and contexts at once, which is
what the planner and the benchmark use. :func:`estimate_replica` is the one-shot call for
one static batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from . import comm
from .bands import bands_for
from .caveats import measured_caveats, shape_caveats
from .efficiency import Efficiency, calibration_note, efficiency_key
from .engine_limits import engine_cap_refusal, max_model_len_refusal, state_pool_refusal
from .engines import (
    Engine,
    attention_precision,
    kv_budget_bytes,
    runtime_overhead_bytes,
    split_state_pool,
    stack_seconds,
)
from .engines import engine as get_engine
from .formats import kv_format, weight_format
from .hardware import Accelerator
from .memory_box import MemoryBox
from .model import LanguageModel
from .parallel import Parallel, check_block_quant, check_split
from .roofline import ACT_BYTES, Machine, StepTimes, slower
from .routing import ep_note, ranks_reached, slowest_rank_touch

# quantisation recipes (AWQ, GPTQ, ModelOpt FP8/FP4) keep embeddings and lm_head 16-bit
EMBED_BYTES = 2.0


class Workload(BaseModel):
    """One request shape. ``batch`` = concurrent sequences per replica (static batch)."""

    model_config = ConfigDict(extra="forbid")
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    batch: int = Field(1, ge=1)


class Evaluator:
    """Everything for one (model, GPU, split, formats, engine); array-friendly methods."""

    def __init__(
        self,
        model: LanguageModel,
        gpu: Accelerator,
        par: Parallel,
        weights: str = "bf16",
        kv: str = "bf16",
        engine: str | Engine = "vllm",
        efficiency: Efficiency | None = None,
    ):
        check_split(model, par)
        self.model, self.gpu, self.par = model, gpu, par
        self.wfmt, self.kvfmt = weight_format(weights), kv_format(kv)
        self.engine, w = get_engine(engine), self.wfmt.name
        check_block_quant(model, par, w)
        att = attention_precision(self.engine, w, self.kvfmt.name, gpu.family)
        eng, dense = self.engine.name, not model.is_moe  # dense: its request time's regime
        self.machine = Machine(gpu, par, self.wfmt.compute, efficiency, eng, att, dense=dense)
        notes = (self.machine.precision_note, comm.pcie_ring_note(gpu, par), ep_note(model, par.ep))
        self.notes = [n for n in notes if n] + measured_caveats(model, gpu, self.engine, w)
        if efficiency is None and (note := calibration_note(efficiency_key(gpu))):
            self.notes.append(f"{gpu.name}: {note}")
        self.precision = self.machine.precision
        tp, pp = par.tp, par.pp
        self.tp, self.pp, self.gpus = tp, pp, tp * pp
        c, m = model.counts, model
        wb = self.wfmt.bytes_per_value

        # --- weights per GPU (bytes) ----------------------------------------------------
        attn_div = 1 if par.attention_dp else tp  # attention-DP replicates attention weights
        layer_nonexpert = (
            c.attention / attn_div
            + (c.mamba + c.linear + c.dense_mlp + c.moe_always_on) / tp
            + c.norms
        )
        layer_expert = c.routed_experts / tp  # EP or expert-TP: each GPU holds 1/tp of experts
        self._head_bytes = (c.embed + c.lm_head) * EMBED_BYTES / tp
        if pp == 1:
            share = 1.0
            ends = self._head_bytes + c.extra * EMBED_BYTES / tp
        else:  # the heaviest stage: its layers plus the embedding (+vision) or the lm_head
            share = -(-m.num_layers // pp) / m.num_layers
            ends = max(c.embed + c.extra, c.lm_head) * EMBED_BYTES / tp
        self.weight_bytes = (layer_nonexpert + layer_expert) * wb * share + ends
        # streamed per pass, per GPU, by a balanced stage: 1/pp of the layers and of the lm_head
        # (a decode step reads its slowest stage's: decode_step)
        lm_stream = (c.lm_head if c.lm_head else c.embed) * EMBED_BYTES / tp
        self._layer_stream = layer_nonexpert * wb / pp  # the weight format's bytes
        self._lm_stream = lm_stream / pp  # 16-bit whatever the format
        self._expert_stream = layer_expert * wb / pp

        # --- KV / state per sequence per GPU ------------------------------------------
        a = m.attention
        if a is None:
            self.kv_share = 0.0
        elif par.attention_dp:
            self.kv_share = 1.0 / tp  # each GPU keeps its own sequences' whole cache
        elif a.kind == "mla":
            self.kv_share = 1.0  # the latent has no heads to split: every TP rank holds it all
            if tp > 1:
                self.notes.append(
                    "MLA under TP: every rank holds the whole latent KV cache "
                    "(use attention_dp to spread sequences instead)"
                )
        else:
            self.kv_share = 1.0 / min(tp, a.num_kv_heads)  # heads beyond TP=kv replicate
            if tp > a.num_kv_heads:
                self.notes.append(f"TP={tp} > {a.num_kv_heads} KV heads: KV heads replicate")
        self.kv_share /= pp
        self.state_bytes = m.state_bytes_per_sequence() / tp / pp
        if self.state_bytes > 0:
            self.notes.append(
                f"hybrid: each sequence also holds {self.state_bytes / 1e6:,.1f} MB of "
                "recurrent state per GPU, whatever its length: the KV-cache tokens count the "
                "pool as attention KV alone, the largest batch holds each its state too"
            )

        # --- activations and overhead (per GPU, bytes) ---------------------------------
        h = m.hidden_size
        qkv = (
            (a.num_heads * a.head_dim + 2 * a.num_kv_heads * a.head_dim)
            if a and a.kind == "gqa"
            else (a.num_heads * (a.head_dim + a.v_dim) if a else 0)
        )
        widest = max(
            m.dense_mlp.intermediate_size if m.dense_mlp else 0,
            (m.moe.top_k * m.moe.expert_intermediate_size + m.moe.shared_intermediate_size)
            if m.moe
            else 0,
            2 * m.mamba.d_inner if m.mamba else 0,
        )
        per_token = ACT_BYTES * (4 * h + (qkv + 3 * widest) / tp)
        if m.moe:  # the fused-MoE kernel's output cache: every token's top-k expert outputs
            per_token += ACT_BYTES * m.moe.top_k * h
        if self.engine.budget == "vllm":
            # vLLM's profile run samples one token for each of its dummy requests (up to its
            # sequence cap): the sampler's peak per logit is the engine's (Engine.
            # sampler_bytes); its KV budget is what that peak leaves (the logits are
            # all-gathered: every TP rank holds the whole vocabulary)
            reqs = min(self.engine.max_num_seqs, self.engine.max_num_batched_tokens)
            logits = reqs * m.vocab_size * self.engine.sampler_bytes
        else:  # fp32 logits of at most 256 sequences sampled at once
            logits = min(256, self.engine.max_num_batched_tokens) * m.vocab_size / tp * 4.0
        self.activation_bytes = self.engine.max_num_batched_tokens * per_token + logits
        self.act_traffic = self._activation_traffic_per_token()
        self.overhead_bytes = runtime_overhead_bytes(self.gpus)
        cap = gpu.memory_bytes
        budget = kv_budget_bytes(
            self.engine, cap, self.weight_bytes, self.activation_bytes, self.gpus
        )
        # the engine's budget, and never more than the device has left (a fraction near 1
        # leaves no room for the context and graphs outside it)
        room = cap - self.weight_bytes - self.activation_bytes - self.overhead_bytes
        self.kv_budget = min(budget, room)
        self.capacity = cap
        # a hybrid's recurrent states: in the KV pool, or one of their own (SGLang)
        self.kv_budget, self.state_pool, self.state_request_cap, notes = split_state_pool(
            self.engine, self.kv_budget, self.state_bytes
        )
        self.notes += notes
        # the number an engine logs at start-up ("GPU KV cache size: N tokens"): tokens of
        # full-context KV the replica's budget holds (each GPU holds its share of each token)
        per_token = m.kv_bytes_per_token(self.kvfmt.bytes_per_value) * self.kv_share if a else 0.0
        self.kv_cache_tokens = int(max(self.kv_budget, 0.0) // per_token) if per_token > 0 else None
        # each attention-data-parallel rank runs its own scheduler and batch (TensorRT-LLM
        # enable_attention_dp, vLLM/SGLang DP attention), so the engine's cap is per rank
        self.max_seqs = self.engine.max_num_seqs * (tp if par.attention_dp else 1)

        # --- per-token compute ----------------------------------------------------------
        self.matmul_flops_token = 2.0 * m.matmul_params_per_token
        # of which the routed experts' (a token's top-k experts in every MoE layer)
        self.expert_flops_token = (
            2.0 * c.routed_experts * m.moe.top_k / m.moe.num_experts if m.is_moe else 0.0
        )
        # and the lm_head's, run only for tokens sampled from: a prompt's last one in prefill
        # (vLLM's logits indices, SGLang's logits processor, TensorRT-LLM's default)
        head = 2.0 * (c.lm_head or c.embed)
        self.layers_per_stage = -(-m.num_layers // pp)
        self._dense_flops_gpu = (self.matmul_flops_token - self.expert_flops_token - head) / tp / pp
        self._head_flops_gpu = head / self.gpus
        self._expert_flops_gpu = self.expert_flops_token / self.gpus

    def _activation_traffic_per_token(self) -> float:
        """HBM bytes one token's activations move per GPU per forward step in one pipeline
        stage: every GEMM writes its output and the next kernel reads it back (16-bit);
        hidden-size tensors are whole on every TP rank, intermediate ones are 1/TP. This is
        what makes small-active MoE models stop scaling at large batch."""
        m, tp, h = self.model, self.tp, self.model.hidden_size
        a = m.attention
        total = 0.0
        for layer, n in m.layer_counts.items():
            per = 4 * h  # residual add and norm: read and write the hidden state
            if layer.mixer == "attention":
                q = a.num_heads * a.head_dim * (2 if a.output_gate else 1)  # gate rides with q
                kvd = 0 if a.kind == "mla" else 2 * a.num_kv_heads * a.head_dim
                per += 2 * h + 2 * (q + kvd) / tp + 2 * a.num_heads * a.v_dim / tp
            elif layer.mixer == "mamba":
                per += 2 * h + 6 * m.mamba.d_inner / tp
            elif layer.mixer == "linear":  # q, k, v, gate written and read
                la = m.linear
                per += 2 * h + 4 * (la.key_width + la.width) / tp
            if layer.mlp == "dense":
                per += 2 * h + 6 * m.dense_mlp.intermediate_size / tp
            elif layer.mlp == "moe":
                mo = m.moe
                per += 2 * h * (1 + mo.top_k)  # dispatch copies per routed expert
                per += (
                    6 * (mo.top_k * mo.expert_intermediate_size + mo.shared_intermediate_size) / tp
                )
            total += n * per
        return total * ACT_BYTES / self.pp

    def with_efficiency(self, eff: Efficiency) -> Evaluator:
        """A copy that runs with other efficiency factors (cheap: memory terms are shared)."""
        import copy

        ev = copy.copy(self)
        ev.machine = self.machine.with_efficiency(eff)
        return ev

    @property
    def eff(self) -> Efficiency:
        return self.machine.eff

    def _stream_scale(self) -> float:
        """Bytes a weight-only int4 kernel's stream costs per byte of a 16-bit one's
        (:attr:`Efficiency.int4_stream`): 1 for every other format."""
        return 1.0 / self.eff.int4_stream if self.wfmt.name == "int4" else 1.0

    @property
    def expert_stream(self) -> float:
        """Weight bytes of every routed expert per GPU, at the format's streaming cost."""
        return self._expert_stream * self._stream_scale()

    # ---- memory -----------------------------------------------------------------------
    def kv_bytes_per_gpu(self, batch, context):
        """KV cache + recurrent state per GPU for ``batch`` sequences at ``context`` tokens."""
        kv = self.model.kv_bytes_per_sequence(context, self.kvfmt.bytes_per_value)
        return np.asarray(batch, float) * (kv * self.kv_share + self.state_bytes)

    def slot_bytes(self, context):
        """Bytes per GPU one sequence at ``context`` tokens takes from :attr:`kv_budget`: its
        KV, and its recurrent state where the engine keeps states in the same pool."""
        kv = self.model.kv_bytes_per_sequence(context, self.kvfmt.bytes_per_value)
        return kv * self.kv_share + (0.0 if self.state_pool else self.state_bytes)

    def max_batch(self, context):
        """Largest batch whose KV fits at ``context`` tokens per sequence (0 if none)."""
        out = np.floor(np.maximum(self.kv_budget, 0) / np.maximum(self.slot_bytes(context), 1e-9))
        out = np.minimum(out, 1e9)
        if self.state_request_cap is not None:  # the state pool's requests
            out = np.minimum(out, self.state_request_cap)
        return out.astype(np.int64)

    # ---- time -------------------------------------------------------------------------
    def _comm(self, tokens, share: float = 1.0):
        """Interconnect seconds for one stage's pass over ``tokens`` tokens: per layer, the
        attention's all-reduce and the MLP's, plus the send to the next pipeline stage. Under
        attention-DP no collective for attention; the MLP gathers and scatters the tokens
        (one all-reduce's bytes), or under EP dispatches them to their experts' ranks and
        combines them back (two all-to-alls). EP beside tensor-parallel attention moves no
        tokens (every rank holds them all; the MLP's all-reduce sums the experts' outputs:
        vLLM dispatches only when data-parallel). ``share``: this stage's layers / (L/pp)."""
        m, mc = self.model, self.machine
        layers = m.num_layers / self.pp * share
        ar = mc.tp_comm(tokens, m.hidden_size, layers, per_layer=1)
        attention = 0.0 if self.par.attention_dp else ar
        mlp = ar
        if self.tp > 1 and self.par.ep > 1 and self.par.attention_dp:
            moe_frac = m.num_moe_layers / m.num_layers
            msg = np.asarray(tokens, float) * m.hidden_size * ACT_BYTES
            reach = ranks_reached(m.moe.top_k, m.moe.num_experts, self.par.ep)
            a2a = comm.alltoall(mc.fabric, self.par.ep, msg * reach / self.tp)
            mlp = ar * (1 - moe_frac) + layers * moe_frac * 2 * a2a
        return attention + mlp + mc.pp_comm(tokens, m.hidden_size)

    def decode_step(self, batch, context, tokens_per_seq: int = 1) -> StepTimes:
        """One decode step: every sequence of ``batch`` adds a token at ``context``.
        ``tokens_per_seq`` > 1 is a speculative verification step: each sequence runs that
        many tokens through the model (compute, activations, experts, collectives scale with
        it) but its KV cache is read once."""
        m = self.model
        b = np.asarray(batch, float)
        micro = np.maximum(b / self.pp, 1.0) if self.pp > 1 else b  # PP: micro-batches in flight
        q = tokens_per_seq
        kv = m.kv_bytes_per_sequence(context, self.kvfmt.bytes_per_value) * self.kv_share
        at = micro * q * (m.attention_flops_decode(context) + m.ssm_flops_per_token()) / self.gpus
        args = (micro * q, micro * (kv + 2 * self.state_bytes), at, b, self.pp)
        if self.pp == 1:
            return self._pass(*args)
        # PP: a token crosses every stage in turn, and the micro-batches advance at the pace
        # of the slowest stage: the last holds the lm_head (16-bit, often several layers'
        # bytes in a quantised model) beside floor(L/pp) layers; the others ceil(L/pp) at
        # most (vLLM get_pp_indices, TensorRT-LLM Mapping.pp_layers)
        if m.num_layers % self.pp == 0:  # every stage alike but the last's lm_head: the last
            return self._pass(*args, stage=(1.0, self.pp))
        per = self.layers_per_stage / m.num_layers * self.pp  # of a balanced stage's layers
        last = (m.num_layers // self.pp) / m.num_layers * self.pp
        return slower(self._pass(*args, stage=(per, 0.0)), self._pass(*args, stage=(last, self.pp)))

    def prefill(self, batch, input_tokens) -> StepTimes:
        """Prefill of ``batch`` prompts of ``input_tokens`` arriving together on an idle replica.
        PP pipelines the prompts: (batch + pp − 1) stage passes of one prompt's work."""
        m = self.model
        b = np.asarray(batch, float)
        n = np.asarray(input_tokens, float)
        kv = m.kv_bytes_per_sequence(n, self.kvfmt.bytes_per_value) * self.kv_share
        at = b * (m.attention_flops_prefill(n) + n * m.ssm_flops_per_token()) / self.gpus
        # pipeline fill: the prompts stream through the stages, one prompt crosses them all
        passes = 1.0 if self.pp == 1 else (b + self.pp - 1) / b
        return self._pass(b * n, b * (kv + self.state_bytes), at, b, passes, logits=b)

    def _pass(
        self, tokens, attn_bytes, attn_flops, seqs, passes, logits=None, stage=(1.0, 1.0)
    ) -> StepTimes:
        """One stage pass of ``tokens`` tokens: the dense GEMMs (weights and activations; the
        lm_head over the ``logits`` tokens sampled from, default all), the routed experts'
        grouped GEMMs (the experts those tokens touch; under EP on the busiest rank) and the
        attention kernels (``attn_bytes`` of KV cache and state, ``attn_flops``), each its own
        roofline. ``stage``: the stage's layers and lm_head over a balanced stage's (1/pp)."""
        m, (ls, hs) = self.model, stage
        moe, ep = (m.moe, self.par.ep) if m.is_moe else (None, 1)
        touched = slowest_rank_touch(moe.top_k, moe.num_experts, ep, tokens) if moe else 0.0
        heads = tokens if logits is None else logits
        return self.machine.step(
            (self._layer_stream * self._stream_scale() + tokens * self.act_traffic) * ls
            + self._lm_stream * hs,
            tokens * self._dense_flops_gpu * ls,
            attn_flops * ls,
            self._comm(tokens, ls),
            self.layers_per_stage,
            seqs,
            passes,
            attn_bytes=attn_bytes * ls,
            expert_bytes=self.expert_stream * touched * ls,
            expert_flops=tokens * self._expert_flops_gpu * ls if m.is_moe else 0.0,
            head_flops=heads * self._head_flops_gpu * hs,
        )


@dataclass
class Estimate:
    model: str
    gpu: str
    parallel: dict
    weights_format: str
    kv_format: str
    compute_precision: str
    engine: str
    workload: dict
    attention_precision: str  # the attention math's (engines.attention_precision)
    fits: bool
    memory_gb: MemoryBox
    max_batch: int
    prefill_s: float
    serving_stack_s: float  # of ttft_s, the serving stack's (engines.stack_seconds)
    ttft_s: float
    tpot_s: float
    per_user_tokens_per_s: float
    decode_tokens_per_s: float
    output_tokens_per_s: float
    total_output_tokens_per_s: float
    e2e_latency_s: float
    bottleneck: str
    prefill_bottleneck: str
    decode_times_s: dict
    prefill_times_s: dict
    shares: dict
    interconnect: str
    notes: list[str] = field(default_factory=list)
    shortfall_gb: float = 0.0
    # when memory suffices but an engine rule refuses the batch (max_num_seqs,
    # max_model_len): that rule
    refused_by: str | None = None
    kv_cache_tokens: int | None = None  # what the engine logs as "GPU KV cache size"
    bands: dict = field(default_factory=dict)  # p10-p50-p90 from cross-validated residuals

    def to_dict(self) -> dict:
        return asdict(self)


def estimate_replica(
    model: LanguageModel,
    gpu: Accelerator,
    parallel: Parallel,
    workload: Workload,
    weights: str = "bf16",
    kv: str = "bf16",
    engine: str | Engine = "vllm",
    efficiency: Efficiency | None = None,
) -> Estimate:
    """Estimate one configuration. Decode is evaluated at the mean context of a request's
    decode phase (input + output/2); memory at its end (input + output)."""
    ev = Evaluator(model, gpu, parallel, weights, kv, engine, efficiency)
    b, i, o = workload.batch, workload.input_tokens, workload.output_tokens
    end_ctx = i + o
    kv_gb = float(ev.kv_bytes_per_gpu(b, end_ctx)) / 1e9
    weights_gb = ev.weight_bytes / 1e9
    act_gb, over_gb = ev.activation_bytes / 1e9, ev.overhead_bytes / 1e9
    total = weights_gb + kv_gb + act_gb + over_gb
    cap = ev.capacity / 1e9
    usable = (ev.kv_budget + ev.state_pool) / 1e9 + weights_gb + act_gb + over_gb
    box = MemoryBox(
        weights=weights_gb,
        kv_cache=kv_gb,
        activations=act_gb,
        overhead=over_gb,
        total=total,
        capacity=cap,
        usable=min(usable, cap),
    )
    max_b = int(ev.max_batch(end_ctx))
    fits = b <= max_b
    dec = ev.decode_step(b, i + o / 2)
    pre = ev.prefill(b, i)
    tpot = float(dec.total)
    prefill_s = float(pre.total)
    # the prefill pass itself samples the first token; the serving stack adds its own time
    stack_s = stack_seconds(ev.engine, ev.machine.eff)
    ttft = prefill_s + stack_s
    e2e = ttft + (o - 1) * tpot
    cycle = prefill_s + (o - 1) * tpot
    replica_out = b * o / cycle
    notes = list(ev.notes) + shape_caveats(model, gpu, ev.engine, ev.wfmt.name, i, o)
    if ctx_note := model.context_note(end_ctx):
        notes.append(ctx_note)
    if ev.weight_bytes > ev.capacity:
        notes.append("weights alone exceed GPU memory")
    refused_by = state_pool_refusal(ev, b, max_b)
    if fits:
        refused_by = max_model_len_refusal(ev, end_ctx, notes) or engine_cap_refusal(ev, b)
        fits = refused_by is None
        if refused_by:
            notes.append(refused_by)
    shares = {
        "hbm_bandwidth_in_decode": float(
            dec.bytes_per_gpu * parallel.pp / (tpot * gpu.bandwidth_bytes_s)
        ),
        "compute_in_prefill": float(
            pre.flops_per_gpu
            * (b + parallel.pp - 1)
            / b
            / (prefill_s * gpu.peak_flops(ev.precision))
        ),
        "interconnect_in_decode": float(dec.comm / tpot),
        "interconnect_in_prefill": float(pre.comm / prefill_s),
    }

    def times(s: StepTimes) -> dict:
        return {k: float(getattr(s, k)) for k in ("memory", "compute", "comm", "overhead", "total")}

    return Estimate(
        model=model.name,
        gpu=gpu.name,
        parallel=parallel.model_dump(),
        weights_format=ev.wfmt.name,
        kv_format=ev.kvfmt.name,
        compute_precision=ev.precision,
        engine=ev.engine.name,
        attention_precision=ev.machine.attn_precision,
        workload=workload.model_dump(),
        fits=bool(fits),
        memory_gb=box,
        max_batch=max_b,
        prefill_s=prefill_s,
        serving_stack_s=stack_s,
        ttft_s=ttft,
        tpot_s=tpot,
        per_user_tokens_per_s=1.0 / tpot,
        decode_tokens_per_s=b / tpot,
        output_tokens_per_s=replica_out,
        total_output_tokens_per_s=replica_out * parallel.replicas,
        e2e_latency_s=e2e,
        bottleneck=str(dec.bottleneck()),
        prefill_bottleneck=str(pre.bottleneck()),
        decode_times_s=times(dec),
        prefill_times_s=times(pre),
        shares=shares,
        interconnect=comm.group_link(ev.machine.fabric, parallel.gpus_per_replica),
        notes=notes,
        shortfall_gb=max(0.0, total - box.usable),
        refused_by=refused_by,
        kv_cache_tokens=ev.kv_cache_tokens,
        bands=bands_for(gpu, ttft, tpot, replica_out, ev.model),
    )
