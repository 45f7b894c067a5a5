"""Forward estimates for the non-LLM families, on the shared roofline.

Each family's work is a sequence of stack passes (bidirectional encoders, ViTs) or decode
steps (Whisper's decoder); each pass is ``Machine.step`` over the bytes it streams (weights,
activations, cached keys and values) and the FLOPs it runs, with the TP collectives of its
layers. Batches are arrays, as for the LLMs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import EstimatorError, SplitError
from ..formats import kv_format, weight_format
from ..hardware import Accelerator
from ..memory import runtime_overhead_bytes
from ..parallel import Parallel
from ..roofline import ACT_BYTES, Machine, StepTimes
from ..stack import Stack
from .models import AsrModel, EncoderModel, FamilyModel, JepaModel

USABLE = 0.9  # serving frameworks keep ~10% of memory back (vLLM's default policy)
# Whisper is timed as an optimised engine would run it (fused kernels, no per-token host
# cost). Published HF-pipeline and faster-whisper runs are 6-20x slower than that
# (validation/nonllm_measured_extra.csv), so the estimate says which engine it assumes.
ASR_ENGINE_NOTE = (
    "Whisper speed assumes an optimised engine (TensorRT-LLM class: fused kernels, CUDA "
    "graphs, no per-token Python); published HF Transformers pipeline and faster-whisper "
    "runs measure 6-20x slower (docs/VALIDATION.md, 'Other model families')"
)
EMBED_BYTES = 2.0


def _stacks(model: FamilyModel) -> list[Stack]:
    if isinstance(model, EncoderModel):
        return [model.stack]
    if isinstance(model, AsrModel):
        return [model.encoder, model.decoder]
    return [model.encoder] + ([model.predictor] if model.predictor else [])


def machine_for(model: FamilyModel, gpu: Accelerator, par: Parallel, weights: str) -> Machine:
    """These families run TP only (no PP/EP): TP divides every stack's attention heads."""
    if par.pp > 1 or par.ep > 1 or par.attention_dp:
        raise SplitError(f"{model.name}: only tensor parallelism is modelled for this family")
    for s in _stacks(model):
        if s.heads % par.tp or s.kvh % par.tp and par.tp % s.kvh:
            raise SplitError(
                f"TP={par.tp} does not divide the {s.heads} attention heads of "
                f"{model.name} (rule: TP must divide the number of attention heads)"
            )
    return Machine(gpu, par, weight_format(weights).compute)


def stack_pass(
    mc: Machine,
    s: Stack,
    wbytes: float,
    seqs,
    q_tokens,
    kv_tokens,
    memory_tokens=0,
    extra_bytes=0.0,
    extra_flops=0.0,
) -> StepTimes:
    """One pass of ``seqs`` sequences of ``q_tokens`` through a stack, attending to
    ``kv_tokens`` (and to ``memory_tokens`` by cross-attention)."""
    seqs = np.asarray(seqs, float)
    tokens = seqs * q_tokens
    stage_bytes = s.params() * wbytes / mc.tp + tokens * s.act_bytes_per_token(mc.tp) + extra_bytes
    mm = 2.0 * s.matmul_params() * tokens / mc.gpus + extra_flops / mc.gpus
    at = seqs * (s.attn_flops(q_tokens, kv_tokens) + s.cross_flops(q_tokens, memory_tokens))
    comm = mc.tp_comm(tokens, s.hidden, s.layers, per_layer=3 if s.cross_attention else 2)
    return mc.step(stage_bytes, mm, at / mc.gpus, comm, s.layers, seqs, passes=1)


@dataclass
class FamilyEstimate:
    model: str
    family: str
    gpu: str
    parallel: dict
    weights_format: str
    compute_precision: str
    fits: bool
    memory_gb: dict
    max_batch: int
    bottleneck: str
    metrics: dict
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        d = asdict(self)
        d.update(self.metrics)  # family metrics are top-level keys, as the CLI documents
        return d


