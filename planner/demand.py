"""People -> seats. A seat runs around the clock; a person drives a session part of a day.

``seats = users × hours_per_person ÷ (24 × utilisation)``: hours per person is how long
someone actually drives a session; utilisation is how much of round-the-clock capacity
bursty demand lets you consume. Seats are concurrent sessions a fleet must hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .scenario import (
    EmbeddingWorkload,
    ImageGenerationWorkload,
    LLMWorkload,
    RobotPolicyWorkload,
    SpeechWorkload,
    VideoGenerationWorkload,
    WorldModelWorkload,
)


@dataclass(frozen=True)
class Demand:
    workload: str
    unit: str  # 'seats' for language models; other families bring their own unit
    amount: float  # exact
    required: int  # what the fleet must cover, in units / scale (rounded up)
    arithmetic: str
    scale: int = 1  # rates are counted in thousandths so the optimiser stays in integers

    @property
    def display_required(self) -> float:
        return self.required / self.scale


def seats(users: float, hours_per_person: float, utilisation: float) -> float:
    return users * hours_per_person / (24.0 * utilisation)


def demand_of(w) -> Demand:
    if isinstance(w, EmbeddingWorkload):
        return _rate(w.name, "docs/s", w.docs_per_s, f"{w.docs_per_s:g} documents/s at peak")
    if isinstance(w, WorldModelWorkload):
        return _rate(w.name, "clips/s", w.clips_per_s, f"{w.clips_per_s:g} clips/s at peak")
    if isinstance(w, ImageGenerationWorkload):
        return _rate(w.name, "images/s", w.rate, f"{w.rate:g} images/s at peak")
    if isinstance(w, VideoGenerationWorkload):
        return _rate(
            w.name, "videos/h", w.videos_per_hour, f"{w.videos_per_hour:g} videos/hour at peak"
        )
    if isinstance(w, RobotPolicyWorkload):
        return Demand(
            w.name,
            "robots",
            w.robots,
            max(1, math.ceil(w.robots - 1e-9)),
            f"{w.robots:g} robots at {w.control_hz:g} Hz",
        )
    if isinstance(w, SpeechWorkload):
        if w.streams is not None:
            s, text = w.streams, f"{w.streams:g} concurrent real-time streams"
        else:
            s = w.audio_hours_per_day / (24.0 * w.utilisation)
            text = (
                f"{w.audio_hours_per_day:g} audio hours/day ÷ (24 h × {w.utilisation:g}) "
                f"= {s:,.1f} real-time streams"
            )
        return Demand(w.name, "streams", s, max(1, math.ceil(s - 1e-9)), text)
    return _seats(w)


def _rate(name: str, unit: str, amount: float, text: str) -> Demand:
    from .family_capacity import RATE_SCALE

    return Demand(
        name, unit, amount, max(1, math.ceil(amount * RATE_SCALE - 1e-6)), text, RATE_SCALE
    )


def _seats(w: LLMWorkload) -> Demand:
    s = seats(w.users, w.hours_per_person, w.utilisation)
    text = (
        f"{w.users:g} users × {w.hours_per_person:g} h ÷ (24 h × {w.utilisation:g}) "
        f"= {s:,.1f} seats"
    )
    return Demand(w.name, "seats", s, max(1, math.ceil(s - 1e-9)), text)
