"""Per-collective interconnect costs (alpha-beta model) on the link a group actually uses.

A group of n GPUs uses the scale-up fabric (NVLink/NVSwitch, Infinity Fabric) while it fits
the scale-up domain; PCIe-only cards talk over PCIe; a group wider than the domain pays the
scale-out NIC for its inter-node part (hierarchical: reduce-scatter inside the node, all-reduce
of 1/domain of the data across nodes, all-gather inside the node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .efficiency import Efficiency, link_defaults
from .errors import SplitError
from .hardware import Accelerator


@dataclass(frozen=True)
class Link:
    kind: str
    bandwidth: Any  # bytes/s per GPU per direction (float; an array when stacked)
    latency: Any  # seconds per message step (alpha)


def link_of(gpu: Accelerator) -> tuple[str, float]:
    """The kind and rate (bytes/s per direction) of the link a GPU's group uses in a box:
    its scale-up fabric, or PCIe for a card without one."""
    su = gpu.scale_up
    if su.kind in ("pcie", "none") or su.bandwidth_gb_s <= 0:
        return "pcie", gpu.pcie_gb_s * 1e9
    return su.kind, su.bandwidth_gb_s * 1e9


def intra_link(gpu: Accelerator, eff: Efficiency) -> Link:
    kind, rate = link_of(gpu)
    return Link(kind, rate, gpu.scale_up.latency_us * 1e-6 * eff.comm_latency_scale)


PCIE_HOP_US = 1.0  # NCCL's tuning.cc hwLat for PCI, as the PCIe cards' presets carry


def host_link(gpu: Accelerator, eff: Efficiency) -> Link:
    """The host's PCIe, which joins NVLink-bridged cards' groups inside one server."""
    return Link("pcie", gpu.pcie_gb_s * 1e9, PCIE_HOP_US * 1e-6 * eff.comm_latency_scale)


def nic_link(gpu: Accelerator, eff: Efficiency) -> Link:
    """The scale-out NIC (a GPU without one in its preset has none: Fabric.outer)."""
    return Link(
        "nic",
        gpu.scale_out_gb_s * 1e9,
        link_defaults().nic_latency_us * 1e-6 * eff.comm_latency_scale,
    )


def ring_shares(gpu: Accelerator) -> tuple[float, float, float]:
    """The shares of its link's rate a ring all-reduce of 2, 4 and 8+ of these GPUs reaches:
    the preset's own server where it carries a measurement, else its fabric's measured
    median (LinkDefaults.allreduce_bus_share; 1 where none is applied)."""
    kind, rate = link_of(gpu)
    shares = link_defaults().ring_shares(kind)
    if own := gpu.scale_up.allreduce_bus_gb_s:  # the preset's own server, measured
        sizes = zip((2, 4, 8), shares, strict=True)
        shares = tuple(own[n] * 1e9 / rate if n in own else s for n, s in sizes)
    return shares  # type: ignore[return-value]


def ring_share(shares: tuple, n: int):
    """Of the shares at 2, 4 and 8+ GPUs, the one a ring of ``n`` runs at: 3 takes 4's,
    5-7 take 8's (the measured size at or above it: a wider ring crosses more hops)."""
    s2, s4, s8 = shares
    if np.ndim(n):  # stacked fabrics: each row its own group size
        return np.where(n <= 2, s2, np.where(n <= 4, s4, s8))
    return s2 if n <= 2 else s4 if n <= 4 else s8


def pcie_ring_note(gpu: Accelerator, par) -> str | None:
    """What an estimate says of a tensor-parallel ring of more than two PCIe cards (None
    for fewer, over a scale-up link, or under attention-DP): the share it is priced at, and
    how far servers stray from it."""
    n, own = par.tp, gpu.scale_up.allreduce_bus_gb_s  # own: the preset's server, measured
    if n <= 2 or par.attention_dp or link_of(gpu)[0] != "pcie" or own:
        return None
    share = ring_share(ring_shares(gpu), n)
    return (
        f"TP={n} over PCIe: its all-reduces run at {share:.0%} of the x16 rate (NCCL's ring "
        "on the median measured server; servers reach 5-63% at 8 GPUs by their switches, "
        "sockets and P2P settings, and no engine runs its own all-reduce there; a preset's "
        "scale_up.allreduce_bus_gb_s gives your server's nccl-tests busbw instead)"
    )


