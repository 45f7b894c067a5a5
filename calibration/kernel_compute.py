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

Boards of one family differ (sustained clocks, power limits: the 72 W L4 against the 350 W
L40S against the 450 W RTX 4090), and AIConfigurator measures few of them. Beside it,
``calibration/data/kernel_compute_published.csv``: one published table measured one way on
many boards (github:zzc0721/torch-performance-test-data: ``torch.mm`` of random square BF16
matrices of 1,024-10,240, thirty calls after six warm-up ones, the best size), each board's
median. Such a short best-of run reads above AIConfigurator's sustained median; the ratio of
the two on the boards measured both ways puts it on the median's footing, the family's own
where it has such a board (A100 0.99, Hopper 0.97, L40S 0.76: the 350 W board throttles over
a long sweep; RTX PRO 6000 0.96, B200 0.87), else the median of the families'. A board's
rate over its family's (the family's AIConfigurator-measured boards, else its published ones)
scales its compute share (``estimator.efficiency.board_ratio``).

The extracted figures live in ``calibration/data/kernel_compute.csv`` (package data): the
planner never needs AIConfigurator. To refresh them from a newer wheel (needs pandas and
pyarrow)::

    python -m calibration.kernel_compute PATH/TO/aiconfigurator_core [VERSION]
"""

from __future__ import annotations

import statistics
from pathlib import Path

from . import shipped_dir
from .kernel_bandwidth import (
    SYSTEMS,
    collection_row,
    gemm_collections,
    read_csv,
    refresh,
    write_csv,
)

FILE = "kernel_compute.csv"
PUBLISHED = "kernel_compute_published.csv"
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
        files = gemm_collections(root, system)  # TensorRT-LLM's first, as the bandwidth shares
        if not files:
            continue
        row = collection_row(root, system, gpu, files[0], package_version)
        gemms = pd.read_parquet(files[0])
        for dtype, precision in DTYPES.items():
            n, tflops = compute_tflops(gemms, dtype)
            if n >= 3:
                extra = {"precision": precision, "gemms": n, "tflops": round(tflops, 1)}
                rows.append({**row, **extra})
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
    return read_csv(path or shipped_dir() / FILE, tflops=float)


def gemm_shares(path: Path | None = None) -> dict[str, dict[str, float]]:
    """GPU preset -> {precision: its compute-bound GEMMs' rate over the preset's datasheet
    peak at that precision}: AIConfigurator's measured boards."""
    from estimator.catalog import get_gpu

    out: dict[str, dict[str, float]] = {}
    for r in load(path):
        g = get_gpu(r["gpu"])
        peak = g.dense_tflops.get(r["precision"])
        if peak:
            out.setdefault(g.name, {})[r["precision"]] = round(r["tflops"] / peak, 4)
    return dict(sorted(out.items()))


def load_published(path: Path | None = None) -> dict[str, float]:
    """GPU preset -> the median of its published BF16 rates (TFLOPS)."""
    from estimator.catalog import get_gpu

    by: dict[str, list[float]] = {}
    for r in read_csv(path or shipped_dir() / PUBLISHED, tflops=float):
        if r["precision"] == "bf16":
            by.setdefault(get_gpu(r["gpu"]).name, []).append(r["tflops"])
    return {g: statistics.median(v) for g, v in sorted(by.items())}


def gemm_table(
    path: Path | None = None, published: Path | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """``calibration.yaml``'s ``gemm_share``: per board (``gpus``): AIConfigurator's shares,
    else its published BF16 rate put on their footing (``bridges``: per family, the median
    over its boards measured both ways of AIConfigurator's rate over the published one; else
    the families' median); per efficiency family (``families``), the mean of its
    AIConfigurator-measured boards, else of its published ones: what a family without a
    compute share of its own runs at, and what a board's own rate is read against."""
    from estimator.catalog import get_gpu
    from estimator.efficiency import efficiency_key

    aic = gemm_shares(path)
    pub = load_published(published)
    key = {g: efficiency_key(get_gpu(g)) for g in {*aic, *pub}}
    both: dict[str, list[float]] = {}
    for g, share in aic.items():
        if g in pub and "bf16" in share:
            rate = share["bf16"] * get_gpu(g).dense_tflops["bf16"]
            both.setdefault(key[g], []).append(rate / pub[g])
    bridges = {f: round(statistics.median(v), 4) for f, v in sorted(both.items())}
    every = round(statistics.median(bridges.values()), 4)
    gpus = dict(aic)
    for g, rate in pub.items():
        if g not in aic:
            peak = get_gpu(g).dense_tflops["bf16"]
            gpus[g] = {"bf16": round(rate * bridges.get(key[g], every) / peak, 4)}
    fams: dict[str, dict[str, list[float]]] = {}
    reference = []  # the boards a family's rate is the mean of
    for g in sorted(gpus):
        if g in aic or not any(key[h] == key[g] for h in aic):
            reference.append(g)
            fam = fams.setdefault(key[g], {})
            for p, v in gpus[g].items():
                fam.setdefault(p, []).append(v)
    return {
        "gpus": dict(sorted(gpus.items())),
        "families": {
            f: {p: round(statistics.mean(v), 4) for p, v in sorted(ps.items())}
            for f, ps in sorted(fams.items())
        },
        "reference": reference,
        "bridges": {**bridges, "all": every},
    }


def write(rows: list[dict], path: Path | None = None) -> Path:
    return write_csv(path or shipped_dir() / FILE, COLUMNS, rows)


if __name__ == "__main__":  # pragma: no cover
    refresh(__doc__, extract, write)
