"""Demand in each workload kind's unit. Language models: people -> seats. A seat runs around
the clock; a person drives a session part of a day.

``seats = users × hours_per_person ÷ (24 × utilisation)``: hours per person is how long
someone actually drives a session; utilisation is how much of round-the-clock capacity
bursty demand lets you consume. Seats are concurrent sessions a fleet must hold. The other
families bring rates (documents/s, images/s, ...) or concurrent streams and robots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .workloads import (
    EmbeddingWorkload,
    ImageGenerationWorkload,
    LLMWorkload,
    RobotPolicyWorkload,
    SpeechWorkload,
    VideoGenerationWorkload,
    WorldModelWorkload,
)

RATE_SCALE = 1000  # demand and capacity of rate units in thousandths: CP-SAT stays in integers


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


def _rate(name: str, unit: str, amount: float, text: str) -> Demand:
    return Demand(
        name, unit, amount, max(1, math.ceil(amount * RATE_SCALE - 1e-6)), text, RATE_SCALE
    )


def _count(name: str, unit: str, amount: float, text: str) -> Demand:
    return Demand(name, unit, amount, max(1, math.ceil(amount - 1e-9)), text)


def llm_seats(w: LLMWorkload) -> Demand:
    s = seats(w.users, w.hours_per_person, w.utilisation)
    text = (
        f"{w.users:g} users × {w.hours_per_person:g} h ÷ (24 h × {w.utilisation:g}) "
        f"= {s:,.1f} seats"
    )
    return _count(w.name, "seats", s, text)


def embedding_rate(w: EmbeddingWorkload) -> Demand:
    return _rate(w.name, "docs/s", w.docs_per_s, f"{w.docs_per_s:g} documents/s at peak")


def clip_rate(w: WorldModelWorkload) -> Demand:
    return _rate(w.name, "clips/s", w.clips_per_s, f"{w.clips_per_s:g} clips/s at peak")


def image_rate(w: ImageGenerationWorkload) -> Demand:
    return _rate(w.name, "images/s", w.rate, f"{w.rate:g} images/s at peak")


def video_rate(w: VideoGenerationWorkload) -> Demand:
    return _rate(
        w.name, "videos/h", w.videos_per_hour, f"{w.videos_per_hour:g} videos/hour at peak"
    )


def robots(w: RobotPolicyWorkload) -> Demand:
    return _count(w.name, "robots", w.robots, f"{w.robots:g} robots at {w.control_hz:g} Hz")


def speech_streams(w: SpeechWorkload) -> Demand:
    if w.streams is not None:
        s, text = w.streams, f"{w.streams:g} concurrent real-time streams"
    else:
        s = w.audio_hours_per_day / (24.0 * w.utilisation)
        text = (
            f"{w.audio_hours_per_day:g} audio hours/day ÷ (24 h × {w.utilisation:g}) "
            f"= {s:,.1f} real-time streams"
        )
    return _count(w.name, "streams", s, text)
