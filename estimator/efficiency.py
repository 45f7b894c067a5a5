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
    family: str, precision: str | None = None, engine: str | None = None, dense: bool = False
) -> Efficiency:
    """The family's factors, its compute factor at ``precision`` (:func:`compute_share`), and
    the engine's host overheads where it has its own (``dense``: a dense model's request
    time where its dense models have their own)."""
    global _ANSWERS
    cal = calibration()
    if _ANSWERS[0] is not cal:  # a calibration read afresh (after `calibrate --write`)
        _ANSWERS = (cal, {})
    known = _ANSWERS[1]
    key = (family, precision, engine, dense)
    if key not in known:
        known[key] = _efficiency(cal, family, precision, engine, dense)
    return known[key]


def _efficiency(
    cal: dict, family: str, precision: str | None, engine: str | None, dense: bool = False
) -> Efficiency:
    base = Efficiency(**cal["defaults"])
    fams = cal.get("families") or {}
    over = {k: v for k, v in (fams.get(family) or {}).items() if k == "memory"}
    over["compute"] = compute_share(fams, base.compute, family, precision)
    host = (cal.get("engines") or {}).get(engine or "")
    if host:  # the engine's own host work per step, per running sequence, per request
        keys = ("step_overhead_ms", "seq_overhead_us", "request_overhead_ms")
        over.update({k: host[k] for k in keys if k in host})
        if dense and "dense_request_overhead_ms" in host:  # what its dense models measure
            over["request_overhead_ms"] = host["dense_request_overhead_ms"]
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
            f"compute_share_{p}": round(efficiency_for(key, p).compute * board_ratio(gpu), 4)
            for p in ("bf16", "fp8", "fp4")
            if gpu.dense_tflops.get(p)
        },
        "compute_own": cmp_own,
    }
    gemm = {  # the measured GEMM kernels' share of peak: the GPU's own, else its family's
        p: v
        for p in ("bf16", "fp8", "fp4")
        if gpu.dense_tflops.get(p) and (v := _gpu_kernel_share(gpu, p))
    }
    if gemm:
        out["gemm_kernel_share"] = gemm
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
        own = dict(zip(("memory", "compute"), fitted(family), strict=True))
        kernels = kernel_share(family, "bf16") is not None  # its compute from its GEMM kernels
        at = {
            "memory": f"{efficiency_for(family).memory:.0%} of peak bandwidth",
            "compute": f"{efficiency_for(family, 'bf16').compute:.0%} of peak BF16 compute"
            + (
                " on its reference boards, each board at its GEMM kernels' measured rate"
                if kernels
                else ""
            ),
        }
        missing = [
            (what, at[key])
            for key, what in (("memory", "bandwidth"), ("compute", "compute"))
            if not own[key]
        ]
        whence = (
            "factors fitted on other GPUs"
            if kernels and not own["compute"]
            else "the defaults fitted on other GPUs"
        )
        _NOTES[1][family] = (
            f"the calibration has no factor of the {family} family's own for its "
            f"{' or '.join(w for w, _ in missing)} (too few published runs measure it): it "
            f"runs at {whence} ({', '.join(t for _, t in missing)}), "
            "so its figures are less certain than their bands"
            if missing
            else None
        )
    return _NOTES[1][family]