def domain(gpu: Accelerator) -> int:
    """GPUs that reach each other without the NIC: the scale-up domain, or one PCIe host (8)."""
    if link_of(gpu)[0] == "pcie":  # PCIe cards in one host talk through the PCIe switch
        return max(gpu.scale_up.domain_size, 8)
    return gpu.scale_up.domain_size


def _ring_allreduce(n, msg, link: Link, share=1.0):
    """Ring all-reduce of ``msg`` bytes over ``n`` GPUs: 2(n-1)·α + 2(n-1)/n · M / (s·B), s the
    share of the link's rate the ring reaches at that size (``Fabric.ring``)."""
    bw = link.bandwidth * share
    return 2 * (n - 1) * link.latency + 2 * (n - 1) / n * np.asarray(msg, float) / bw


def _base(eff: Efficiency) -> float:
    return eff.collective_base_us * 1e-6


@dataclass(frozen=True)
class Fabric:
    """The links one replica's collectives cross: its scale-up link, its NIC (None where
    the preset has no scale-out network), the GPUs the scale-up link reaches, and each
    collective's fixed launch cost. Its numbers may be arrays (one per GPU type: the
    fabrics of one split on many types, :meth:`stack`), all of one shape."""

    intra: Link
    nic: Link | None
    domain: Any  # GPUs without the NIC (int; an array when stacked)
    base: Any  # seconds: a collective's fixed cost (Efficiency.collective_base_us)
    name: str = ""  # the GPU's (stacked: each one's, joined), for the error of a missing NIC
    # the share of the intra link's rate a ring all-reduce reaches at 2, 4 and 8+ GPUs
    # (measured NCCL bus bandwidth: LinkDefaults.allreduce_bus_share; arrays when stacked)
    shares: tuple = (1.0, 1.0, 1.0)
    # NVLink-bridged PCIe cards: the GPUs one server joins over its PCIe beyond the bridge
    # (the domain elsewhere), that PCIe link and its ring shares
    host: Any = None
    pcie: Link | None = None
    pcie_shares: tuple = (1.0, 1.0, 1.0)

    @staticmethod
    def of(gpu: Accelerator, eff: Efficiency) -> Fabric:
        nic = nic_link(gpu, eff) if gpu.scale_out_gb_s else None
        intra, dom = intra_link(gpu, eff), domain(gpu)
        host = max(gpu.scale_up.host_gpus or dom, dom)
        pcie_shares = link_defaults().ring_shares("pcie")
        return Fabric(
            intra, nic, dom, _base(eff), gpu.name, ring_shares(gpu),
            host, host_link(gpu, eff), pcie_shares,
        )  # fmt: skip

    def ring(self, n):
        """The share of the intra link's rate a ring all-reduce of ``n`` GPUs reaches."""
        return ring_share(self.shares, n)

    @staticmethod
    def stack(fabrics: list[Fabric]) -> Fabric:
        """One fabric whose numbers are columns, a row per fabric given (every one with a
        NIC, or none)."""

        def col(values) -> np.ndarray:
            return np.array(values, float)[:, None]

        def links(ls: list[Link]) -> Link:
            return Link(ls[0].kind, col([x.bandwidth for x in ls]), col([x.latency for x in ls]))

        nics = [f.nic for f in fabrics]
        if any(x is None for x in nics) and not all(x is None for x in nics):
            raise ValueError("stacked fabrics either all have a NIC or none has")
        return Fabric(
            links([f.intra for f in fabrics]),
            None if nics[0] is None else links(nics),  # type: ignore[arg-type]
            np.array([f.domain for f in fabrics])[:, None],
            col([f.base for f in fabrics]),
            ", ".join(f.name for f in fabrics),
            tuple(col([f.shares[i] for f in fabrics]) for i in range(3)),
            np.array([f.host for f in fabrics])[:, None],
            links([f.pcie for f in fabrics]),  # type: ignore[misc]
            tuple(col([f.pcie_shares[i] for f in fabrics]) for i in range(3)),
        )

    def inside(self, n: int) -> bool:
        """Whether a group of ``n`` GPUs fits the scale-up domain (stacked: for every row,
        which stacking keeps alike: :func:`regime`)."""
        fits = np.asarray(n <= self.domain)
        if fits.all() or not fits.any():
            return bool(fits.all())
        raise ValueError(f"stacked fabrics differ in whether {n} GPUs fit their domain")

    def in_host(self, n: int) -> bool:
        """Whether a group of ``n`` GPUs wider than the domain stays in one server's PCIe
        (NVLink-bridged cards; stacked: alike in every row, as :func:`regime` keeps them)."""
        return bool(np.all(n <= np.asarray(self.host)))

    def outer(self, n: int | None = None) -> Link:
        """The link a group wider than the domain crosses: the host's PCIe while ``n`` GPUs
        fit one server of bridged cards, else the NIC."""
        if n is not None and self.pcie is not None and self.in_host(n):
            return self.pcie
        if self.nic is None:
            raise SplitError(
                f"{self.name} has no scale-out network in its preset: a replica must fit "
                f"its {self.domain}-GPU scale-up/host domain"
            )
        return self.nic


