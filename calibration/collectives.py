"""The share of its link's datasheet rate a ring all-reduce reaches, measured per fabric and
group size at kernel level: what the estimator's tensor-parallel all-reduces run at, fixed by
kernel data rather than fitted to end-to-end rows.

Source: NVIDIA AIConfigurator's silicon database (PyPI ``aiconfigurator-core``, Apache-2.0),
``aiconfigurator_core/systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet``: measured
NCCL latencies by operation, GPU count and message size on each system. For a ring
all-reduce the bus bandwidth, ``2(n-1)/n x bytes / time``, is the per-GPU rate its slowest
link carries (``estimator.comm``'s ring formula divides by exactly that), so at the largest
message (512 MB, where the fixed costs vanish) bus bandwidth over the GPU preset's own link
rate (its scale-up bandwidth per direction; a PCIe card's x16 rate) is the share the link
reaches. A fabric's share at 2, 4 and 8 GPUs is the median over its measured systems and
NCCL versions, one vote per system.

Beside them, published ``nccl-tests`` runs on PCIe servers at NCCL's default configuration
(what a deployment gets untuned; 32 MB messages), each row citing its page. PCIe systems
differ by 10x (AIConfigurator's 8 L40S reach 1.5 GB/s, P2P-enabled RTX PRO 6000 servers
22-40 GB/s): the median is what an 8-GPU PCIe server of unknown build is priced at.

The extracted figures live in ``calibration/data/collective_bandwidth.csv`` (package data):
the planner never needs AIConfigurator. To refresh them from a newer wheel (needs pandas and
pyarrow)::

    python -m calibration.collectives PATH/TO/aiconfigurator_core [VERSION]
"""

from __future__ import annotations

import statistics
from pathlib import Path

from estimator.comm import link_of

from . import shipped_dir
from .kernel_bandwidth import SYSTEMS, read_csv, refresh, write_csv

FILE = "collective_bandwidth.csv"
# Where the serving engines' tensor-parallel all-reduce is NCCL's ring: over PCIe (vLLM and
# SGLang switch their own one-shot all-reduce off on more than two PCIe-only GPUs). Over
# NVLink they run their own kernels below a few MB, which NCCL's ring says nothing of: those
# fabrics keep their datasheet rate (their rows stay in the file, for reference)
APPLIED = ("pcie",)
GROUPS = (2, 4, 8)  # the group sizes measured; larger groups take the 8-GPU share
COLUMNS = ("system", "gpu", "nccl", "n_gpus", "bytes", "busbw_gb_s", "source")


def extract(root: Path, package_version: str) -> list[dict]:
    """One row per (system, NCCL version, GPU count): the half-precision all-reduce's bus
    bandwidth at its largest measured message."""
    import pandas as pd  # noqa: PLC0415 (a maintainer's tool: pandas and pyarrow on demand)

    rows = []
    for system, gpu in SYSTEMS.items():
        for f in sorted((root / "systems" / "data" / system / "comm" / "nccl").glob("*/*.parquet")):
            d = pd.read_parquet(f)
            d = d[(d.op_name == "all_reduce") & (d.nccl_dtype == "half")]
            rel = f.relative_to(root.parent).as_posix()
            for n, g in sorted(d.groupby("num_gpus")):
                big = g[g.message_size == g.message_size.max()]
                nbytes = int(big.message_size.iloc[0]) * 2  # message_size counts halves
                busbw = nbytes / (float(big.latency.median()) * 1e-3) * 2 * (n - 1) / n
                rows.append(
                    {
                        "system": system,
                        "gpu": gpu,
                        "nccl": f.parent.name,
                        "n_gpus": int(n),
                        "bytes": nbytes,
                        "busbw_gb_s": round(busbw / 1e9, 2),
                        "source": f"aiconfigurator-core {package_version} "
                        f"(PyPI, Apache-2.0): {rel}",
                    }
                )
    return rows


def load(path: Path | None = None) -> list[dict]:
    """The shipped rows (``COLUMNS``), numbers as numbers."""
    return read_csv(path or shipped_dir() / FILE, n_gpus=int, busbw_gb_s=float)


def bus_shares(path: Path | None = None) -> dict[str, dict[int, float]]:
    """Fabric (those in ``APPLIED``) -> {GPUs in the group: the median share of the link
    rate (``estimator.comm.link_of``: what the estimator divides by) its ring all-reduce
    reaches}."""
    from estimator.catalog import get_gpu

    per_system: dict[tuple[str, str, int], list[float]] = {}  # each system's NCCL versions
    for r in load(path):
        g = get_gpu(r["gpu"])
        kind, rate = link_of(g)
        share = r["busbw_gb_s"] * 1e9 / rate
        per_system.setdefault((kind, r["system"], r["n_gpus"]), []).append(share)
    by: dict[str, dict[int, list[float]]] = {}  # one vote per system
    for (kind, _, n), shares in per_system.items():
        if kind in APPLIED:
            by.setdefault(kind, {}).setdefault(n, []).append(statistics.median(shares))
    return {
        k: {n: round(statistics.median(v), 4) for n, v in sorted(per_n.items()) if n in GROUPS}
        for k, per_n in sorted(by.items())
    }


def write(rows: list[dict], path: Path | None = None) -> Path:
    """The extracted rows, and the published runs transcribed by hand (kept as they are)."""
    path = path or shipped_dir() / FILE
    kept = [r for r in load(path) if not r["source"].startswith("aiconfigurator")]
    return write_csv(path, COLUMNS, [*rows, *kept])


if __name__ == "__main__":  # pragma: no cover
    refresh(__doc__, extract, write)
