"""The share of datasheet HBM/GDDR bandwidth a weight-streaming GEMM reaches, measured per GPU
at kernel level: the memory share the estimator's decode steps run at, fixed by kernel data
rather than fitted to end-to-end rows.

Source: NVIDIA AIConfigurator's silicon database (PyPI ``aiconfigurator-core``, Apache-2.0),
``aiconfigurator_core/systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet``:
measured latencies of GEMMs by (m, n, k, dtype) on each system. A GEMM with one token row
(m = 1) and a large weight matrix is bound by streaming the weights: its bytes over its latency
is the bandwidth a decode step's weight reads reach. Per system we take the median of that
bandwidth over the BF16 m = 1 GEMMs of at least ``MIN_BYTES`` weight bytes (small ones carry
the kernel's fixed launch and ramp time, which the per-layer overhead holds), and divide it
by the GPU preset's own datasheet bandwidth (what the estimator multiplies).

The extracted figures live in ``calibration/data/kernel_bandwidth.csv`` (package data): the
planner never needs AIConfigurator. To refresh them from a newer wheel (needs pandas and
pyarrow)::

    python -m calibration.kernel_bandwidth PATH/TO/aiconfigurator_core [VERSION]
"""

from __future__ import annotations

import csv
import sys
from functools import lru_cache
from pathlib import Path

from . import shipped_dir

FILE = "kernel_bandwidth.csv"
MIN_BYTES = 256e6  # weight bytes: well past the L2 caches (50-126 MB) and the fixed costs
# AIConfigurator system -> this catalogue's GPU preset (the same part and memory)
SYSTEMS = {
    "a100_sxm": "a100-80gb-sxm",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000",
}
COLUMNS = ("system", "gpu", "framework", "version", "gemms", "tb_s", "source")


def extract(root: Path, package_version: str) -> list[dict]:
    """One row per mapped system: its median weight-streaming bandwidth (TB/s)."""
    import pandas as pd  # noqa: PLC0415 (a maintainer's tool: pandas and pyarrow on demand)

    rows = []
    for system, gpu in SYSTEMS.items():
        for f in gemm_collections(root, system):
            n, tb_s = streaming_tb_s(pd.read_parquet(f))
            if n < 3:
                continue
            row = collection_row(root, system, gpu, f, package_version)
            rows.append({**row, "gemms": n, "tb_s": round(tb_s, 4)})
            break
    return rows


def gemm_collections(root: Path, system: str) -> list[Path]:
    """A system's GEMM tables, TensorRT-LLM's collection first where there is one (its GEMMs
    are what its engines run)."""
    files = sorted((root / "systems" / "data" / system / "gemm").glob("*/*/gemm_perf.parquet"))
    return sorted(files, key=lambda f: (f.parts[-3] != "trtllm", f.parts[-3], f.parts[-2]))


def collection_row(root: Path, system: str, gpu: str, f: Path, package_version: str) -> dict:
    """The columns every row extracted from one of AIConfigurator's tables starts with."""
    rel = f.relative_to(root.parent).as_posix()
    return {
        "system": system,
        "gpu": gpu,
        "framework": f.parts[-3],
        "version": f.parts[-2],
        "source": f"aiconfigurator-core {package_version} (PyPI, Apache-2.0): {rel}",
    }


def streaming_tb_s(gemms) -> tuple[int, float]:
    """(GEMMs used, median TB/s) over a GEMM table's (AIConfigurator's columns: gemm_dtype,
    m, n, k, latency in ms) BF16 one-row GEMMs of at least ``MIN_BYTES`` of weights: the
    weights plus the row in and out, over the latency."""
    d = gemms[(gemms.gemm_dtype == "bfloat16") & (gemms.m == 1)]
    weight = d.n.astype(float) * d.k * 2.0
    d, weight = d[weight >= MIN_BYTES], weight[weight >= MIN_BYTES]
    if not len(d):
        return 0, float("nan")
    bw = (weight + 2.0 * (d.n + d.k)) / (d.latency * 1e-3)
    return len(d), float(bw.median()) / 1e12


def load(path: Path | None = None) -> list[dict]:
    """The shipped rows (``COLUMNS``), ``tb_s`` as float."""
    return read_csv(path or shipped_dir() / FILE, tb_s=float)


def read_csv(path: Path, **numbers) -> list[dict]:
    """The rows of one of the kernel-level tables, the columns named in ``numbers`` (name ->
    int or float) as numbers."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for col, kind in numbers.items():
            r[col] = kind(r[col])
    return rows


def memory_shares(path: Path | None = None) -> dict[str, dict]:
    """Efficiency family -> {memory: the mean share of its GPUs' datasheet bandwidth that
    their weight-streaming GEMMs reach, gpus: the presets it was measured on}."""
    from estimator.catalog import get_gpu
    from estimator.efficiency import efficiency_key

    by_family: dict[str, list[tuple[str, float]]] = {}
    for r in load(path):
        g = get_gpu(r["gpu"])
        share = r["tb_s"] * 1e12 / g.bandwidth_bytes_s
        by_family.setdefault(efficiency_key(g), []).append((r["gpu"], share))
    return {
        fam: {
            "memory": round(sum(s for _, s in xs) / len(xs), 4),
            "gpus": sorted(n for n, _ in xs),
        }
        for fam, xs in sorted(by_family.items())
    }


def pinned_shares() -> dict[str, float]:
    """Efficiency family -> the shipped memory share the fit pins (read once per process:
    a cross-validation fits about thirty times)."""
    return dict(_shipped_shares())


@lru_cache(maxsize=1)
def _shipped_shares() -> tuple[tuple[str, float], ...]:
    return tuple((f, v["memory"]) for f, v in memory_shares().items())


def write_csv(path: Path, columns: tuple[str, ...], rows: list[dict]) -> Path:
    """Rows of one of the AIConfigurator-extracted tables, their source quoted, atomically."""
    from estimator.files import atomic_write_text

    lines = [",".join(columns)]
    for r in rows:
        lines.append(",".join(f'"{r[c]}"' if c == "source" else str(r[c]) for c in columns))
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def refresh(doc: str, extract, write) -> None:  # pragma: no cover (a maintainer's refresh)
    """``python -m calibration.<module> PATH/TO/aiconfigurator_core [VERSION]``."""
    if len(sys.argv) < 2:
        sys.exit(doc)
    version = sys.argv[2] if len(sys.argv) > 2 else "unknown"
    print(write(extract(Path(sys.argv[1]), version)))


def write(rows: list[dict], path: Path | None = None) -> Path:
    return write_csv(path or shipped_dir() / FILE, COLUMNS, rows)


if __name__ == "__main__":  # pragma: no cover
    refresh(__doc__, extract, write)
