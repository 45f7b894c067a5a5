"""One replica's time and throughput against its batch, for the families served in batches
(diffusion, speech, encoders, VLA, world models, VAR): each point is the estimate at that
batch (:func:`estimator.estimate`, what ``planner estimate --batch B`` prints), at 1, 2,
4, ... up to the largest batch that fits (``planner curve`` on such a model, and the page's
curve of it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .bands import FAMILY_RATES
from .errors import EstimatorError
from .families import FamilyEstimate, FamilyOptions
from .labels import Labelled

MAX_BATCH = 4096  # the ladder stops here: past it every family is long since compute-bound
LATENCY_KEY = "s_per_batch"  # every family's time per batch


def batch_ladder(max_batch: int, top: int = MAX_BATCH) -> list[int]:
    """1, 2, 4, ... below the largest batch that fits (at most ``top``), and that batch."""
    last = max(1, min(int(max_batch), top))
    out, b = [], 1
    while b < last:
        out.append(b)
        b *= 2
    return [*out, last]


@dataclass
class BatchCurve(Labelled):
    model: str
    family: str
    gpu: str
    parallel: dict
    weights_format: str
    max_batch: int  # the largest batch that fits
    rate_key: str  # the family's throughput metric
    latency_key: str  # its time per batch
    points: list[dict]  # per batch: batch, fits, the estimate's metrics and bands
    labels: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        return [{"batch": p["batch"], "fits": p["fits"], **p["metrics"]} for p in self.points]


def rate_key(metrics: dict) -> str:
    """A family estimate's headline rate: the first of :data:`~estimator.bands.FAMILY_RATES`
    its metrics report."""
    return next((k for k in FAMILY_RATES if isinstance(metrics.get(k), int | float)), "batch")


def batch_curve(
    model: str,
    gpu: str,
    gpus: int = 1,
    *,
    tp: int | None = None,
    pp: int | None = None,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | None = None,
    input_tokens: int | None = None,
    family: FamilyOptions | dict | None = None,
    batches: list[int] | None = None,
    presets: tuple[str, ...] = (),
) -> BatchCurve:
    """The estimate of a non-LLM family's model at each batch of ``batches`` (default:
    :func:`batch_ladder` of the largest batch that fits)."""
    from .api import estimate

    def at(b: int) -> FamilyEstimate:
        return estimate(
            model,
            gpu,
            gpus,
            tp=tp,
            pp=pp,
            weights=weights,
            kv=kv,
            engine=engine,
            batch=b,
            input_tokens=input_tokens,
            family=family,
            presets=presets,
        )

    first = at(1)
    if not isinstance(first, FamilyEstimate):
        raise EstimatorError(
            f"'{model}' is a language model: `planner curve` gives its TTFT and speed against users"
        )
    if not first.fits:
        m = first.memory_gb
        raise EstimatorError(
            f"{first.model} does not fit on this replica at batch 1: it needs {m.total:.1f} GB "
            f"per GPU, the engine allows {m.usable:.1f} GB (see `planner estimate`)"
        )
    bs = batches or batch_ladder(first.max_batch)
    points = [first if b == 1 else at(b) for b in bs]
    return BatchCurve(
        first.model,
        first.family,
        first.gpu,
        first.parallel,
        first.weights_format,
        first.max_batch,
        rate_key(first.metrics),
        LATENCY_KEY,
        [
            {
                "batch": b,
                "fits": e.fits,
                "memory_gb": e.memory_gb.total,
                "metrics": e.metrics,
                "bands": e.bands,
            }
            for b, e in zip(bs, points, strict=True)
        ],
        dict(first.labels),
    )
