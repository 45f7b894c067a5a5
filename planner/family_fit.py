"""The smallest configuration that holds a model of the families served in batches
(``planner fit`` on a diffusion, speech, encoder, VLA or world model): for every GPU type,
the fewest GPUs in one tensor-parallel replica (these families split by TP only) that hold
it at batch 1, with its largest batch, its time at batch 1 and its rate at the largest
batch, cheapest first. Each figure is :func:`estimator.estimate` at that configuration, so
``planner estimate`` prints the same numbers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from estimator import EstimatorError, FamilyOptions, estimate, get_gpu, gpu_catalog
from estimator.batch_curves import LATENCY_KEY, MAX_BATCH, rate_key
from estimator.engines import Engine
from estimator.labels import Labelled
from estimator.parallel import powers_of_two

from .minimum import cheapest_first

DEFAULT_MAX_GPUS = 8  # one node: these families' replicas do not span nodes


@dataclass
class FamilyFit:
    gpu: str
    vendor: str
    fits: bool
    gpus: int | None = None
    split: str | None = None
    max_batch: int | None = None
    memory_gb_per_gpu: float | None = None  # at batch 1
    s_per_batch: float | None = None  # batch 1
    rate: float | None = None  # the family's rate (``rate_key``) at the largest batch
    usd_per_hour: float | None = None  # rental, the GPU preset's per-GPU price x GPUs
    purchase_usd: float | None = None
    why_not: str | None = None


@dataclass
class FamilyFitResult(Labelled):
    model: str
    family: str
    weights: str
    rate_key: str
    max_gpus: int
    by_gpu: list[FamilyFit]  # cheapest first
    labels: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        return [asdict(f) for f in self.by_gpu]


def family_fit(
    model: str,
    *,
    weights: str | None = None,
    family: FamilyOptions | dict | None = None,
    engine: str | Engine | None = None,
    gpus: list[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    presets: tuple[str, ...] = (),
) -> FamilyFitResult:
    """For each GPU type (``gpus``, default the whole catalogue) the fewest GPUs of a TP
    replica that hold ``model`` at batch 1 (``family``: its workload options)."""
    if not 1 <= max_gpus <= 4096:
        raise EstimatorError("--max-gpus must be between 1 and 4,096")
    accs = (
        [get_gpu(g, presets) for g in gpus] if gpus else list(gpu_catalog(presets).items.values())
    )

    def at(acc, tp: int, batch: int):
        return estimate(
            model,
            acc.name,
            tp,
            tp=tp,
            weights=weights,
            engine=engine,
            batch=batch,
            family=family,
            presets=presets,
        )

    out: list[FamilyFit] = []
    first = None
    for acc in accs:
        found, short, refused = None, None, None
        for tp in powers_of_two(max_gpus):
            try:
                e = at(acc, tp, 1)
            except EstimatorError as err:  # a split the model refuses (heads, domain)
                refused = refused or f"TP{tp}: {err}"
                continue
            first = first or e
            if e.fits:
                found = (tp, e)
                break
            m = e.memory_gb
            short = f"needs {m.total:.1f} GB per GPU at batch 1 on TP{tp}, {m.usable:.1f} usable"
        if found is None:  # what memory needs on the widest split that runs, then what refuses
            why = "; ".join(x for x in (short, refused) if x) or "no split to evaluate"
            out.append(FamilyFit(acc.name, acc.vendor, False, why_not=why))
            continue
        tp, e = found
        top = at(acc, tp, min(e.max_batch, MAX_BATCH)) if e.max_batch > 1 else e
        out.append(
            FamilyFit(
                gpu=acc.name,
                vendor=acc.vendor,
                fits=True,
                gpus=tp,
                split=f"TP{tp}",
                max_batch=e.max_batch,
                memory_gb_per_gpu=e.memory_gb.total,
                s_per_batch=e.metrics[LATENCY_KEY],
                rate=top.metrics[rate_key(top.metrics)],
                usd_per_hour=acc.rental_usd_per_hour * tp if acc.rental_usd_per_hour else None,
                purchase_usd=acc.price_usd * tp if acc.price_usd else None,
            )
        )
    if first is None:
        raise EstimatorError(f"no GPU and split runs {model}: {out[0].why_not if out else ''}")
    out.sort(key=cheapest_first)
    return FamilyFitResult(
        model=first.model,
        family=first.family,
        weights=first.weights_format,
        rate_key=rate_key(first.metrics),
        max_gpus=max_gpus,
        by_gpu=out,
        labels={"model": first.labels.get("model", first.model)},
    )
