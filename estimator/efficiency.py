"""Efficiency factors: achieved fractions of datasheet peaks, from ``calibration.yaml``.

The single documented place for them. Per hardware family overrides fall back to the
defaults. A user can pass their own :class:`Efficiency` to :func:`estimator.estimate_replica`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
    # the serving stack's own time from a request's arrival to its first token beyond the
    # GPU's work (HTTP, tokenising, admission, streaming the token back): the engine's own
    # server's (vllm serve, sglang.launch_server, trtllm-serve), fitted from TTFTs measured
    # through it (calibration.cases.frontend_of), 0 where it has too few
    request_overhead_ms: float = 0.0
    # the share of the memory share a W4A16 (int4 weight-only) kernel reaches as it streams
    # its weights: it unpacks, scales and shifts every weight beside the loads, where a
    # 16-bit or FP8 GEMM only loads them (fitted on the int4 rows; 1: as fast as those)
    int4_stream: float = 1.0


@dataclass(frozen=True)
class LinkDefaults:
    nic_latency_us: float
    # fabric (a link kind: 'pcie', the one calibration/collectives.py applies) ->
    # {GPUs in the group: the share of the link's datasheet rate a ring all-reduce reaches},
    # measured at kernel level (calibration/collectives.py); absent: the datasheet rate
    allreduce_bus_share: dict[str, dict[int, float]] = field(default_factory=dict)

    def ring_shares(self, kind: str) -> tuple[float, float, float]:
        """The shares at 2, 4 and 8 or more GPUs of a group on a ``kind`` link (a group size
        between two measured ones takes the next measured size's)."""
        table = self.allreduce_bus_share
        per_n = table.get(kind) or {}
        per_n = {int(n): float(v) for n, v in per_n.items()}
        return tuple(per_n.get(n, 1.0) for n in (2, 4, 8))  # type: ignore[return-value]


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    text = resources.files("estimator").joinpath("calibration.yaml").read_text()
    # libyaml when present: 17 -> 3 ms, paid by every command that estimates
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def efficiency_key(gpu) -> str:
    """The calibration group of a GPU: its architecture family, split by memory technology
    (GDDR boards reach a different share of their bandwidth than HBM parts of the same
    architecture, and sit on PCIe)."""
    gddr = "GDDR" in (gpu.memory_type or "").upper()
    return f"{gpu.family}-gddr" if gddr else gpu.family


# efficiency_for's answers, for the calibration they were read from (a solve builds thousands
# of evaluators on a few dozen (family, precision, engine) triples; Efficiency is frozen)
_ANSWERS: tuple[object, dict] = (None, {})


def efficiency_for(
    family: str, precision: str | None = None, engine: str | None = None
) -> Efficiency:
    """The family's factors, its compute factor at ``precision`` (:func:`compute_share`), and
    the engine's host overheads where it has its own."""
    global _ANSWERS
    cal = calibration()
    if _ANSWERS[0] is not cal:  # a calibration read afresh (after `calibrate --write`)
        _ANSWERS = (cal, {})
    known = _ANSWERS[1]
    key = (family, precision, engine)
    if key not in known:
        known[key] = _efficiency(cal, family, precision, engine)
    return known[key]


def _efficiency(cal: dict, family: str, precision: str | None, engine: str | None) -> Efficiency:
    base = Efficiency(**cal["defaults"])
    fams = cal.get("families") or {}
    over = {k: v for k, v in (fams.get(family) or {}).items() if k == "memory"}
    if "compute" in (fams.get(family) or {}):  # else its rows did not measure compute
        over["compute"] = compute_share(fams, base.compute, family, precision)
    host = (cal.get("engines") or {}).get(engine or "")
    if host:  # the engine's own host work per step, per running sequence, per request
        keys = ("step_overhead_ms", "seq_overhead_us", "request_overhead_ms")
        over.update({k: host[k] for k in keys if k in host})
    return replace(base, **over)


def fitted(family: str) -> tuple[bool, bool]:
    """Whether the calibration has a GPU family's own bandwidth share, and its own compute
    share (the rest are the defaults, fitted on other GPUs)."""
    fam = (calibration().get("families") or {}).get(family) or {}
    return "memory" in fam, "compute" in fam


def summary(gpu) -> dict[str, Any]:
    """The factors a GPU runs at: its calibration family, bandwidth share and compute share
    at each precision it has a peak for, which of them are the family's own, and the note an
    estimate on it carries where some are not."""
    key = efficiency_key(gpu)
    mem_own, cmp_own = fitted(key)
    out: dict[str, Any] = {
        "family": key,
        "bandwidth_share": round(efficiency_for(key).memory, 4),
        "bandwidth_own": mem_own,
        **{
            f"compute_share_{p}": round(efficiency_for(key, p).compute, 4)
            for p in ("bf16", "fp8", "fp4")
            if gpu.dense_tflops.get(p)
        },
        "compute_own": cmp_own,
    }
    if note := calibration_note(key):
        out["note"] = note
    return out


_NOTES: tuple[object, dict] = (None, {})


def calibration_note(family: str) -> str | None:
    """Which of a GPU family's factors (its bandwidth share, its compute share) the
    calibration has none of its own for, so that it takes the defaults: a plan on such a GPU
    leans on factors fitted on other GPUs. None where it has both."""
    global _NOTES
    cal = calibration()
    if _NOTES[0] is not cal:
        _NOTES = (cal, {})
    if family not in _NOTES[1]:
        d = cal["defaults"]
        own = dict(zip(("memory", "compute"), fitted(family), strict=True))
        missing = [
            (what, f"{d[key]:.0%} of peak {what}")
            for key, what in (("memory", "bandwidth"), ("compute", "compute"))
            if not own[key]
        ]
        _NOTES[1][family] = (
            f"the calibration has no factor of the {family} family's own for its "
            f"{' or '.join(w for w, _ in missing)} (too few published runs measure it): it "
            f"runs at the defaults fitted on other GPUs ({', '.join(t for _, t in missing)}), "
            "so its figures are less certain than their bands"
            if missing
            else None
        )
    return _NOTES[1][family]


def compute_share(families: dict, default: float, family: str, precision: str | None) -> float:
    """The compute factor of ``family`` at ``precision``, from calibration-shaped ``families``
    (name -> {compute, compute_precision, rows, compute_at: {precision: {compute, rows}}}).
    The share of peak a GEMM reaches depends on its precision (FP4 GEMMs reach less of their
    doubled peak than FP8 ones), so: the family's own factor where it was fitted at that
    precision; else the row-weighted mean of the families fitted at it; else the family's
    main factor, unless one of the two precisions is FP4 and the other not: then ``default``
    (the 8/16-bit defaults)."""
    fam = families.get(family)
    if not fam:
        return default
    own = _fitted_at(fam)
    if not precision or precision in own or not own:
        return own.get(precision, (fam["compute"], 0))[0]
    same = [g[precision] for g in map(_fitted_at, families.values()) if precision in g]
    if same:
        return sum(c * n for c, n in same) / sum(n for _, n in same)
    main = fam.get("compute_precision")
    if (main == "fp4") != (precision == "fp4"):
        return default
    return fam["compute"]


def _fitted_at(fam: dict) -> dict[str, tuple[float, int]]:
    """precision -> (compute factor, rows) of one family's fitted groups."""
    out = {}
    if fam.get("compute_precision"):
        out[fam["compute_precision"]] = (fam["compute"], fam.get("rows", 1))
    for p, g in (fam.get("compute_at") or {}).items():
        out[p] = (g["compute"], g.get("rows", 1))
    return out


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


def _family_engine_entry(family: str, engine: str) -> dict:
    """A family engine's fitted entry in the calibration (``family_engines``), {} if none."""
    return ((calibration().get("family_engines") or {}).get(family) or {}).get(engine) or {}


def engine_time_factor(family: str, engine: str) -> tuple[float, int]:
    """(time factor, published pairs behind it) of a family's engine on the work it runs
    (diffusion: the denoiser), fitted by ``planner calibrate``; (1.0, 0) where none is."""
    entry = _family_engine_entry(family, engine)
    if "time_factor" not in entry:
        return 1.0, 0
    return float(entry["time_factor"]), int(entry.get("rows", 0))


def engine_host(family: str, engine: str) -> EngineHost:
    entry = _family_engine_entry(family, engine)
    if not entry:
        return EngineHost()
    return EngineHost(
        float(entry["layer_us"]), float(entry["layer_seq_us"]), int(entry.get("rows", 0))
    )
