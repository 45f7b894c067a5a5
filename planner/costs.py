"""What each thing a fleet buys or rents costs over the horizon, line by line as finance
books it.

Purchase (a server, or with ``fleet.unit: gpu`` a loose GPU): the capital (GPUs, host,
networking) is repaid as an annuity at the cost of capital over ``years`` (the capital-recovery
factor r / (1 − (1 + r)^−years)); its straight-line share is booked under ``gpus``, ``hosts``
and ``networking`` and the rest under ``capital`` (the interest). Energy is the unit's maximum
draw × PUE around the clock (a ceiling: real draw is lower when idle); hosting is per kW of
that facility draw. Rental: the instance's (or GPU's) published $/hour around the clock,
energy and hosting included. Every line is per year; the horizon multiplies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from estimator.hardware import Accelerator

from .procurement import InstancePreset, ServerPreset
from .scenario import Cost

HOURS_PER_YEAR = 8760.0

# A GPU type in the fleet costs people, whatever its size: its own driver and runtime stack to
# qualify, images to build, kernels to tune, a spares pool to stock. Modelled as a quarter of an
# infrastructure engineer (a modelling choice; set cost.per_type_usd_per_year to replace it):
# BLS OEWS May 2023 median annual wage of Software Developers (SOC 15-1252) $132,270, loaded to
# employer cost by wages' ~70% share of compensation (BLS Employer Costs for Employee
# Compensation, private industry).
PER_TYPE_FTE = 0.25
ENGINEER_WAGE_USD = 132_270
WAGE_SHARE_OF_COMPENSATION = 0.70
PER_TYPE_USD_PER_YEAR = round(PER_TYPE_FTE * ENGINEER_WAGE_USD / WAGE_SHARE_OF_COMPENSATION)


@dataclass(frozen=True)
class Unit:
    """One thing a fleet buys or rents: a server, a cloud instance, or a loose GPU."""

    kind: str  # server | instance | gpu
    name: str  # server preset, cloud:instance, or GPU name
    label: str
    gpu: str
    vendor: str
    gpus: int
    spans: bool  # a replica may span several units (servers on a NIC; loose GPUs you rack)
    per_year: float  # USD
    capex: float  # purchase price (0 on rental)
    power_kw: float  # facility draw at maximum (× PUE)
    rack_units: int
    parts: dict[str, float] = field(default_factory=dict)  # USD per year by cost line
    cloud: str | None = None
    usd_per_hour: float | None = None
    note: str = ""
    # what one costs to buy as quoted (a server: its GPUs and host; the scale-out network is
    # its own cost line); None on rental
    price_usd: float | None = None

    def cost(self, years: float) -> int:
        """Whole USD over the horizon (the optimiser's integer objective)."""
        return int(math.ceil(self.per_year * years))


def capital_recovery(rate: float, years: float) -> float:
    """Annual payment per dollar borrowed at ``rate`` over ``years``: ``r / (1 − (1+r)^−n)``,
    computed as ``r / −expm1(−n·log1p(r))`` so that a tiny rate does not round to 1/0."""
    paid = -math.expm1(-years * math.log1p(rate))
    return 1.0 / years if rate == 0 or paid == 0 else rate / paid


def _purchase_parts(capital: dict[str, float], it_kw: float, cost: Cost) -> dict[str, float]:
    """Per-year lines of a purchase: straight-line capital by line, interest, energy, hosting."""
    total = sum(capital.values())
    parts = {k: v / cost.years for k, v in capital.items()}
    parts["capital"] = (
        total * capital_recovery(cost.cost_of_capital, cost.years) - total / cost.years
    )
    kw = it_kw * cost.pue
    parts["energy"] = kw * HOURS_PER_YEAR * cost.electricity_usd_per_kwh
    parts["hosting"] = kw * 12 * cost.hosting_usd_per_kw_month
    return parts


def networking_usd(hardware_usd: float, cost: Cost) -> float:
    """The scale-out network (switch ports, optics, cables) a server needs, as a share of the
    whole hardware bill: ``cost.networking_share`` of the total means share/(1−share) of the
    servers."""
    s = cost.networking_share
    return hardware_usd * s / (1 - s)


def server_unit(server: ServerPreset, gpu: Accelerator, cost: Cost) -> Unit | None:
    """A server bought outright; None when its host price or the GPU's is not known."""
    if server.host_usd is None or not gpu.price_usd:
        return None
    gpus_usd = gpu.price_usd * server.gpus
    net = networking_usd(gpus_usd + server.host_usd, cost)
    capital = {"gpus": gpus_usd, "hosts": server.host_usd, "networking": net}
    parts = _purchase_parts(capital, server.power_w / 1000, cost)
    return Unit(
        "server",
        server.name,
        server.label,
        gpu.name,
        gpu.vendor,
        server.gpus,
        True,
        sum(parts.values()),
        sum(capital.values()),
        server.power_w / 1000 * cost.pue,
        server.rack_units,
        parts,
        note=f"{server.label}: {server.gpus}x {gpu.name}, host ${server.host_usd:,.0f}, "
        f"{server.power_w / 1000:.1f} kW, {server.rack_units}U",
        price_usd=gpus_usd + server.host_usd,
    )


def instance_unit(inst: InstancePreset, gpu: Accelerator, cost: Cost) -> Unit | None:
    price = inst.price(cost.commitment)
    if price is None:
        return None
    per_year = price * HOURS_PER_YEAR
    return Unit(
        "instance",
        inst.key,
        f"{inst.cloud} {inst.name}",
        gpu.name,
        gpu.vendor,
        inst.gpus,
        inst.gpus > 1,  # single-GPU instances share no fast link: a replica stays on one
        per_year,
        0.0,
        gpu.tdp_w / 1000 * inst.gpus * cost.pue,
        0,
        {"instances": per_year},
        cloud=inst.cloud,
        usd_per_hour=price,
        note=f"{inst.cloud} {inst.name} ({inst.gpus}x {gpu.name}) ${price:g}/h {cost.commitment}",
    )


def gpu_unit(gpu: Accelerator, cost: Cost) -> Unit | None:
    """A loose GPU (``fleet.unit: gpu``, for owners of servers already): its own price and
    draw only; None when the preset lacks the price for this basis."""
    kw_it = gpu.tdp_w / 1000.0
    if cost.basis == "rental":
        if not gpu.rental_usd_per_hour:
            return None
        per_year = gpu.rental_usd_per_hour * HOURS_PER_YEAR
        return Unit(
            "gpu",
            gpu.name,
            gpu.name,
            gpu.name,
            gpu.vendor,
            1,
            True,
            per_year,
            0.0,
            kw_it * cost.pue,
            0,
            {"instances": per_year},
            usd_per_hour=gpu.rental_usd_per_hour,
            note=f"rental ${gpu.rental_usd_per_hour:g}/GPU-h (energy included)",
        )
    if not gpu.price_usd:
        return None
    parts = _purchase_parts({"gpus": gpu.price_usd}, kw_it, cost)
    return Unit(
        "gpu",
        gpu.name,
        gpu.name,
        gpu.name,
        gpu.vendor,
        1,
        True,
        sum(parts.values()),
        gpu.price_usd,
        kw_it * cost.pue,
        0,
        parts,
        note=f"capex ${gpu.price_usd:,.0f} at {cost.cost_of_capital:.0%} over "
        f"{cost.years:g} y + energy {kw_it * cost.pue:.2f} kW at "
        f"${cost.electricity_usd_per_kwh:g}/kWh",
        price_usd=gpu.price_usd,
    )
