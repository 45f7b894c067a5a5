"""The memory check: the KV-cache tokens an engine logged at start-up against the estimator's
``kv_cache_tokens`` for the same model, GPU, split, formats and knobs (the very Evaluator that
sizes plans). Rows whose weights the estimator does not model (bitsandbytes), whose GPU or
model is not named, or whose memory fraction is not stated are listed as skipped."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimator import EstimatorError, Evaluator, get_gpu, parallel_for
from estimator.engines import at_version, configure
from estimator.engines import engine as engine_named
from estimator.resolve import weights_for

from . import shipped_dir
from .cases import model_named, without_remark

FILE = "engine_logs.csv"


@dataclass
class MemoryRow:
    source: str
    engine: str
    model: str
    gpu: str
    tp: int
    logged_tokens: int
    predicted_tokens: int | None = None
    skipped: str = ""

    @property
    def error_pct(self) -> float | None:
        if self.predicted_tokens is None:
            return None
        return 100.0 * (self.predicted_tokens / self.logged_tokens - 1.0)


def _number(text: str) -> float | None:
    m = re.search(r"(\d+(?:\.\d+)?)", text or "")
    return float(m.group(1)) if m else None


def _weights(dtype: str, model: str) -> str | None:
    d = dtype.lower()
    if "bitsandbytes" in d or "int4" in d:
        return None  # bitsandbytes / QAT INT4 layouts: not a format the estimator models
    if "fp8" in d:
        return "fp8"
    if "awq" in d:
        return "int4"
    if "float16" in d and "bfloat16" not in d:
        return "fp16"
    return weights_for(model, None)


def _predict(r: dict) -> MemoryRow:
    tokens = int(_number(r["kv_cache_tokens"]) or 0)
    tp = int(_number(r["tp"]) or 1)
    row = MemoryRow(r["source"], r["engine"], r["model"], r["gpu"], tp, tokens)
    frac = _number(r["gpu_memory_utilization"].split("(")[0].split("=")[-1])
    if r["engine"] not in ("vllm", "sglang") or not tokens:
        row.skipped = "engine or logged tokens not evaluated"
        return row
    model = model_named(r["model"])  # validate's reading of a name with a remark
    if model is None:
        row.skipped = f"not named: model '{r['model'][:60]}'"
        return row
    try:
        gpu = get_gpu(r["gpu"])  # GPU names drop parenthesised remarks themselves
    except EstimatorError as e:
        row.skipped = f"not named: {str(e).splitlines()[0][:80]}"
        return row
    w = _weights(r["dtype"], without_remark(r["model"]))  # a -FP8 suffix implies its format
    if w is None:
        row.skipped = "weight format not modelled (bitsandbytes / QAT int4)"
        return row
    kv = "fp8" if "fp8" in r["kv_cache_dtype"].lower() else "bf16"
    engine = configure(
        at_version(engine_named(r["engine"]), r["engine_version"]),
        gpu_memory_utilization=frac,
        max_num_batched_tokens=int(_number(r["max_num_batched_tokens"]) or 0) or None,
        max_num_seqs=int(_number(r["max_num_seqs"]) or 0) or None,
    )
    try:
        ev = Evaluator(model, gpu, parallel_for(tp), w, kv, engine)
    except EstimatorError as e:
        row.skipped = f"split rejected: {e}"
        return row
    row.predicted_tokens = ev.kv_cache_tokens
    return row


def memory_check(path: Path | None = None) -> list[MemoryRow]:
    path = path or shipped_dir() / FILE
    with open(path, newline="") as f:
        return [_predict(r) for r in csv.DictReader(f)]


def memory_summary(rows: list[MemoryRow]) -> dict:
    errs = np.array([abs(r.error_pct) for r in rows if r.error_pct is not None])
    signed = np.array([r.error_pct for r in rows if r.error_pct is not None])
    if not len(errs):
        return {"rows": 0, "skipped": len(rows)}
    return {
        "rows": int(len(errs)),
        "skipped": len(rows) - int(len(errs)),
        "median_abs_pct": round(float(np.median(errs)), 1),
        "p90_abs_pct": round(float(np.percentile(errs, 90)), 1),
        "bias_pct": round(float(np.median(signed)), 1),
    }
