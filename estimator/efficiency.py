"""Efficiency factors: achieved fractions of datasheet peaks, from ``calibration.yaml``.

The single documented place for them. Per hardware family overrides fall back to the
defaults. A user can pass their own :class:`Efficiency` to :func:`estimator.estimate_replica`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True)
class Efficiency:
    memory: float
    compute: float
    comm_latency_scale: float
    collective_base_us: float
    layer_overhead_us: float
    step_overhead_ms: float
    seq_overhead_us: float


@dataclass(frozen=True)
class LinkDefaults:
    nic_latency_us: float


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    text = resources.files("estimator").joinpath("calibration.yaml").read_text()
    return yaml.safe_load(text)


def efficiency_key(gpu) -> str:
    """The calibration group of a GPU: its architecture family, split by memory technology
    (GDDR boards reach a different share of their bandwidth than HBM parts of the same
    architecture, and sit on PCIe)."""
    gddr = "GDDR" in (gpu.memory_type or "").upper()
    return f"{gpu.family}-gddr" if gddr else gpu.family


def efficiency_for(
    family: str, precision: str | None = None, engine: str | None = None
) -> Efficiency:
    """The family's factors. Its compute factor holds at the precision it was fitted at; at
    another precision the row-weighted mean of the families fitted at that precision is
    used when there are any (the share of peak a kernel reaches depends on the precision:
    FP4 GEMMs reach less of their peak than FP8 ones), else the family's own, unless one of
    the two is FP4 and the other not: then the defaults' (8/16-bit) compute."""
    cal = calibration()
    base = Efficiency(**cal["defaults"])
    fams = cal.get("families") or {}
    over = {k: v for k, v in (fams.get(family) or {}).items() if k in ("memory", "compute")}
    fitted_at = (fams.get(family) or {}).get("compute_precision")
    if precision and fitted_at and precision != fitted_at:
        same = [f for f in fams.values() if f.get("compute_precision") == precision]
        if same:
            w = sum(f.get("rows", 1) for f in same)
            over["compute"] = sum(f["compute"] * f.get("rows", 1) for f in same) / w
        elif (fitted_at == "fp4") != (precision == "fp4"):
            # an FP4 share of peak says nothing of 8/16-bit math (and back): the defaults,
            # fitted on the 8/16-bit families, hold
            over.pop("compute", None)
    host = (cal.get("engines") or {}).get(engine or "")
    if host:  # the engine's own host work per step and per running sequence
        over.update({k: host[k] for k in ("step_overhead_ms", "seq_overhead_us")})
    return replace(base, **over)


def fitted_engines() -> list[str]:
    """The serving engines with host overheads of their own in the calibration."""
    return sorted(calibration().get("engines") or {})


def link_defaults() -> LinkDefaults:
    return LinkDefaults(**calibration()["links"])


@dataclass(frozen=True)
class EngineHost:
    """Host time of a non-graph serving engine per decoder layer per decoding step:
    ``layer_us`` per layer and ``layer_seq_us`` per layer per running sequence (kernel
    launches and the engine's loop around them, logits processors, beam bookkeeping), fitted
    per engine by ``planner calibrate`` from that engine's published runs. Per layer because
    launches are: openai/whisper's README times its 4-decoder-layer turbo ~8x faster than
    the 32-layer large. Zero for engines with no entry (graph-captured engines, whose
    per-step costs are the LLM-fitted ones)."""

    layer_us: float = 0.0
    layer_seq_us: float = 0.0
    rows: int = 0


def engine_host(family: str, engine: str) -> EngineHost:
    entry = ((calibration().get("family_engines") or {}).get(family) or {}).get(engine)
    if not entry:
        return EngineHost()
    return EngineHost(
        float(entry["layer_us"]), float(entry["layer_seq_us"]), int(entry.get("rows", 0))
    )
