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
from estimator.comm import domain
from estimator.engines import Engine
from estimator.labels import Labelled
from estimator.resolve import weights_for

from .candidates import candidates_of

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
class FitResult(Labelled):
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

    def rows(self) -> list[dict]:
        return [{k: v for k, v in asdict(f).items() if k != "parallel"} for f in self.by_gpu]


def cheapest_first(f) -> tuple:
    """A fit's place, cheapest first: by rental $/h, then purchase price, then GPU count; no
    fit last (any row with ``fits``, ``usd_per_hour``, ``purchase_usd``, ``gpus``, ``gpu``)."""
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
        found, seen = None, _Misses()
        for n in range(1, max_gpus + 1):  # every count: PP takes any whole number of stages
            ok, excluded = candidates_of(lm, acc, n, weights, kv, eng)
            seen.add(ok, excluded, ctx, within=n <= domain(acc) or bool(acc.scale_out_gb_s))
            # `estimate`'s own verdict (memory, max_model_len, the engine's sequence cap),
            # cheap memory check first; then the fastest per user among that many GPUs
            held = []
            for c, ev in ok:
                if int(ev.max_batch(ctx)) < users:
                    continue
                e = estimate_replica(lm, acc, c.parallel, wl, weights, kv, eng)
                if e.fits:
                    held.append((c, e))
                elif e.notes and seen.refused is None:  # the smallest split refused
                    seen.refused = f"{c.label()}: {e.notes[-1]}"
            if held:
                found = min(held, key=lambda x: x[1].tpot_s)
                break
        if found is None:
            out.append(MinimumFit(acc.name, acc.vendor, False, why_not=seen.why(users, max_gpus)))
            continue
        cand, e = found
        engine_name = e.engine
        n, m = cand.gpus, e.memory_gb
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
    out.sort(key=cheapest_first)
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


class _Misses:
    """Why no split of a GPU type holds the model: the most sequences any split that starts
    holds, else the rule that stopped the widest split the domain allows."""

    def __init__(self) -> None:
        self.best, self.best_at, self.rule = -1, 0, None
        self.refused: str | None = None  # memory holds it, the engine's rules refuse it

    def add(self, ok: list, excluded: list, ctx: int, within: bool = True) -> None:
        """``within``: the count fits the GPU's domain (or the GPU has a scale-out network)."""
        for c, ev in ok:
            b = min(int(ev.max_batch(ctx)), ev.max_seqs)
            if b > self.best:
                self.best, self.best_at = b, c.gpus
        # the domain rule only says the count is too wide; the reason worth giving is the
        # one met by the widest split that is allowed at all: a count past the domain says
        # something only where nothing within it did
        for label, why in excluded:
            if self.rule is None or (within and "domain" not in why):
                self.rule = f"{label}: {why}"

    def why(self, users: int, max_gpus: int) -> str:
        if self.refused:
            return self.refused
        if self.best >= 0:
            return (
                f"at most {self.best} sequence(s) fit (on {self.best_at} GPU(s)) in up to "
                f"{max_gpus} GPUs per replica; {users} asked"
            )
        if self.rule:
            return f"no split up to {max_gpus} GPUs starts; e.g. {self.rule}"
        return "no split to evaluate"
