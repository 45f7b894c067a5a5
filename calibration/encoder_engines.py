"""What eager PyTorch costs an encoder against a fused engine, fitted from published pairs
(``calibration/data/encoder_engine_pairs.csv``: one model, GPU, precision, batch and length
timed under both; built by ``validation/candidates/encoder_engine_pairs.py``).

Eager PyTorch (Hugging Face transformers, sentence-transformers) launches each layer's
kernels one by one from Python, so below some work per batch its time is the host's, flat in
batch and length (AITemplate's PyTorch 1.12 BERT-base: 8-9 ms from batch 1 x 64 to 32 x 64
on an A100). Above it the GPU sets the pace, at a factor over a fused engine's
time: attention that writes and reads its score matrix, elementwise kernels not fused into
the GEMMs. So ``eager = max(layers x layer_us, time_factor x fused)``, both fitted by least
squares on the log ratio, each publisher's pairs sharing one vote; on the 16-bit pairs only
(the precisions encoders are served in: at FP32 and TF32 the slower GEMMs hide the unfused
work, eager/fused 1.04-1.13 at large batches)."""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from estimator.families.encoder import eager_pass_time

from . import shipped_dir

PAIRS_FILE = "encoder_engine_pairs.csv"
PRECISIONS = ("fp16", "bf16")
# TorchScript runs the graph from C++, not Python: about half eager PyTorch's host time per
# layer (FasterTransformer's BERT-base, 350 us against 700-900 us under Hugging Face eager);
# no serving stack runs encoders that way, so its pairs are not the eager engine's
SCRIPTED = "PyTorch TorchScript"
MIN_SOURCES = 2


@dataclass(frozen=True)
class Pair:
    source: str
    layers: int
    eager_s: float
    fused_s: float


def load_pairs() -> list[Pair]:
    with (shipped_dir() / PAIRS_FILE).open(newline="") as f:
        return [
            Pair(publisher(r["source"]), int(r["layers"]), float(r["eager_ms"]) / 1e3,
                 float(r["fused_ms"]) / 1e3)
            for r in csv.DictReader(f)
            if r["precision"] in PRECISIONS and not r["eager_engine"].startswith(SCRIPTED)
        ]  # fmt: skip


def publisher(source: str) -> str:
    """The repository a pair was read from (its README and docs are one publisher)."""
    return source.split(":")[0].split(" ")[0]


def fit(pairs: list[Pair]) -> tuple[float, float]:
    """(host seconds per layer, time factor) fitted on ``pairs``."""
    from scipy.optimize import least_squares

    n = np.array([p.layers for p in pairs], float)
    fused = np.array([p.fused_s for p in pairs])
    eager = np.array([p.eager_s for p in pairs])
    votes = {s: sum(p.source == s for p in pairs) for s in {p.source for p in pairs}}
    w = np.sqrt([1.0 / votes[p.source] for p in pairs])

    def resid(x):
        return w * np.log(eager_pass_time(n, fused, x[0] * 1e-6, x[1]) / eager)

    res = least_squares(resid, [300.0, 1.5], bounds=([0.0, 1.0], [5000.0, 10.0]))
    return float(res.x[0]) * 1e-6, float(res.x[1])


def cross_validate(pairs: list[Pair]) -> np.ndarray:
    """Each pair's eager time predicted from its fused time with the two numbers fitted on
    the other publishers' pairs: the signed % error (nan where too few remain)."""
    err = np.full(len(pairs), np.nan)
    for s in {p.source for p in pairs}:
        others = [p for p in pairs if p.source != s]
        if len({p.source for p in others}) < MIN_SOURCES:
            continue
        layer_s, factor = fit(others)
        for i, p in enumerate(pairs):
            if p.source == s:
                t = float(eager_pass_time(p.layers, p.fused_s, layer_s, factor))
                err[i] = 100.0 * (t / p.eager_s - 1.0)
    return err


def fit_encoder_engines() -> dict:
    """The ``family_engines.encoder`` section: the eager engine's two numbers, the pairs and
    publishers behind them and their leave-one-publisher-out median error; {} with too few."""
    pairs = load_pairs()
    sources = sorted({p.source for p in pairs})
    if len(sources) < MIN_SOURCES:
        return {}
    layer_s, factor = fit(pairs)
    cv = cross_validate(pairs)
    return {
        "transformers": {
            "layer_us": round(layer_s * 1e6, 2),
            "layer_seq_us": 0.0,
            "time_factor": round(factor, 4),
            "rows": len(pairs),
            "sources": sources,
            "cv_median_abs_pct": round(float(np.nanmedian(np.abs(cv))), 1),
            # the same pairs with no engine told apart: the fused time taken for the eager
            "as_fused_median_abs_pct": round(
                float(np.median([abs(p.fused_s / p.eager_s - 1) * 100 for p in pairs])), 1
            ),
        }
    }


def cv_predicted(row, case: dict) -> float | None:
    """A published eager-engine encoder row's leave-one-publisher-out prediction: its
    estimate with the eager engine's numbers fitted on the other publishers' pairs (None:
    too few remain)."""
    from estimator.families import get_family_model
    from estimator.families.encoder import eager_time

    from .family_cases import TIME_METRICS, estimate_case

    others = [p for p in load_pairs() if p.source != publisher(row.source)]
    if len({p.source for p in others}) < MIN_SOURCES:
        return None
    t_fused = estimate_case({**case, "engine": "tei"}).metrics["s_per_batch"]
    layers = get_family_model(case["preset"]).stack.layers
    shipped = eager_time(t_fused, layers, row.engine)[0]
    t = float(eager_pass_time(layers, t_fused, *fit(others)))
    return row.predicted * (t / shipped if row.metric in TIME_METRICS else shipped / t)
