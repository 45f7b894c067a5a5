"""Speech recognition (Whisper): a conv stem and encoder over each 30 s window, then an
autoregressive decoder with a per-stream cross-attention cache; real-time streams at a
maximum real-time factor."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..efficiency import EngineHost, engine_host
from ..engines import SPEECH_ENGINES, family_engine
from ..formats import kv_format, weight_format
from ..hardware import Accelerator
from ..parallel import Parallel
from ..roofline import ACT_BYTES, Machine
from ..stack import Stack
from .base import (
    FamilyEstimate,
    FamilyOptions,
    config_value,
    memory,
    result,
    stack_pass,
    tp_machine,
)
from .registry import Family, FamilyPreset, register

# The engine decides Whisper's speed more than the GPU does: published runs of the eager
# engines are host-bound, 5-20x slower than the GPU's roofline (docs/VALIDATION.md, 'Other
# model families'), so each engine adds the host time per decoding step that
# `planner calibrate` fits from its published runs (estimator/calibration.yaml,
# family_engines.asr). Graph-captured engines have no entry: the LLM-fitted per-step costs.
# the engines whose host loop bounds them: each has its host time fitted from its published runs
HOST_FITTED = ("faster-whisper", "transformers", "openai-whisper")
DEFAULT_ASR_ENGINE = next(iter(SPEECH_ENGINES))  # the table's first (estimator.engines)


def asr_engine(name: str | None) -> str:
    """A speech engine's name, checked (None: the default)."""
    return family_engine(name, SPEECH_ENGINES, "speech")


