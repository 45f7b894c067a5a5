"""Per-collective interconnect costs (alpha-beta model) on the link a group actually uses.

A group of n GPUs uses the scale-up fabric (NVLink/NVSwitch, Infinity Fabric) while it fits
the scale-up domain; PCIe-only cards talk over PCIe; a group wider than the domain pays the
scale-out NIC for its inter-node part (hierarchical: reduce-scatter inside the node, all-reduce
of 1/domain of the data across nodes, all-gather inside the node).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .efficiency import Efficiency, link_defaults
from .errors import SplitError
from .hardware import Accelerator


@dataclass(frozen=True)
class Link:
    kind: str
    bandwidth: float  # bytes/s per GPU per direction
    latency: float  # seconds per message step (alpha)


def intra_link(gpu: Accelerator, eff: Efficiency) -> Link:
    su = gpu.scale_up
    if su.kind in ("pcie", "none") or su.bandwidth_gb_s <= 0:
        return Link("pcie", gpu.pcie_gb_s * 1e9, su.latency_us * 1e-6 * eff.comm_latency_scale)
    return Link(su.kind, su.bandwidth_gb_s * 1e9, su.latency_us * 1e-6 * eff.comm_latency_scale)


def nic_link(gpu: Accelerator, eff: Efficiency) -> Link:
    if not gpu.scale_out_gb_s:
        raise SplitError(
            f"{gpu.name} has no scale-out network in its preset: a replica must fit "
            f"its {domain(gpu)}-GPU scale-up/host domain"
        )
    return Link(
        "nic",
        gpu.scale_out_gb_s * 1e9,
        link_defaults().nic_latency_us * 1e-6 * eff.comm_latency_scale,
    )


def domain(gpu: Accelerator) -> int:
    """GPUs that reach each other without the NIC: the scale-up domain, or one PCIe host (8)."""
    su = gpu.scale_up
    if su.kind in ("pcie", "none") or su.bandwidth_gb_s <= 0:
        return max(su.domain_size, 8)  # PCIe cards in one host talk through the PCIe switch
    return su.domain_size


def group_link(gpu: Accelerator, n: int, eff: Efficiency) -> str:
    """Name of the slowest link a group of ``n`` GPUs crosses."""
    if n <= 1:
        return "none"
    return intra_link(gpu, eff).kind if n <= domain(gpu) else "nic"


def _ring_allreduce(n: int, msg, link: Link):
    """Ring all-reduce of ``msg`` bytes over ``n`` GPUs: 2(n-1)·α + 2(n-1)/n · M / B."""
    return 2 * (n - 1) * link.latency + 2 * (n - 1) / n * np.asarray(msg, float) / link.bandwidth


def _base(eff: Efficiency) -> float:
    return eff.collective_base_us * 1e-6


def allreduce(gpu: Accelerator, n: int, msg, eff: Efficiency):
    """Seconds for one all-reduce of ``msg`` bytes (per GPU) across ``n`` GPUs."""
    if n <= 1:
        return np.zeros_like(np.asarray(msg, float))
    d = domain(gpu)
    if n <= d:
        return _base(eff) + _ring_allreduce(n, msg, intra_link(gpu, eff))
    inner = min(d, n)
    nodes = -(-n // inner)
    return (
        2 * _base(eff)
        + _ring_allreduce(inner, msg, intra_link(gpu, eff))
        + _ring_allreduce(nodes, np.asarray(msg, float) / inner, nic_link(gpu, eff))
    )


def alltoall(gpu: Accelerator, n: int, msg, eff: Efficiency):
    """Seconds for one all-to-all where each GPU sends ``msg`` bytes spread over the group:
    (n-1)·α + (n-1)/n · M / B, on the slowest link crossed."""
    if n <= 1:
        return np.zeros_like(np.asarray(msg, float))
    link = intra_link(gpu, eff) if n <= domain(gpu) else nic_link(gpu, eff)
    return (
        _base(eff) + (n - 1) * link.latency + (n - 1) / n * np.asarray(msg, float) / link.bandwidth
    )


def p2p(gpu: Accelerator, n_total: int, msg, eff: Efficiency):
    """Seconds to send ``msg`` bytes to the next pipeline stage (inside the domain or not)."""
    link = intra_link(gpu, eff) if n_total <= domain(gpu) else nic_link(gpu, eff)
    return _base(eff) + link.latency + np.asarray(msg, float) / link.bandwidth
