"""Uncertain inputs for Monte-Carlo what-ifs: any number in a scenario may be a distribution,
``users: {dist: lognormal, median: 2000, sigma: 0.4}``, which ``planner sweep --samples K``
draws from (``solve`` refuses it: a plan is sized on numbers). Draws are seeded per sample,
so a sample is the same whichever machine or backend runs it."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ScenarioError


class Distribution(BaseModel):
    """``lognormal`` (median, sigma of the log), ``normal`` (mean, sd), ``uniform`` (low,
    high) or ``triangular`` (low, mode, high); ``round``: draw whole numbers (token counts);
    ``low``/``high`` also clip lognormal and normal draws when given."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    dist: Literal["lognormal", "normal", "uniform", "triangular"]
    median: float | None = Field(None, gt=0)
    sigma: float | None = Field(None, ge=0, le=10)
    mean: float | None = None
    sd: float | None = Field(None, ge=0)
    low: float | None = None
    high: float | None = None
    mode: float | None = None
    round: bool = False

    @model_validator(mode="after")
    def _parameters(self) -> Distribution:
        need = {
            "lognormal": ("median", "sigma"),
            "normal": ("mean", "sd"),
            "uniform": ("low", "high"),
            "triangular": ("low", "mode", "high"),
        }[self.dist]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"a {self.dist} distribution needs {', '.join(need)}")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError("low must not exceed high")
        if self.dist == "triangular" and not self.low <= self.mode <= self.high:
            raise ValueError("a triangular distribution needs low <= mode <= high")
        return self

    def draw(self, rng: np.random.Generator) -> float | int:
        d = self.dist
        if d == "lognormal":
            x = float(self.median * np.exp(self.sigma * rng.standard_normal()))
        elif d == "normal":
            x = float(self.mean + self.sd * rng.standard_normal())
        elif d == "uniform":
            x = float(rng.uniform(self.low, self.high))
        elif self.low == self.high:  # a degenerate triangle: the one value
            x = float(self.low)
        else:
            x = float(rng.triangular(self.low, self.mode, self.high))
        if self.low is not None or self.high is not None:
            x = float(np.clip(x, self.low, self.high))
        return int(round(x)) if self.round else x


def find_distributions(data: Any, where: str = "") -> dict[str, Distribution]:
    """Every distribution in a scenario's raw data, by dotted key (list items by name)."""
    out: dict[str, Distribution] = {}
    if isinstance(data, dict):
        if "dist" in data:
            try:
                return {where: Distribution.model_validate(data)}
            except ValidationError as e:
                err = e.errors()[0]
                raise ScenarioError(f"{where}: {err['msg']}") from None
        for k, v in data.items():
            out |= find_distributions(v, f"{where}.{k}" if where else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            name = v.get("name") if isinstance(v, dict) else None
            out |= find_distributions(v, f"{where}.{name if name else i}")
    return out


def draw_all(dists: dict[str, Distribution], seed: int, sample: int) -> dict[str, float | int]:
    """One sample's values: sample ``k`` of seed ``s`` draws from its own stream, key by key
    in sorted order, so it does not depend on the other samples or on where it runs."""
    rng = np.random.default_rng([seed, sample])
    return {k: dists[k].draw(rng) for k in sorted(dists)}