class AsrModel(BaseModel):
    """Whisper: a conv stem and encoder over a 30 s log-mel window (1500 frames after the
    stride-2 conv), and an autoregressive decoder with cross-attention to it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["asr"] = "asr"
    encoder: Stack
    decoder: Stack
    n_mels: int
    vocab: int
    source_positions: int = 1500
    target_positions: int = 448
    window_s: float = 30.0

    @property
    def params(self) -> int:
        d = self.encoder.hidden
        stem = self.n_mels * d * 3 + d + d * d * 3 + d  # two conv1d, kernel 3
        enc = stem + self.source_positions * d + self.encoder.params() + 2 * d
        dd = self.decoder.hidden
        dec = (self.vocab + self.target_positions) * dd + self.decoder.params() + 2 * dd
        return enc + dec  # the output projection is tied to the token embedding

    @property
    def stem_flops_per_window(self) -> float:
        d, frames = self.encoder.hidden, 2 * self.source_positions
        return 2 * (self.n_mels * d * 3 * frames + d * d * 3 * self.source_positions)


def build_whisper(p: FamilyPreset) -> AsrModel:
    c, w = p.config, p.name
    d = config_value(c, "d_model", w)

    def stack(prefix: str, decoder: bool) -> Stack:
        return Stack(
            layers=config_value(c, f"{prefix}_layers", w),
            hidden=d,
            heads=config_value(c, f"{prefix}_attention_heads", w),
            ffn=config_value(c, f"{prefix}_ffn_dim", w),
            k_bias=False,
            cross_attention=decoder,
            causal=decoder,
        )

    return AsrModel(
        name=w,
        display_name=p.display_name,
        encoder=stack("encoder", False),
        decoder=stack("decoder", True),
        n_mels=config_value(c, "num_mel_bins", w),
        vocab=config_value(c, "vocab_size", w),
        source_positions=c.get("max_source_positions", 1500),
        target_positions=c.get("max_target_positions", 448),
    )


def asr_times(
    model: AsrModel,
    mc: Machine,
    wb: float,
    kvb: float,
    streams,
    beam: int,
    tokens: int,
    host: EngineHost | None = None,
):
    """(encoder pass, decoder step, decoder seconds, engine host seconds) for one 30 s window
    of ``streams`` streams. The engine's host time per step is added to the GPU's, not
    overlapped: these engines synchronise every step (stopping checks, beam bookkeeping)."""
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
        kv_bytes=(streams * cross_kv + seqs * self_kv) / mc.tp,
    )
    h = host or EngineHost()
    t_host = tokens * dec.layers * (h.layer_us + seqs * h.layer_seq_us) * 1e-6
    return t_enc, step, tokens * step.total + t_host, t_host


def _memory(model: AsrModel, mc: Machine, wb: float, kvb: float, streams, beam: int, tokens: int):
    """Memory box of ``streams`` streams: each holds its cross-attention cache of the
    encoder output and its beams' self-attention cache; the encoder's activations peak."""
    dec, enc = model.decoder, model.encoder
    kv_b = streams * dec.kv_bytes_per_token(kvb) * (model.source_positions + beam * tokens) / mc.tp
    act = (
        streams
        * model.source_positions
        * ACT_BYTES
        * (4 * enc.hidden + (3 * enc.hidden + enc.ffn) / mc.tp)
    )
    return memory(mc, model.params * wb / mc.tp, act, kv_b, streams)


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
    engine: str | None = None,
) -> FamilyEstimate:
    """``batch`` streams transcribed together, window by window (30 s each), by ``engine``
    (:data:`SPEECH_ENGINES`). ``tokens_per_audio_s``: text tokens per second of speech (~150
    words/min at ~1.3 tokens per word); ``streams_per_replica``: real-time streams at
    ``max_rtf`` or better."""
    eng = asr_engine(engine)
    host = engine_host("asr", eng)
    mc = tp_machine(model.name, [model.encoder, model.decoder], gpu, par, weights)
    wb, kvb = weight_format(weights).bytes_per_value, kv_format(kv).bytes_per_value
    windows = int(np.ceil(audio_seconds / model.window_s))
    tokens = max(1, round(tokens_per_audio_s * min(audio_seconds, model.window_s)))
    t_enc, step, t_dec, t_host = asr_times(model, mc, wb, kvb, batch, beam, tokens, host)
    per_window = float(t_enc.total + t_dec)
    mem = _memory(model, mc, wb, kvb, batch, beam, tokens)
    total = windows * per_window
    streams, _ = asr_streams_per_replica(
        model, gpu, par, weights, max_rtf, beam, tokens_per_audio_s, kv, engine=eng
    )
    metrics = {
        "engine": eng,
        "encoder_s": windows * float(t_enc.total),
        "decoder_s": windows * float(t_dec),
        "host_s": windows * float(t_host),
        "decoder_steps": windows * tokens,
        "decoder_layers": model.decoder.layers,
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
    # the engine's host loop is the bottleneck when it outlasts the GPU's step
    neck = "host" if float(t_host) > tokens * float(step.total) else str(step.bottleneck())
    est = result(model, "asr", mc, weights, mem, neck, metrics)
    est.notes.append(engine_note(eng))
    return est


def engine_note(engine: str | None) -> str:
    """What a speech estimate assumes of its engine, and where its host time comes from."""
    eng = asr_engine(engine)
    host = engine_host("asr", eng)
    if host.rows:
        return (
            f"engine {eng}: {SPEECH_ENGINES[eng]}; its host time per decoder layer per step "
            f"({host.layer_us:.0f} us + {host.layer_seq_us:.1f} us per sequence) is fitted "
            f"on {host.rows} published runs (docs/VALIDATION.md)"
        )
    return (
        f"engine {eng}: {SPEECH_ENGINES[eng]}; no engine-specific host time fitted (no "
        "published run), so this is as fast as the GPU allows: eager engines measure 5-20x "
        "slower (docs/VALIDATION.md)"
    )


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
    engine: str | None = None,
) -> tuple[int, int]:
    """Real-time streams one replica sustains: the most audio-seconds per second at a batch
    whose per-window latency keeps each stream at or under ``max_rtf``, and fits memory.
    Returns (streams, batch)."""
    host = engine_host("asr", asr_engine(engine))
    mc = tp_machine(model.name, [model.encoder, model.decoder], gpu, par, weights)
    wb, kvb = weight_format(weights).bytes_per_value, kv_format(kv).bytes_per_value
    tokens = max(1, round(tokens_per_audio_s * model.window_s))
    b = np.unique(np.round(np.geomspace(1, limit, 64)))
    t_enc, _, t_dec, _ = asr_times(model, mc, wb, kvb, b, beam, tokens, host)
    t = np.asarray(t_enc.total + t_dec, float)
    _, fits, _ = _memory(model, mc, wb, kvb, b, beam, tokens)
    ok = fits & (t <= max_rtf * model.window_s)
    if not ok.any():
        return 0, 0
    rate = np.where(ok, b * model.window_s / t, 0.0)
    i = int(np.argmax(rate))
    return int(np.floor(rate[i])), int(b[i])


def _estimate(
    model: AsrModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    return estimate_asr(
        model,
        gpu,
        par,
        weights,
        o.batch,
        o.audio_seconds,
        o.beam,
        kv=o.kv,
        max_rtf=o.max_rtf,
        engine=o.engine,
    )


register(Family("asr", build_whisper, _estimate, engines=tuple(SPEECH_ENGINES)))