def compute_share(families: dict, default: float, family: str, precision: str | None) -> float:
    """The compute factor of ``family`` at ``precision``, from calibration-shaped ``families``
    (name -> {compute, compute_precision, rows, compute_at: {precision: {compute, rows}}}).

    The family's own factor where it was fitted at that precision; else the row-weighted
    mean of the families fitted at it; else the family's main factor, unless one of the two
    precisions is FP4 and the other not (FP4 GEMMs reach a smaller share of their doubled
    peak). A family with no factor of its own (no published runs of its own measure its
    compute: Ampere, Ada), or fitted only at FP4 and asked for 8- or 16-bit math, runs at its
    GPUs' GEMM kernels' rate (:func:`kernel_share`, measured) times the share of their
    kernels' rate the families fitted at 8 or 16 bits reach as served models: the kernels
    say how far a board's sustained clocks and precision put it below its datasheet peak
    (A100's BF16 GEMMs reach 84% of it, L40S's 56%, H100's FP8 61%), the fitted families
    what serving adds on top.
    (FP4 keeps the shares of peak fitted on other families: the engines' FP4 paths reach
    more than the FP4 GEMM kernels measured alone; so does a family without kernel data, at
    its precision.) ``default`` where none of that is known.
    """
    fam = families.get(family)
    own = _fitted_at(fam) if fam else {}
    if own and (not precision or precision in own):
        return own.get(precision, (fam["compute"], 0))[0]
    same = _weighted([g[precision] for g in map(_fitted_at, families.values()) if precision in g])
    if own:
        if same is not None:
            return same
        if (fam.get("compute_precision") == "fp4") == (precision == "fp4"):
            return fam["compute"]
    k, pooled = kernel_share(family, precision), _model_share_of_kernels(families)
    if k and pooled and precision != "fp4":
        return pooled * k
    return same if same is not None else default


def _weighted(pairs: list[tuple[float, int]]) -> float | None:
    """The row-weighted mean of (value, rows) pairs; None for none."""
    return sum(v * n for v, n in pairs) / sum(n for _, n in pairs) if pairs else None


def _gemm(level: str) -> dict:
    """One level of ``calibration.yaml``'s ``gemm_share`` (gpus, families, reference)."""
    return (calibration().get("gemm_share") or {}).get(level) or {}


def kernel_share(family: str, precision: str | None) -> float | None:
    """The share of its datasheet dense peak a compute-bound GEMM reaches at ``precision`` on
    the ``family``'s GPUs, measured at kernel level (``calibration.yaml``'s ``gemm_share``,
    calibration/kernel_compute.py): the mean of the family's measured GPUs; None where none
    was measured at it."""
    p = "bf16" if precision == "fp16" else precision  # one tensor-core rate
    return (_gemm("families").get(family) or {}).get(p)


def board_ratio(gpu) -> float:
    """The rate a board's compute-bound BF16 GEMMs reach over its efficiency family's
    (``gemm_share``: measured, calibration/kernel_compute.py): boards of one family sustain
    different clocks under load (the 72 W L4, the 350 W L40S and the 450 W RTX 4090 are one
    family), so its compute share is its family's times this; 1 where either is unmeasured.
    One number per board, from BF16 (the precision every measured board has): what it says
    is the board's clocks and power, which every precision's math runs at."""
    if gpu.name in _gemm("reference"):  # the family's rate is these boards' mean
        return 1.0
    own = (_gemm("gpus").get(gpu.name) or {}).get("bf16")
    fam = kernel_share(efficiency_key(gpu), "bf16")
    return own / fam if own and fam else 1.0


def _gpu_kernel_share(gpu, precision: str) -> float | None:
    """The board's measured GEMM share at ``precision``: its own, else its family's at the
    board's standing (:func:`board_ratio`)."""
    own = _gemm("gpus").get(gpu.name) or {}
    fam = kernel_share(efficiency_key(gpu), precision)
    return own.get(precision) or (round(fam * board_ratio(gpu), 4) if fam else None)


def _model_share_of_kernels(families: dict) -> float | None:
    """The row-weighted mean, over the fitted 8- and 16-bit groups of the families whose GPUs
    were measured at kernel level, of the fitted factor over the kernels' share: the share of
    the GEMM kernels' rate a served model reaches (norms, activations, attention's softmax and
    the kernels' own gaps between them). None where no such group is fitted."""
    measured = _gemm("families")
    return _weighted(
        [
            (c / measured[f][p], n)
            for f, fam in families.items()
            for p, (c, n) in _fitted_at(fam).items()
            if p != "fp4" and measured.get(f, {}).get(p)
        ]
    )


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
