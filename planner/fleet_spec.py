"""What the optimiser is given and what it returns: the ways to serve each workload
(:class:`Option`), what can be bought (:class:`Purchase`), the fleet's limits and the
solution. :mod:`planner.optimize` solves; :mod:`planner.packing` builds the fleet's rows."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Option:
    """One way to serve one workload: a candidate replica and what it costs and holds."""

    workload: str
    gpu: str
    vendor: str
    gpus: int  # per replica
    capacity: int  # demand units per replica
    cost: int  # whole USD per replica over the horizon
    power_w: int  # facility watts per replica
    key: tuple  # stable identity for ordering and exclusion


@dataclass(frozen=True)
class Purchase:
    """What the fleet buys for a GPU type: a server, an instance shape, or one loose GPU.
    Replicas are packed onto them; a replica larger than a unit spans whole units."""

    gpu: str
    vendor: str
    gpus: int
    cost: int  # whole USD over the horizon
    power_w: int  # facility watts
    rack_units: int = 0
    spans: bool = True  # a replica may span several of these units (whole nodes on a NIC)


@dataclass(frozen=True)
class Limits:
    single_type: bool = False
    available: dict[str, int] | None = None
    max_usd: float | None = None
    max_power_kw: float | None = None
    max_types: int | None = None  # at most this many GPU types in the fleet
    max_vendors: int | None = None
    type_cost: int = 0  # whole USD over the horizon per GPU type in the fleet
    spares: int = 0  # spare units per pool (GPU type x unit kind) in use: N+k
    max_rack_units: int | None = None
    max_rack_power_kw: float | None = None  # the racks' power: max_racks x max_kw_per_rack

    @property
    def power_cap_w(self) -> int | None:
        """The tighter of the facility power cap and the racks' power, in whole watts."""
        caps = [c for c in (self.max_power_kw, self.max_rack_power_kw) if c is not None]
        return int(min(caps) * 1000) if caps else None


@dataclass(frozen=True)
class Solution:
    """The solver's answer. ``status``: optimal | feasible (the time limit stopped the proof)
    | infeasible (no plan) | unknown (the time limit stopped it before any plan)."""

    status: str
    replicas: dict[int, int]  # option index -> replicas (non-zero only)
    gpus_by_type: dict[str, int]  # GPUs in service (bought units, spares apart)
    cost: int
    gpus: int
    units: dict[int, int] = field(default_factory=dict)  # purchase index -> units in service
    spares: dict[int, int] = field(default_factory=dict)  # purchase index -> spare units

    @property
    def found(self) -> bool:
        return self.status in ("optimal", "feasible")

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"
