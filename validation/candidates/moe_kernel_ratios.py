"""How fast a MoE layer's routed experts run beside the same engine's dense GEMMs: measured per
engine, GPU generation and weight format at kernel level, by the width of the expert slice
each GPU multiplies.

Why: an expert's grouped GEMM is many small GEMMs, one per expert, each as wide as the slice
of the expert a GPU holds (the expert's intermediate size over the expert-tensor-parallel
degree); the engines' fused-MoE kernels also route, permute and combine the tokens. Narrow
slices (Qwen3-30B-A3B's 768, any expert under TP8) keep the tensor cores far from a dense
GEMM's rate even with hundreds of tokens per expert, and each engine's kernel for a format is
its own (SGLang and vLLM run DeepGEMM for block FP8, TensorRT-LLM its CUTLASS grouped GEMMs;
vLLM's per-tensor FP8 MoE on Hopper is a Triton kernel at a third of its dense GEMMs' rate).

Source: NVIDIA AIConfigurator's silicon database (PyPI ``aiconfigurator-core``, Apache-2.0):
``systems/data/<system>/moe/<framework>/<version>/moe_perf.parquet`` (the whole MoE op's
latency by tokens, hidden size, expert width, top-k, experts, expert TP and EP, dtype) and the
same collection's ``gemm/.../gemm_perf.parquet``. Per (system, engine, format) and expert
shape at each expert-TP degree (no EP: the slice width alone changes), the op's rate at
``MIN_TOKENS_PER_EXPERT`` tokens per expert or more (past the ridge point: compute-bound) over
the median rate of the same engine's large dense GEMMs in that format
(:data:`calibration.kernel_compute.MIN_M` rows or more). Those ratios are
``moe_kernel_ratios.csv`` beside this script; :func:`laws` condenses them to
``ratio = k x w / (w + w0)`` (``w``: the slice width) per GPU generation, engine and format,
pooled over engines and then generations where one is missing. What pricing the estimator's
routed experts with them did to the cross-validation: ``README.md`` here (not shipped).

Run from the repository root (needs pandas and pyarrow; the MoE and GEMM tables of one
unpacked wheel under one ``aiconfigurator_core``)::

    PYTHONPATH=. python validation/candidates/moe_kernel_ratios.py PATH/TO/aiconfigurator_core
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from calibration.kernel_bandwidth import SYSTEMS, collection_row, read_csv, refresh, write_csv
from calibration.kernel_compute import MIN_M, MIN_NK

FILE = Path(__file__).with_name("moe_kernel_ratios.csv")
MIN_TOKENS_PER_EXPERT = 512  # past every measured GPU's ridge point for these formats
# AIConfigurator's MoE dtypes -> the names the laws use (estimator.expert_kernels.format_key)
DTYPES = ("bfloat16", "fp8", "fp8_block", "nvfp4")
# AIConfigurator system -> the GPU generation whose laws it measures
GENERATIONS = {"h100_sxm": "hopper", "h200_sxm": "hopper", "b200_sxm": "blackwell"}
COLUMNS = (
    "system",
    "gpu",
    "framework",
    "version",
    "format",
    "hidden",
    "width",
    "top_k",
    "experts",
    "expert_tp",
    "slice_width",
    "ratio",
    "source",
)


def _largest(files: list[Path]) -> Path | None:
    """An engine's most thoroughly measured collection (its largest table)."""
    return max(files, key=lambda f: f.stat().st_size) if files else None


def extract(root: Path, package_version: str) -> list[dict]:
    """One row per (system, engine, format, expert shape, expert-TP degree)."""
    import pandas as pd  # noqa: PLC0415 (a maintainer's tool: pandas and pyarrow on demand)

    rows = []
    data = root / "systems" / "data"
    for system in GENERATIONS:
        for moe_dir in sorted((data / system / "moe").glob("*")):
            engine = moe_dir.name
            moe_file = _largest(list(moe_dir.glob("*/moe_perf.parquet")))
            gemms = (data / system / "gemm" / engine).glob("*/gemm_perf.parquet")
            gemm_file = _largest(list(gemms))
            if moe_file is None or gemm_file is None:
                continue
            moe, gemm = pd.read_parquet(moe_file), pd.read_parquet(gemm_file)
            head = collection_row(root, system, SYSTEMS[system], moe_file, package_version)
            for dtype in DTYPES:
                dense = _dense_rate(gemm, dtype)
                if not dense:
                    continue
                for shape in _expert_rates(moe, dtype):
                    rows.append({**head, "format": dtype, **shape, "ratio": shape["rate"] / dense})
    for r in rows:
        r.pop("rate")
        r["ratio"] = round(r["ratio"], 4)
    return rows


