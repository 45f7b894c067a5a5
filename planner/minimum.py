"""The smallest configuration that holds a model (``planner fit``): for every GPU type, the
fewest GPUs in one replica (and the split) whose memory holds the weights and ``users``
sequences of ``input + output`` tokens under the engine's memory policy, with its largest
batch and its speed there, cheapest first.

It walks the candidates the planner itself would size with (:mod:`planner.candidates`), and
times the named configuration with :func:`estimator.estimate_replica`, so ``planner
estimate`` at the split it names prints the same numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from estimator import EstimatorError, Workload, estimate_replica, get_gpu, get_model, gpu_catalog
from estimator.engines import Engine
from estimator.resolve import weights_for

from .candidates import enumerate_candidates

DEFAULT_MAX_GPUS = 64


@dataclass
class MinimumFit:
    gpu: str
    vendor: str
    fits: bool
    gpus: int | None = None
    split: str | None = None
    parallel: dict | None = None
    max_batch: int | None = None
    memory_gb_per_gpu: float | None = None  # weights + KV + activations + overhead at `users`
    memory_gb_total: float | None = None
    ttft_s: float | None = None  # the users' prompts prefilled together on an idle replica
    tpot_s: float | None = None
    per_user_tokens_per_s: float | None = None
    tokens_per_s: float | None = None  # replica output tokens/s at `users`, prefill counted
    usd_per_hour: float | None = None  # rental, the GPU preset's per-GPU price x GPUs
    purchase_usd: float | None = None
    why_not: str | None = None


@dataclass
class FitResult:
    model: str
    input_tokens: int
    output_tokens: int
    users: int
    weights: str
    kv: str
    engine: str
    max_gpus: int
    by_gpu: list[MinimumFit]  # cheapest first
    labels: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("labels")
        return d

    def rows(self) -> list[dict]:
        return [{k: v for k, v in asdict(f).items() if k != "parallel"} for f in self.by_gpu]


def _order(f: MinimumFit) -> tuple:
    """Cheapest first: by rental $/h, then purchase price, then GPU count; no fit last."""
    inf = float("inf")
    return (
        not f.fits,
        f.usd_per_hour if f.usd_per_hour is not None else inf,
        f.purchase_usd if f.purchase_usd is not None else inf,
        f.gpus or 0,
        f.gpu,
    )


def minimum_fit(
    model: str,
    *,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    users: int = 1,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | Engine | None = None,
    gpus: list[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    presets: tuple[str, ...] = (),
) -> FitResult:
    """For each GPU type (``gpus``, default the whole catalogue) the fewest GPUs per replica,
    and among splits of that many the fastest per user, that hold ``users`` sequences."""
    if users < 1:
        raise EstimatorError("--users must be at least 1")
    if not 1 <= max_gpus <= 4096:
        raise EstimatorError("--max-gpus must be between 1 and 4,096")
    lm = get_model(model, presets)
    weights = weights_for(model, weights, presets)
    eng = engine if engine is not None else "vllm"
    accs = (
        [get_gpu(g, presets) for g in gpus] if gpus else list(gpu_catalog(presets).items.values())
    )
    ctx = input_tokens + output_tokens
    wl = Workload(input_tokens=input_tokens, output_tokens=output_tokens, batch=users)
    out: list[MinimumFit] = []
    engine_name = None
    for acc in accs:
        ok, excluded = enumerate_candidates(lm, [acc], max_gpus, weights, kv, eng)
        holding = [(c, ev) for c, ev in ok if min(int(ev.max_batch(ctx)), ev.max_seqs) >= users]
        if not holding:
            out.append(
                MinimumFit(
                    acc.name,
                    acc.vendor,
                    False,
                    why_not=_why_not(ok, excluded, ctx, users, max_gpus),
                )
            )
            continue
        n = min(c.gpus for c, _ in holding)
        same = [(c, ev) for c, ev in holding if c.gpus == n]
        # the fastest per user among the splits of that many GPUs (then the earliest listed)
        cand, _ = min(
            same, key=lambda x: float(x[1].decode_step(users, ctx - output_tokens / 2).total)
        )
        e = estimate_replica(lm, acc, cand.parallel, wl, weights=weights, kv=kv, engine=eng)
        engine_name = e.engine
        m = e.memory_gb
        out.append(
            MinimumFit(
                gpu=acc.name,
                vendor=acc.vendor,
                fits=True,
                gpus=n,
                split=cand.parallel.label(),
                parallel=cand.parallel.model_dump(),
                max_batch=e.max_batch,
                memory_gb_per_gpu=m.total,
                memory_gb_total=m.total * n,
                ttft_s=e.ttft_s,
                tpot_s=e.tpot_s,
                per_user_tokens_per_s=e.per_user_tokens_per_s,
                tokens_per_s=e.output_tokens_per_s,
                usd_per_hour=acc.rental_usd_per_hour * n if acc.rental_usd_per_hour else None,
                purchase_usd=acc.price_usd * n if acc.price_usd else None,
            )
        )
    out.sort(key=_order)
    return FitResult(
        model=lm.name,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        users=users,
        weights=weights,
        kv=kv,
        engine=engine_name or (eng.name if isinstance(eng, Engine) else str(eng)),
        max_gpus=max_gpus,
        by_gpu=out,
        labels={"model": lm.display_name or lm.name},
    )


def _why_not(ok: list, excluded: list, ctx: int, users: int, max_gpus: int) -> str:
    """The nearest miss: the most sequences any split up to ``max_gpus`` holds, or the rule
    that excluded the widest split."""
    if ok:
        best = max(min(int(ev.max_batch(ctx)), ev.max_seqs) for _, ev in ok)
        return (
            f"at most {best} sequence(s) of {ctx} tokens fit in up to {max_gpus} GPUs "
            f"per replica; {users} asked"
        )
    if excluded:
        return f"no split up to {max_gpus} GPUs starts: {excluded[-1][0]}: {excluded[-1][1]}"
    return "no split to evaluate"
