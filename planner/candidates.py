"""Every (GPU type, GPUs per replica, TP/PP/EP split) worth evaluating for a workload,
and, for the explain mode, every one excluded with the rule that excluded it."""

from __future__ import annotations

from dataclasses import dataclass

from estimator import Accelerator, EstimatorError, Evaluator, LanguageModel, Parallel, check_split
from estimator.engine_limits import unstartable
from estimator.engines import Engine
from estimator.parallel import powers_of_two

from .capacity import config_digest, memo


@dataclass(frozen=True)
class Candidate:
    gpu: Accelerator
    parallel: Parallel

    @property
    def gpus(self) -> int:
        return self.parallel.gpus_per_replica

    def key(self) -> tuple:
        p = self.parallel
        return (self.gpu.name, p.tp * p.pp, p.tp, p.pp, p.ep, p.attention_dp)

    def label(self) -> str:
        return f"{self.gpus}x {self.gpu.name} {self.parallel.label()}"


def splits(model: LanguageModel, gpus: int) -> list[Parallel]:
    """Splits of one replica over ``gpus`` GPUs: TP×PP = gpus (powers of two), EP = TP for
    MoE models (experts spread over the whole TP group) or 1, attention-DP for MLA models."""
    out = []
    for tp in powers_of_two(gpus):
        if gpus % tp:
            continue
        pp = gpus // tp
        eps = [1] + ([tp] if model.is_moe and tp > 1 else [])
        adps = [False] + ([True] if model.uses_mla and tp > 1 else [])
        for ep in eps:
            for adp in adps:
                out.append(Parallel(tp=tp, pp=pp, ep=ep, attention_dp=adp))
    return out


def enumerate_candidates(
    model: LanguageModel,
    gpus: list[Accelerator],
    max_gpus: int,
    weights: str,
    kv: str,
    engine: str | Engine,
) -> tuple[list[tuple[Candidate, Evaluator]], list[tuple[str, str]]]:
    """Valid candidates with their prepared evaluators, and excluded ones with the reason:
    replicas of 1, 2, 4 ... ``max_gpus`` GPUs of each type."""
    ok: list[tuple[Candidate, Evaluator]] = []
    excluded: list[tuple[str, str]] = []
    for gpu in gpus:
        for n in powers_of_two(max_gpus):
            # remembered: a warm solve (a slider move) would otherwise rebuild every
            # evaluator of the catalogue; they depend on nothing else
            key = ("candidates", config_digest(model), config_digest(gpu), n, weights, kv, engine)
            o, x = memo(key, lambda gpu=gpu, n=n: candidates_of(model, gpu, n, weights, kv, engine))
            ok += o
            excluded += x
    return ok, excluded


def candidates_of(
    model: LanguageModel, gpu: Accelerator, n: int, weights: str, kv: str, engine: str | Engine
) -> tuple[list[tuple[Candidate, Evaluator]], list[tuple[str, str]]]:
    """The splits of one replica of ``n`` GPUs of one type that can start, and those that
    cannot with the rule that stops them."""
    ok: list[tuple[Candidate, Evaluator]] = []
    excluded: list[tuple[str, str]] = []
    for par in splits(model, n):
        cand = Candidate(gpu, par)
        try:
            check_split(model, par)
            ev = Evaluator(model, gpu, par, weights, kv, engine)
        except EstimatorError as e:
            excluded.append((cand.label(), str(e)))
            continue
        if ev.weight_bytes > ev.capacity * ev.engine.fraction:
            excluded.append((cand.label(), "weights alone exceed usable memory"))
            continue
        if why := unstartable(ev):
            excluded.append((cand.label(), why))
            continue
        ok.append((cand, ev))
    return ok, excluded
