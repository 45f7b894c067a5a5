"""Whether another GPU helps: one replica's speed against its GPU count, split by tensor
parallelism (and by pipeline parallelism), for each GPU type asked (``planner scaling``).

Splitting a replica over more GPUs divides each GPU's weight reads and arithmetic, but
every layer's all-reduces cross the link between them, and the fixed per-step costs do not
divide. Over NVLink the collectives stay a small share of a step; over PCIe they grow with
the group until they cancel the added bandwidth. The *scaling limit* of a GPU type is the
largest count whose doubling step still added at least ``min_gain`` of a GPU's worth of
throughput per added GPU (relative to the per-GPU throughput before the step).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .catalog import get_gpu
from .engines import Engine
from .errors import EstimatorError
from .labels import Labelled
from .llm import Workload, estimate_replica
from .parallel import Parallel, powers_of_two
from .resolve import get_model, weights_for

DEFAULT_MIN_GAIN = 0.5  # each added GPU brings at least half of a GPU already there
MAX_SCALING_GPUS = 64


@dataclass
class ScalingPoint:
    gpu: str
    mode: str  # "tp" or "pp"
    gpus: int
    split: str
    fits: bool
    max_batch: int
    ttft_s: float
    tpot_s: float
    per_user_tokens_per_s: float
    tokens_per_s: float  # the replica's output tokens/s at the batch, prefill counted
    tokens_per_s_per_gpu: float
    collective_share_decode: float  # share of a decode step spent in collectives
    collective_share_prefill: float
    interconnect: str
    efficiency: float | None  # per-GPU throughput / that of the smallest count that fits
    marginal_gain: float | None  # per added GPU, as a share of the per-GPU throughput before


@dataclass
class ScalingResult(Labelled):
    model: str
    gpus: list[str]
    weights: str
    kv: str
    engine: str
    batch: int
    input_tokens: int
    output_tokens: int
    min_gain: float
    points: list[ScalingPoint]
    scaling_limit: dict  # "gpu/mode" -> GPU count past which a step adds < min_gain
    skipped: list[dict] = field(default_factory=list)  # splits the model's shape refuses
    labels: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        return [asdict(p) for p in self.points]


def _with_gains(points: list[ScalingPoint], min_gain: float) -> int | None:
    """Fill each point's efficiency and marginal gain (against the previous count that fits);
    return the scaling limit: the last count reached by a step that added at least
    ``min_gain`` (None if nothing fits)."""
    base = prev = None
    limit = None
    for p in points:
        if not p.fits:
            continue
        if base is None:
            base = prev = p
            limit = p.gpus
            p.efficiency = 1.0
            continue
        p.efficiency = p.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu
        p.marginal_gain = (p.tokens_per_s - prev.tokens_per_s) / (p.gpus - prev.gpus)
        p.marginal_gain /= prev.tokens_per_s_per_gpu
        if limit == prev.gpus and p.marginal_gain >= min_gain:
            limit = p.gpus
        prev = p
    return limit


def scaling(
    model: str,
    gpu: str | list[str],
    *,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | Engine | None = None,
    batch: int = 1,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    max_gpus: int = 8,
    modes: tuple[str, ...] = ("tp", "pp"),
    min_gain: float = DEFAULT_MIN_GAIN,
    presets: tuple[str, ...] = (),
) -> ScalingResult:
    """TTFT, time per output token and throughput (per replica and per GPU) of one replica
    of ``batch`` sequences against 1, 2, 4 ... ``max_gpus`` GPUs, split by TP (``"tp"``) or
    PP (``"pp"``), for each GPU type in ``gpu`` (a name, a comma-separated list or a list),
    with the share of each step spent in collectives and each type's scaling limit."""
    names = [g.strip() for g in gpu.split(",")] if isinstance(gpu, str) else list(gpu)
    names = [g for g in names if g]
    if not names:
        raise EstimatorError("--gpu names at least one GPU type")
    if not 1 <= max_gpus <= MAX_SCALING_GPUS:
        raise EstimatorError(f"--max-gpus must be between 1 and {MAX_SCALING_GPUS}")
    if not 0 < min_gain <= 1:
        raise EstimatorError("--min-gain is a share of a GPU's throughput, in (0, 1]")
    bad = [m for m in modes if m not in ("tp", "pp")]
    if bad or not modes:
        raise EstimatorError(f"--modes takes tp and/or pp, not {', '.join(bad) or 'nothing'}")
    if batch < 1:
        raise EstimatorError("--batch must be at least 1")
    lm = get_model(model, presets)
    weights = weights_for(model, weights, presets)
    eng = engine if engine is not None else "vllm"
    wl = Workload(input_tokens=input_tokens, output_tokens=output_tokens, batch=batch)
    points: list[ScalingPoint] = []
    skipped: list[dict] = []
    limits: dict[str, int | None] = {}
    engine_name = None
    for name in names:
        acc = get_gpu(name, presets)
        for mode in modes:
            series = []
            for n in powers_of_two(max_gpus):
                if mode == "pp" and n == 1 and "tp" in modes:
                    continue  # one GPU is the same replica in both modes
                par = Parallel(tp=n, pp=1) if mode == "tp" else Parallel(tp=1, pp=n)
                try:
                    e = estimate_replica(lm, acc, par, wl, weights=weights, kv=kv, engine=eng)
                except EstimatorError as err:
                    skipped.append({"gpu": acc.name, "mode": mode, "gpus": n, "why": str(err)})
                    continue
                engine_name = e.engine
                dec, pre = e.decode_times_s, e.prefill_times_s
                series.append(
                    ScalingPoint(
                        gpu=acc.name,
                        mode=mode,
                        gpus=n,
                        split=par.label(),
                        fits=e.fits,
                        max_batch=e.max_batch,
                        ttft_s=e.ttft_s,
                        tpot_s=e.tpot_s,
                        per_user_tokens_per_s=e.per_user_tokens_per_s,
                        tokens_per_s=e.output_tokens_per_s,
                        tokens_per_s_per_gpu=e.output_tokens_per_s / n,
                        collective_share_decode=dec["comm"] / dec["total"],
                        collective_share_prefill=pre["comm"] / pre["total"],
                        interconnect=e.interconnect,
                        efficiency=None,
                        marginal_gain=None,
                    )
                )
            if mode == "pp" and "tp" in modes:  # the one-GPU point, shared with TP
                one = [p for p in points if p.gpu == acc.name and p.mode == "tp" and p.gpus == 1]
                series = [ScalingPoint(**{**asdict(p), "mode": "pp"}) for p in one] + series
            limits[f"{acc.name}/{mode}"] = _with_gains(series, min_gain)
            points += series
    if not any(p.fits for p in points):
        raise EstimatorError(
            f"{lm.name} with batch {batch} at {input_tokens + output_tokens} tokens fits on "
            f"none of these up to {max_gpus} GPUs per replica (see `planner fit`)"
        )
    return ScalingResult(
        model=lm.name,
        gpus=[get_gpu(n, presets).name for n in names],
        weights=weights,
        kv=kv,
        engine=engine_name or str(eng),
        batch=batch,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        min_gain=min_gain,
        points=points,
        scaling_limit=limits,
        skipped=skipped,
        labels={"model": lm.display_name or lm.name},
    )
