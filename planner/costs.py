"""What a GPU costs over the horizon, on the scenario's basis.

Purchase: capex repaid as an annuity at the cost of capital over ``years`` (the standard
capital-recovery factor r / (1 − (1 + r)^−years)), plus energy at TDP × PUE around the clock
(a ceiling: real draw is lower when idle), plus optional hosting per kW. Rental: the
on-demand $/GPU-hour around the clock. Both are reported per year and over the horizon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimator.hardware import Accelerator

from .scenario import Cost

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class GpuCost:
    gpu: str
    per_year: float  # USD per GPU per year
    horizon: float  # USD per GPU over the horizon
    capex: float  # purchase price (0 on rental)
    energy_per_year: float
    power_kw: float  # facility draw at TDP × PUE
    note: str


def capital_recovery(rate: float, years: float) -> float:
    """Annual payment per dollar borrowed at ``rate`` over ``years``: ``r / (1 − (1+r)^−n)``,
    computed as ``r / −expm1(−n·log1p(r))`` so that a tiny rate does not round to 1/0."""
    paid = -math.expm1(-years * math.log1p(rate))
    return 1.0 / years if rate == 0 or paid == 0 else rate / paid


def gpu_cost(gpu: Accelerator, cost: Cost) -> GpuCost | None:
    """Cost of one GPU, or None when its preset lacks the price for this basis."""
    kw = gpu.tdp_w / 1000.0 * cost.pue
    energy = kw * HOURS_PER_YEAR * cost.electricity_usd_per_kwh
    hosting = kw * 12 * cost.hosting_usd_per_kw_month
    if cost.basis == "rental":
        if not gpu.rental_usd_per_hour:
            return None
        per_year = gpu.rental_usd_per_hour * HOURS_PER_YEAR
        return GpuCost(
            gpu.name,
            per_year,
            per_year * cost.years,
            0.0,
            0.0,
            kw,
            f"rental ${gpu.rental_usd_per_hour:g}/GPU-h (energy included)",
        )
    if not gpu.price_usd:
        return None
    annuity = gpu.price_usd * capital_recovery(cost.cost_of_capital, cost.years)
    per_year = annuity + energy + hosting
    return GpuCost(
        gpu.name,
        per_year,
        per_year * cost.years,
        gpu.price_usd,
        energy,
        kw,
        f"capex ${gpu.price_usd:,.0f} at {cost.cost_of_capital:.0%} over "
        f"{cost.years:g} y + energy {kw:.2f} kW at ${cost.electricity_usd_per_kwh:g}/kWh",
    )