def group_link(fab: Fabric, n: int) -> str:
    """Name of the slowest link a group of ``n`` GPUs crosses."""
    if n <= 1:
        return "none"
    return fab.intra.kind if fab.inside(n) else fab.outer(n).kind


def regime(fab: Fabric, *groups: int) -> tuple[bool, ...]:
    """Which of these group sizes fit ``fab``'s domain, and whether it has a NIC: fabrics
    alike in these take the same branches (stack only such ones)."""
    host = np.asarray(fab.domain if fab.host is None else fab.host)
    return (*(n <= fab.domain for n in groups), *(n <= host for n in groups), fab.nic is not None)


def allreduce(fab: Fabric, n: int, msg):
    """Seconds for one all-reduce of ``msg`` bytes (per GPU) across ``n`` GPUs."""
    if n <= 1:
        return np.zeros_like(np.asarray(msg, float))
    if fab.inside(n):
        return fab.base + _ring_allreduce(n, msg, fab.intra, fab.ring(n))
    inner = np.minimum(fab.domain, n)
    nodes = -(-n // inner)
    outer = fab.outer(n)  # the host's PCIe (bridged cards in one server) or the NIC
    share = ring_share(fab.pcie_shares, nodes) if outer is fab.pcie else 1.0
    return (
        2 * fab.base
        + _ring_allreduce(inner, msg, fab.intra, fab.ring(inner))
        + _ring_allreduce(nodes, np.asarray(msg, float) / inner, outer, share)
    )


def alltoall(fab: Fabric, n: int, msg):
    """Seconds for one all-to-all where each GPU sends ``msg`` bytes spread over the group:
    (n-1)·α + (n-1)/n · M / B, on the slowest link crossed."""
    if n <= 1:
        return np.zeros_like(np.asarray(msg, float))
    link = fab.intra if fab.inside(n) else fab.outer(n)
    return fab.base + (n - 1) * link.latency + (n - 1) / n * np.asarray(msg, float) / link.bandwidth


def p2p(fab: Fabric, n_total: int, msg):
    """Seconds to send ``msg`` bytes to the next pipeline stage (inside the domain or not)."""
    link = fab.intra if fab.inside(n_total) else fab.outer(n_total)
    return fab.base + link.latency + np.asarray(msg, float) / link.bandwidth
