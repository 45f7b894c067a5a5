"""Where aggregate throughput saturates: one replica's decode speed against its batch, from
one sequence up to the memory limit (``planner saturation``).

A decode step reads the weights once for the whole batch, so while the step is bound by
weight reads each added sequence adds nearly a lone sequence's speed; once the step is bound
by compute (or by every sequence's own KV reads) the aggregate flattens while each user's
speed keeps falling. The *saturation batch* is where another sequence adds less than
``threshold`` of a lone sequence's speed; the *crossing* is the largest batch at which each
user still gets ``tokens_per_s``. Weight quantisation moves the saturation batch (fewer bytes
per step, the same arithmetic); KV quantisation moves the memory limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .catalog import get_gpu
from .efficiency import Efficiency
from .engines import Engine
from .errors import EstimatorError
from .labels import Labelled
from .llm import Evaluator
from .parallel import parallel_for
from .resolve import get_model, weights_for

DEFAULT_THRESHOLD = 0.1  # another sequence adds < 10% of a lone sequence's speed
MAX_POINTS = 4096  # batches evaluated per series; beyond, a geometric sample


@dataclass
class SaturationSeries:
    """One format pair's curve. ``tokens_per_s``: the replica's decode throughput (batch /
    time per output token); ``output_tokens_per_s``: with each request's prefill counted (a
    static batch on an idle replica, as ``planner estimate``)."""

    weights: str
    kv: str
    memory_limit: int  # most sequences whose KV fits at input + output tokens
    engine_cap: int  # the engine's max_num_seqs (per replica)
    saturation_batch: int | None
    saturation_tokens_per_s: float | None
    crossing_batch: int | None  # largest batch meeting the per-user target
    crossing_tokens_per_s: float | None
    batch: list[int] = field(default_factory=list)
    tokens_per_s: list[float] = field(default_factory=list)
    per_user_tokens_per_s: list[float] = field(default_factory=list)
    output_tokens_per_s: list[float] = field(default_factory=list)
    tpot_s: list[float] = field(default_factory=list)
    bottleneck: list[str] = field(default_factory=list)

    def label(self) -> str:
        return f"weights {self.weights}, KV {self.kv}"


@dataclass
class SaturationResult(Labelled):
    model: str
    gpu: str
    parallel: dict
    engine: str
    input_tokens: int
    output_tokens: int
    threshold: float
    tokens_per_s_target: float | None
    series: list[SaturationSeries]
    labels: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        """One row per (series, batch): the CSV view."""
        return [
            {
                "weights": s.weights,
                "kv": s.kv,
                "batch": b,
                "tokens_per_s": s.tokens_per_s[i],
                "per_user_tokens_per_s": s.per_user_tokens_per_s[i],
                "output_tokens_per_s": s.output_tokens_per_s[i],
                "tpot_s": s.tpot_s[i],
                "bottleneck": s.bottleneck[i],
                "saturation_batch": s.saturation_batch,
                "crossing_batch": s.crossing_batch,
                "memory_limit": s.memory_limit,
            }
            for s in self.series
            for i, b in enumerate(s.batch)
        ]


def _batches(limit: int) -> np.ndarray:
    if limit <= MAX_POINTS:
        return np.arange(1, limit + 1)
    return np.unique(np.round(np.geomspace(1, limit, MAX_POINTS)).astype(np.int64))


def saturation_batch(batch: np.ndarray, tokens_per_s: np.ndarray, threshold: float) -> int | None:
    """The first batch from which one more sequence adds less than ``threshold`` x the lone
    sequence's speed (per added sequence, between evaluated batches); None if every step up
    to the last batch still adds more."""
    if len(batch) < 2:
        return None
    gain = np.diff(tokens_per_s) / np.diff(batch)
    below = np.nonzero(gain < threshold * tokens_per_s[0])[0]
    return int(batch[below[0]]) if len(below) else None


def crossing_batch(batch: np.ndarray, per_user: np.ndarray, target: float | None) -> int | None:
    """The largest batch whose per-user speed still meets ``target`` (per-user speed falls
    with batch); None without a target or when even one sequence misses it."""
    if target is None:
        return None
    ok = np.nonzero(per_user >= target)[0]
    return int(batch[ok[-1]]) if len(ok) else None


def series_for(
    ev: Evaluator,
    input_tokens: int,
    output_tokens: int,
    threshold: float,
    target: float | None,
) -> SaturationSeries:
    """One replica's curve, every batch evaluated in one array pass."""
    limit = int(ev.max_batch(input_tokens + output_tokens))
    wf, kf = ev.wfmt.name, ev.kvfmt.name
    if limit < 1:
        return SaturationSeries(wf, kf, 0, int(ev.max_seqs), None, None, None, None)
    b = _batches(limit)
    dec = ev.decode_step(b, input_tokens + output_tokens / 2)  # as `estimate`: mid-decode
    pre = ev.prefill(b, input_tokens)
    tpot = np.asarray(dec.total, float)
    agg = b / tpot
    per_user = 1.0 / tpot
    out = b * output_tokens / (np.asarray(pre.total, float) + (output_tokens - 1) * tpot)
    bn = np.broadcast_to(dec.bottleneck(), b.shape)
    sat = saturation_batch(b, agg, threshold)
    cross = crossing_batch(b, per_user, target)

    def at(x: int | None) -> float | None:
        return None if x is None else float(agg[np.searchsorted(b, x)])

    return SaturationSeries(
        wf,
        kf,
        limit,
        int(ev.max_seqs),
        sat,
        at(sat),
        cross,
        at(cross),
        batch=[int(x) for x in b],
        tokens_per_s=[float(x) for x in agg],
        per_user_tokens_per_s=[float(x) for x in per_user],
        output_tokens_per_s=[float(x) for x in out],
        tpot_s=[float(x) for x in tpot],
        bottleneck=[str(x) for x in bn],
    )


