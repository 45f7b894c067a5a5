"""The share of its datasheet dense peak a compute-bound GEMM reaches, measured per GPU and
precision at kernel level: the rate the estimator's matmuls are priced at before the fitted
model-level factor (``Efficiency.compute``) takes its share of it.

Why a kernel-level factor: a GPU reaches a different share of its datasheet peak at each
precision and on each board. FP8 and FP4 tensor cores double and quadruple the math per cycle
with the same memory, caches and clocks to feed them, and a board's sustained clock under GEMM
load sets how far below its boost-clock datasheet figure it runs. H100 SXM's BF16 GEMMs reach
77% of 989 TFLOPS and its FP8 ones 61% of 1,979; A100's BF16 84%, L40S's 56%, B200's FP4
39% (below). One fitted share per GPU family cannot carry both a family's FP8 rows and its
BF16 ones, nor a family fitted on other GPUs to one that has no rows of its own.

Source: NVIDIA AIConfigurator's silicon database (PyPI ``aiconfigurator-core``, Apache-2.0),
``aiconfigurator_core/systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet``:
measured GEMM latencies by (m, n, k, dtype) on each system, TensorRT-LLM's collection where
there is one. Per system and precision we take the median rate over the compute-bound GEMMs
(``MIN_M`` token rows or more, output and reduction sizes of ``MIN_NK`` or more: a prompt's
GEMMs, far past the ridge point) and divide it by the GPU preset's own datasheet peak at
that precision. Cross-check: Stas Bekman's maximum-achievable-matmul table
(github:stas00/ml-engineering compute/accelerator/README.md, the best shape found by search,
so a few points above a median) reads A100 SXM BF16 86.9%, H100 SXM BF16 80.3% and FP8 70.9%.

The extracted figures live in ``calibration/data/kernel_compute.csv`` (package data): the
planner never needs AIConfigurator. To refresh them from a newer wheel (needs pandas and
pyarrow)::

    python -m calibration.kernel_compute PATH/TO/aiconfigurator_core [VERSION]
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from . import shipped_dir
from .kernel_bandwidth import SYSTEMS, refresh, write_csv

FILE = "kernel_compute.csv"
MIN_M = 2048  # token rows: a prompt's GEMMs
MIN_NK = 4096  # output and reduction sizes: a 7B-or-larger model's projections
# AIConfigurator's GEMM dtypes -> the precision the estimator's math runs in (SmoothQuant
# W8A8 is INT8 math)
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4", "sq": "int8"}
COLUMNS = ("system", "gpu", "framework", "version", "precision", "gemms", "tflops", "source")


def extract(root: Path, package_version: str) -> list[dict]:
    """One row per (mapped system, precision): the median rate of its compute-bound GEMMs."""
    import pandas as pd  # noqa: PLC0415 (a maintainer's tool: pandas and pyarrow on demand)

    rows = []
    for system, gpu in SYSTEMS.items():
        files = sorted((root / "systems" / "data" / system / "gemm").glob("*/*/gemm_perf.parquet"))
        # TensorRT-LLM's collection where there is one (as the bandwidth shares)
        files.sort(key=lambda f: (f.parts[-3] != "trtllm", f.parts[-3], f.parts[-2]))
        if not files:
            continue
        f = files[0]
        rel = f.relative_to(root.parent).as_posix()
        for dtype, precision in DTYPES.items():
            n, tflops = compute_tflops(pd.read_parquet(f), dtype)
            if n < 3:
                continue
            rows.append(
                {
                    "system": system,
                    "gpu": gpu,
                    "framework": f.parts[-3],
                    "version": f.parts[-2],
                    "precision": precision,
                    "gemms": n,
                    "tflops": round(tflops, 1),
                    "source": f"aiconfigurator-core {package_version} (PyPI, Apache-2.0): {rel}",
                }
            )
    return rows


def compute_tflops(gemms, dtype: str) -> tuple[int, float]:
    """(GEMMs used, median TFLOPS) over a GEMM table's (AIConfigurator's columns: gemm_dtype,
    m, n, k, latency in ms) compute-bound GEMMs of one dtype."""
    d = gemms[
        (gemms.gemm_dtype == dtype) & (gemms.m >= MIN_M) & (gemms.n >= MIN_NK) & (gemms.k >= MIN_NK)
    ]
    if not len(d):
        return 0, float("nan")
    rate = 2.0 * d.m.astype(float) * d.n * d.k / (d.latency * 1e-3)
    return len(d), float(rate.median()) / 1e12


def load(path: Path | None = None) -> list[dict]:
    """The shipped rows (``COLUMNS``), ``tflops`` as float."""
    path = path or shipped_dir() / FILE
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        r["tflops"] = float(r["tflops"])
    return rows


def gemm_shares(path: Path | None = None) -> dict[str, dict[str, float]]:
    """GPU preset -> {precision: its compute-bound GEMMs' rate over the preset's datasheet
    peak at that precision} (what ``calibration.yaml``'s ``gemm_share`` holds)."""
    from estimator.catalog import get_gpu

    out: dict[str, dict[str, float]] = {}
    for r in load(path):
        peak = get_gpu(r["gpu"]).dense_tflops.get(r["precision"])
        if peak:
            out.setdefault(r["gpu"], {})[r["precision"]] = round(r["tflops"] / peak, 4)
    return dict(sorted(out.items()))


def gemm_table(path: Path | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """``calibration.yaml``'s ``gemm_share``: per measured GPU preset (``gpus``), and the
    mean per efficiency family of its measured GPUs (``families``: what a family without a
    compute share of its own runs at, ``estimator.efficiency.compute_share``)."""
    from estimator.catalog import get_gpu
    from estimator.efficiency import efficiency_key

    gpus = gemm_shares(path)
    fams: dict[str, dict[str, list[float]]] = {}
    for name, shares in gpus.items():
        fam = fams.setdefault(efficiency_key(get_gpu(name)), {})
        for p, v in shares.items():
            fam.setdefault(p, []).append(v)
    return {
        "gpus": gpus,
        "families": {
            f: {p: round(statistics.mean(v), 4) for p, v in sorted(ps.items())}
            for f, ps in sorted(fams.items())
        },
    }


def write(rows: list[dict], path: Path | None = None) -> Path:
    return write_csv(path or shipped_dir() / FILE, COLUMNS, rows)


if __name__ == "__main__":  # pragma: no cover
    refresh(__doc__, extract, write)
