"""People -> seats. A seat runs around the clock; a person drives a session part of a day.

``seats = users × hours_per_person ÷ (24 × utilisation)``: hours per person is how long
someone actually drives a session; utilisation is how much of round-the-clock capacity
bursty demand lets you consume. Seats are concurrent sessions a fleet must hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .scenario import LLMWorkload


@dataclass(frozen=True)
class Demand:
    workload: str
    unit: str  # 'seats' for language models; other families bring their own unit
    amount: float  # exact
    required: int  # what the fleet must cover (rounded up)
    arithmetic: str


def seats(users: float, hours_per_person: float, utilisation: float) -> float:
    return users * hours_per_person / (24.0 * utilisation)


def demand_of(w: LLMWorkload) -> Demand:
    s = seats(w.users, w.hours_per_person, w.utilisation)
    text = (
        f"{w.users:g} users × {w.hours_per_person:g} h ÷ (24 h × {w.utilisation:g}) "
        f"= {s:,.1f} seats"
    )
    return Demand(w.name, "seats", s, max(1, math.ceil(s - 1e-9)), text)