def _result(
    model,
    family: str,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    mc: Machine,
    fits,
    box: dict,
    max_b,
    bottleneck: str,
    metrics: dict,
) -> FamilyEstimate:
    return FamilyEstimate(
        model.name,
        family,
        gpu.name,
        par.model_dump(),
        weights,
        mc.precision,
        bool(fits),
        box,
        int(max_b),
        bottleneck,
        metrics,
        [mc.precision_note] if mc.precision_note else [],
    )


def _memory(mc: Machine, weights_b: float, act_b, kv_b, batch) -> tuple[dict, Any, Any]:
    over = runtime_overhead_bytes(mc.gpus)
    cap = mc.gpu.memory_bytes
    total = weights_b + act_b + kv_b + over
    per_item = (np.asarray(act_b, float) + np.asarray(kv_b, float)) / np.maximum(batch, 1)
    max_b = np.floor((USABLE * cap - weights_b - over) / np.maximum(per_item, 1e-9))
    box = {
        "weights": weights_b / 1e9,
        "kv_cache": float(np.max(kv_b)) / 1e9,
        "activations": float(np.max(act_b)) / 1e9,
        "overhead": over / 1e9,
        "total": float(np.max(total)) / 1e9,
        "capacity": cap / 1e9,
        "usable": USABLE * cap / 1e9,
    }
    return box, total <= USABLE * cap, max_b


def _weights_bytes(model: FamilyModel, wbytes: float, tp: int) -> float:
    return model.params * wbytes / tp