def _formats(base: str, compare: list[str] | None) -> list[str]:
    out = [base]
    for f in compare or []:
        if f not in out:
            out.append(f)
    return out


def saturation(
    model: str,
    gpu: str,
    gpus: int = 1,
    *,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    attention_dp: bool = False,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | Engine | None = None,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    tokens_per_s: float | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    compare_weights: list[str] | None = None,
    compare_kv: list[str] | None = None,
    efficiency: Efficiency | None = None,
    presets: tuple[str, ...] = (),
) -> SaturationResult:
    """Aggregate and per-user decode speed of one replica against its batch, up to the
    memory limit, with the saturation batch and (given a per-user ``tokens_per_s`` target)
    the crossing; one series for the asked formats and one per compared weight or KV
    format. ``efficiency`` replaces the calibrated factors (a what-if, or a hand check)."""
    if not 0 < threshold < 1:
        raise EstimatorError("--threshold is a share of a lone sequence's speed, in (0, 1)")
    lm = get_model(model, presets)
    weights = weights_for(model, weights, presets)
    acc = get_gpu(gpu, presets)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    eng = engine if engine is not None else "vllm"
    pairs = [(w, kv) for w in _formats(weights, compare_weights)]
    pairs += [(weights, k) for k in _formats(kv, compare_kv)[1:]]
    series = [
        series_for(
            Evaluator(lm, acc, par, w, k, eng, efficiency),
            input_tokens,
            output_tokens,
            threshold,
            tokens_per_s,
        )
        for w, k in pairs
    ]
    if series[0].memory_limit < 1:
        raise EstimatorError(
            f"{lm.name} does not fit on {par.gpus_per_replica} x {acc.name} "
            f"({par.label()}) with one {input_tokens + output_tokens}-token sequence in "
            f"weights {weights}, KV {kv} (see `planner fit` for the fewest GPUs that hold it)"
        )
    return SaturationResult(
        model=lm.name,
        gpu=acc.name,
        parallel=par.model_dump(),
        engine=Evaluator(lm, acc, par, weights, kv, eng).engine.name,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        threshold=threshold,
        tokens_per_s_target=tokens_per_s,
        series=series,
        labels={"model": lm.display_name or lm.name, "gpu": acc.display_name},
    )