def _dense_rate(gemm, dtype: str) -> float:
    """The median FLOP/s of a GEMM table's large (prompt-sized) GEMMs in ``dtype``."""
    big = (gemm.m >= MIN_M) & (gemm.n >= MIN_NK) & (gemm.k >= MIN_NK)
    d = gemm[(gemm.gemm_dtype == dtype) & big]
    if len(d) < 3:
        return 0.0
    return float((2.0 * d.m.astype(float) * d.n * d.k / (d.latency * 1e-3)).median())


def _expert_rates(moe, dtype: str) -> list[dict]:
    """Per expert shape and expert-TP degree (balanced routing, no EP): the median FLOP/s per
    GPU of the whole MoE op at ``MIN_TOKENS_PER_EXPERT`` tokens per expert or more."""
    d = moe[(moe.moe_dtype == dtype) & (moe.distribution == "balanced") & (moe.moe_ep_size == 1)]
    d = d[d.num_tokens * d.topk / d.num_experts >= MIN_TOKENS_PER_EXPERT]
    out = []
    keys = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size"]
    for (h, w, k, e, tp), g in d.groupby(keys):
        flops = 2.0 * g.num_tokens * k * 3 * h * w / tp  # gate, up and down, per GPU
        rate = float((flops / (g.latency * 1e-3)).median())
        out.append(
            {
                "hidden": int(h),
                "width": int(w),
                "top_k": int(k),
                "experts": int(e),
                "expert_tp": int(tp),
                "slice_width": round(w / tp, 1),
                "rate": rate,
            }
        )
    return out


def load(path: Path | None = None) -> list[dict]:
    """The shipped rows (``COLUMNS``), ``slice_width`` and ``ratio`` as floats."""
    return read_csv(path or FILE, slice_width=float, ratio=float)


def fit_law(points: list[tuple[float, float]]) -> dict:
    """``ratio = k x w / (w + w0)`` through (slice width, ratio) points, least squares in the
    logarithm: ``k`` in closed form for each ``w0`` on a log grid (16 to 16,384)."""
    best = None
    for i in range(241):
        w0 = 16.0 * 2 ** (i / 24)
        logs = [math.log(r) - math.log(w / (w + w0)) for w, r in points]
        lk = statistics.fmean(logs)
        rms = math.sqrt(statistics.fmean([(x - lk) ** 2 for x in logs]))
        if best is None or rms < best[0]:
            best = (rms, math.exp(lk), w0)
    rms, k, w0 = best
    return {"k": round(k, 4), "w0": round(w0, 1), "points": len(points), "rms_log": round(rms, 3)}


def laws(path: Path | None = None) -> dict:
    """``calibration.yaml``'s ``moe_kernels``: {generation: {engine: {format: law}}}, with
    ``all`` for the engines pooled (per generation) and the generations pooled (``all`` at
    the top); each law :func:`fit_law`'s."""
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in load(path):
        gen = GENERATIONS[r["system"]]
        pt = (r["slice_width"], r["ratio"])
        for g in (gen, "all"):
            for e in (r["framework"], "all"):
                groups.setdefault((g, e, r["format"]), []).append(pt)
    out: dict[str, dict[str, dict[str, dict]]] = {}
    for (g, e, f), pts in sorted(groups.items()):
        if g == "all" and e != "all":
            continue  # an engine's law is read per generation, its pool across them is not
        out.setdefault(g, {}).setdefault(e, {})[f] = fit_law(pts)
    return out


def write(rows: list[dict], path: Path | None = None) -> Path:
    return write_csv(path or FILE, COLUMNS, rows)


if __name__ == "__main__":  # pragma: no cover
    refresh(__doc__, extract, write)