def estimate_encoder(
    model: EncoderModel, gpu: Accelerator, par: Parallel, weights: str, batch: int, tokens: int
) -> FamilyEstimate:
    """One bidirectional pass over ``batch`` documents (reranker: query+document pairs) of
    ``tokens`` tokens each."""
    if model.max_tokens and tokens > model.max_tokens:
        # an error, not a note: serving stacks truncate, so the estimate would time text
        # the model never reads
        raise EstimatorError(
            f"{model.name} reads at most {model.max_tokens:,} tokens per input "
            f"(max_position_embeddings in its config); {tokens:,} asked. Split documents "
            f"into chunks of at most {model.max_tokens:,} tokens and count each chunk"
        )
    mc = machine_for(model, gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    s = model.stack
    st = stack_pass(mc, s, wb, batch, tokens, tokens)
    act = batch * tokens * ACT_BYTES * (4 * s.hidden + (3 * s.heads * s.hd + s.ffn) / mc.tp)
    box, fits, max_b = _memory(mc, _weights_bytes(model, wb, mc.tp), act, 0.0, batch)
    t = float(st.total)
    unit = "pairs" if model.family == "reranker" else "docs"
    metrics = {
        "s_per_batch": t,
        "docs_per_s": batch / t,
        "tokens_per_s": batch * tokens / t,
        "batch": batch,
        "input_tokens": tokens,
        "unit": unit,
    }
    return _result(
        model, model.family, gpu, par, weights, mc, fits, box, max_b, str(st.bottleneck()), metrics
    )


def asr_times(model: AsrModel, mc: Machine, wb: float, kvb: float, streams, beam: int, tokens: int):
    """(encoder seconds, decoder seconds) for one 30 s window of ``streams`` streams."""
    enc, dec = model.encoder, model.decoder
    frames = model.source_positions
    streams = np.asarray(streams, float)
    # encoder pass, plus every decoder layer's cross-attention K/V of the encoder output
    cross_kv_flops = dec.layers * 2 * 2 * dec.hidden * dec.hd * dec.kvh * frames
    t_enc = stack_pass(
        mc,
        enc,
        wb,
        streams,
        frames,
        frames,
        extra_flops=streams * (model.stem_flops_per_window + cross_kv_flops),
    )
    seqs = streams * beam
    cross_kv = dec.kv_bytes_per_token(kvb) * frames  # per stream (beams share it)
    self_kv = dec.kv_bytes_per_token(kvb) * tokens / 2  # mean context over the window
    step = stack_pass(
        mc,
        dec,
        wb,
        seqs,
        1,
        tokens / 2,
        memory_tokens=frames,
        extra_bytes=(streams * cross_kv + seqs * self_kv) / mc.tp,
    )
    return t_enc, step, tokens * step.total


def estimate_asr(
    model: AsrModel,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    audio_seconds: float,
    beam: int = 1,
    tokens_per_audio_s: float = 3.3,
    kv: str = "bf16",
    max_rtf: float = 0.5,
) -> FamilyEstimate:
    """``batch`` streams transcribed together, window by window (30 s each).
    ``tokens_per_audio_s``: text tokens per second of speech (~150 words/min at ~1.3 tokens
    per word); ``streams_per_replica``: real-time streams at ``max_rtf`` or better."""
    mc = machine_for(model, gpu, par, weights)
    wb, kvb = weight_format(weights).bytes_per_value, kv_format(kv).bytes_per_value
    windows = int(np.ceil(audio_seconds / model.window_s))
    tokens = max(1, round(tokens_per_audio_s * min(audio_seconds, model.window_s)))
    t_enc, step, t_dec = asr_times(model, mc, wb, kvb, batch, beam, tokens)
    per_window = float(t_enc.total + t_dec)
    dec = model.decoder
    kv_b = batch * dec.kv_bytes_per_token(kvb) * (model.source_positions + beam * tokens) / mc.tp
    act = (
        batch
        * model.source_positions
        * ACT_BYTES
        * (4 * model.encoder.hidden + (3 * model.encoder.hidden + model.encoder.ffn) / mc.tp)
    )
    box, fits, max_b = _memory(mc, _weights_bytes(model, wb, mc.tp), act, kv_b, batch)
    total = windows * per_window
    streams, _ = asr_streams_per_replica(
        model, gpu, par, weights, max_rtf, beam, tokens_per_audio_s, kv
    )
    metrics = {
        "encoder_s": windows * float(t_enc.total),
        "decoder_s": windows * float(t_dec),
        "s_per_batch": total,
        "rtf": total / audio_seconds,
        "audio_s_per_s": batch * audio_seconds / total,
        "streams": batch,
        "beam": beam,
        "tokens_per_window": tokens,
        "audio_seconds": audio_seconds,
        "streams_per_replica": streams,
        "max_rtf": max_rtf,
    }
    est = _result(
        model, "asr", gpu, par, weights, mc, fits, box, max_b, str(step.bottleneck()), metrics
    )
    est.notes.append(ASR_ENGINE_NOTE)
    return est


def asr_streams_per_replica(
    model: AsrModel,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    max_rtf: float = 0.5,
    beam: int = 1,
    tokens_per_audio_s: float = 3.3,
    kv: str = "bf16",
    limit: int = 4096,
) -> tuple[int, int]:
    """Real-time streams one replica sustains: the most audio-seconds per second at a batch
    whose per-window latency keeps each stream at or under ``max_rtf``, and fits memory.
    Returns (streams, batch)."""
    mc = machine_for(model, gpu, par, weights)
    wb, kvb = weight_format(weights).bytes_per_value, kv_format(kv).bytes_per_value
    tokens = max(1, round(tokens_per_audio_s * model.window_s))
    b = np.unique(np.round(np.geomspace(1, limit, 64)))
    t_enc, _, t_dec = asr_times(model, mc, wb, kvb, b, beam, tokens)
    t = np.asarray(t_enc.total + t_dec, float)
    dec = model.decoder
    kv_b = b * dec.kv_bytes_per_token(kvb) * (model.source_positions + beam * tokens) / mc.tp
    act = (
        b
        * model.source_positions
        * ACT_BYTES
        * (4 * model.encoder.hidden + (3 * model.encoder.hidden + model.encoder.ffn) / mc.tp)
    )
    _, fits, _ = _memory(mc, _weights_bytes(model, wb, mc.tp), act, kv_b, b)
    ok = fits & (t <= max_rtf * model.window_s)
    if not ok.any():
        return 0, 0
    rate = np.where(ok, b * model.window_s / t, 0.0)
    i = int(np.argmax(rate))
    return int(np.floor(rate[i])), int(b[i])


def estimate_jepa(
    model: JepaModel,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    frames: int,
    width: int,
    height: int,
    horizon: int = 0,
    samples: int = 0,
) -> FamilyEstimate:
    """Encode ``batch`` clips in one pass (attention over every space-time patch); for the
    action-conditioned model also plan: roll the predictor ``horizon`` steps for ``samples``
    candidate action sequences."""
    mc = machine_for(model, gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    n = model.tokens(frames, width, height)
    e = model.encoder
    st = stack_pass(mc, e, wb, batch, n, n)
    act = batch * n * ACT_BYTES * (4 * e.hidden + (3 * e.hidden + e.ffn) / mc.tp)
    box, fits, max_b = _memory(mc, _weights_bytes(model, wb, mc.tp), act, 0.0, batch)
    t = float(st.total)
    metrics: dict[str, Any] = {
        "patch_tokens": n,
        "s_per_clip": t,
        "s_per_batch": t,
        "clips_per_s": batch / t,
        "batch": batch,
        "frames": frames,
        "resolution": [width, height],
    }
    if model.predictor is not None and horizon and samples:
        p = model.predictor
        per_frame = (width // model.patch) * (height // model.patch)
        plan = float(stack_pass(mc, e, wb, 1, n, n).total)  # encode the current observation
        for h in range(1, horizon + 1):  # each step predicts the next frame for every sample
            plan += float(stack_pass(mc, p, wb, samples, per_frame, per_frame * h).total)
        metrics.update(s_per_plan=plan, horizon=horizon, samples=samples)
    return _result(
        model, "jepa", gpu, par, weights, mc, fits, box, max_b, str(st.bottleneck()), metrics
    )


def _component_time(mc: Machine, cost, wbytes: float, items) -> StepTimes:
    """One pass of a diffusion pipeline component over ``items`` images (or prompts)."""
    items = np.asarray(items, float)
    stage_bytes = cost.params * wbytes + items * cost.act_bytes
    comm = 0.0
    return mc.step(
        stage_bytes, items * cost.flops, items * cost.attn_flops, comm, cost.layers, items, passes=1
    )


def estimate_diffusion(
    model,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    width: int,
    height: int,
    steps: int,
    guidance: bool,
    frames: int = 1,
) -> FamilyEstimate:
    """``batch`` images (videos) generated together: the text encoders once per prompt (and
    per negative prompt with classifier-free guidance), the denoiser ``steps`` times over
    ``batch`` latents (doubled with guidance), the VAE decoder once per image. The denoiser
    runs in ``weights``; encoders and VAE in 16-bit, as the pipelines ship them. One GPU per
    replica: pipelines scale out by replicas."""
    if par.gpus_per_replica > 1:
        raise SplitError(
            f"{model.name}: diffusion pipelines run one GPU per replica here "
            "(sequence-parallel denoising is not modelled); use more replicas"
        )
    mc = Machine(gpu, par, weight_format(weights).compute)
    wb = weight_format(weights).bytes_per_value
    den = model.denoiser(width, height, frames)
    enc = model.encoders()
    vae = model.vae(width, height, frames)
    cfg = 2 if guidance else 1
    t_enc = (
        _component_time(Machine(gpu, par, "bf16"), enc, 2.0, batch * cfg) if enc.params else None
    )
    t_step = _component_time(mc, den, wb, batch * cfg)
    t_vae = _component_time(Machine(gpu, par, "bf16"), vae, 2.0, batch)
    enc_s = float(t_enc.total) if t_enc is not None else 0.0
    den_s = steps * float(t_step.total)
    vae_s = float(t_vae.total)
    total = enc_s + den_s + vae_s
    weights_b = den.params * wb + (enc.params + vae.params) * 2.0
    # peak activations: the VAE's largest feature maps or the denoiser's working set
    act = max(
        batch * vae.act_bytes / max(vae.layers, 1) * 4,
        batch * cfg * den.act_bytes / max(den.layers, 1) * 4,
    )
    box, fits, max_b = _memory(mc, weights_b, act, 0.0, batch)
    video = model.family == "diffusion_video"
    metrics: dict[str, Any] = {
        "text_encoder_s": enc_s,
        "denoiser_s": den_s,
        "vae_s": vae_s,
        "batch": batch,
        "steps": steps,
        "guidance": guidance,
        "resolution": [width, height],
        "s_per_batch": total,
    }
    if video:
        metrics.update(s_per_video=total, videos_per_hour=3600 * batch / total, frames=frames)
    else:
        metrics.update(s_per_image=total, images_per_s=batch / total)
    return _result(
        model,
        model.family,
        gpu,
        par,
        weights,
        mc,
        fits,
        box,
        max_b,
        str(t_step.bottleneck()),
        metrics,
    )


def estimate_var(
    model, gpu: Accelerator, par: Parallel, weights: str, batch: int, guidance: bool = True
) -> FamilyEstimate:
    """``batch`` images by next-scale prediction (10 passes for 256 px) and VQ-VAE decode."""
    mc = machine_for_stacks(model.name, [model.stack], gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    t, v, bottleneck = model.generate_times(mc, batch, wb, guidance)
    s = model.stack
    seqs = batch * (2 if guidance else 1)
    kv = seqs * s.kv_bytes_per_token(2.0) * model.tokens / mc.tp
    act = seqs * model.patch_nums[-1] ** 2 * ACT_BYTES * (4 * s.hidden + s.ffn / mc.tp)
    box, fits, max_b = _memory(mc, model.params * wb / mc.tp, act, kv, batch)
    total = t + v
    metrics = {
        "s_per_image": total,
        "s_per_batch": total,
        "images_per_s": batch / total,
        "transformer_s": t,
        "vae_s": v,
        "tokens_per_image": model.tokens,
        "batch": batch,
        "guidance": guidance,
    }
    return _result(
        model,
        "var",
        gpu,
        par,
        weights,
        mc,
        fits,
        box,
        max_b,
        bottleneck,
        metrics,
    )


def estimate_vla(
    model,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    cameras: int,
    horizon: int | None = None,
    flow_steps: int | None = None,
    control_hz: float = 50.0,
    execute: int | None = None,
) -> FamilyEstimate:
    """One action chunk for ``batch`` robots; ``robots_per_replica``: the most robots whose
    chunk arrives within the period a robot takes to execute ``execute`` actions."""
    mc = machine_for_stacks(
        model.name, [model.vision, model.prefix, model.expert], gpu, par, weights
    )
    h = horizon or model.horizon
    ex = execute or h
    period = ex / control_hz
    t = model.chunk_seconds(mc, batch, cameras, h, flow_steps)
    prefix_len = cameras * model.tokens_per_image + model.text_tokens
    kv = batch * model.prefix.kv_bytes_per_token(2.0) * prefix_len / mc.tp
    act = batch * cameras * model.patches_per_image * ACT_BYTES * 4 * model.vision.hidden
    box, fits, max_b = _memory(mc, model.params * 2.0 / mc.tp, act, kv, batch)
    robots = 0
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        if model.chunk_seconds(mc, b, cameras, h, flow_steps)["latency_s"] > period:
            break
        robots = b
    metrics = {
        "latency_ms": t["latency_s"] * 1e3,
        "vision_ms": t["vision_s"] * 1e3,
        "prefix_ms": t["prefix_s"] * 1e3,
        "action_expert_ms": t["action_expert_s"] * 1e3,
        "robots_per_replica": robots,
        "chunk_period_s": period,
        "cameras": cameras,
        "action_horizon": h,
        "control_hz": control_hz,
        "batch": batch,
        "s_per_batch": t["latency_s"],
    }
    return _result(model, "vla", gpu, par, weights, mc, fits, box, max_b, "memory", metrics)


def machine_for_stacks(name: str, stacks, gpu: Accelerator, par: Parallel, weights: str) -> Machine:
    if par.pp > 1 or par.ep > 1 or par.attention_dp:
        raise SplitError(f"{name}: only tensor parallelism is modelled for this family")
    for s in stacks:
        if s.heads % par.tp:
            raise SplitError(
                f"TP={par.tp} does not divide the {s.heads} attention heads of "
                f"{name} (rule: TP must divide the number of attention heads)"
            )
    return Machine(gpu, par, weight_format(weights).compute)
