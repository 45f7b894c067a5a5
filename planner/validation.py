"""Validate the estimator against published measurements, and fit its efficiency factors.

Each CSV row (columns of ``validation/README.md``) becomes a *case*: the estimator's step
times decomposed once into raw physics (bytes ÷ peak bandwidth, FLOPs ÷ peak FLOPS,
collective bytes ÷ link bandwidth and hop latencies, how many collectives and layers a step
runs). A prediction under any efficiency factors is then closed-form arithmetic over all cases,
so fitting them and cross-validating is fast, and it is the same physics as ``estimate``:

    step = max(memory_raw / memory_eff, compute_raw / compute_eff) + comm_raw
           + collectives × collective_base + layers × layer_overhead + step_overhead

The serving formulas on top (closed loop, saturated throughput) are those of
:mod:`estimator.serving`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from estimator import EstimatorError, Evaluator, Parallel, get_gpu, get_model
from estimator.efficiency import Efficiency, efficiency_for
from estimator.serving import closed_loop, saturated_tokens_per_s

COLUMNS = [
    "source",
    "model",
    "params_b",
    "gpu",
    "n_gpus",
    "tp",
    "pp",
    "ep",
    "weight_dtype",
    "kv_dtype",
    "framework",
    "isl",
    "osl",
    "concurrency_or_batch",
    "metric",
    "value",
    "notes",
]

# Rows the fit leaves out (still reported): their number is dominated by something the
# roofline does not claim to model row by row.
FIT_EXCLUDE_FLAGS = ("QUEUEING-DOMINATED", "SPECULATIVE", "MTP speculative", "READ-FROM-CHART")

_WEIGHTS = {
    "fp16": "fp16",
    "bf16": "bf16",
    "fp16/bf16": "bf16",
    "fp8": "fp8",
    "fp4": "fp4",
    "int4-awq": "int4",
    "w4a8-awq": "int4",
    "int8": "int8",
    "int4": "int4",
    "mxfp4": "fp4",
}
_KV = {
    "fp16": "bf16",
    "bf16": "bf16",
    "fp16/bf16": "bf16",
    "fp8": "fp8",
    "int8": "fp8",
    "int4": "int4",
}
_GPU_ALIASES = {"GB200 (NVL72)": "gb200", "GH200-120GB (96GB HBM3)": "gh200-96gb"}

UNIT = Efficiency(
    memory=1.0,
    compute=1.0,
    comm_latency_scale=1.0,
    collective_base_us=0.0,
    layer_overhead_us=0.0,
    step_overhead_ms=0.0,
    seq_overhead_us=0.0,
)


@dataclass
class Parts:
    """One step decomposed: seconds at 100% efficiency and no fixed overheads."""

    memory: np.ndarray
    compute: np.ndarray
    comm: np.ndarray
    collectives: np.ndarray  # count, for the per-collective base latency
    layers: np.ndarray  # count, for the per-layer overhead
    seqs: np.ndarray  # count, for the per-sequence host overhead

    @staticmethod
    def stack(items: list[Parts]) -> Parts:
        return Parts(
            *(
                np.array([float(getattr(p, f)) for p in items])
                for f in ("memory", "compute", "comm", "collectives", "layers", "seqs")
            )
        )

    def time(self, mem_eff, cmp_eff, base_s, layer_s, step_s, seq_s):
        t = np.maximum(self.memory / mem_eff, self.compute / cmp_eff) + self.comm
        return t + self.collectives * base_s + self.layers * layer_s + step_s + self.seqs * seq_s


@dataclass
class Case:
    idx: int
    row: dict
    family: str
    source_key: str
    kind: str  # offline | closed
    metric: str
    measured: float
    batch: float
    isl: int
    osl: int
    replicas: int
    n_gpus: int
    percentile: float
    fit: bool
    assumptions: list[str] = field(default_factory=list)
    dec: Parts | None = None
    first: Parts | None = None
    pre: Parts | None = None


@dataclass
class Skipped:
    idx: int
    row: dict
    reason: str


def _int(v: str) -> int | None:
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def source_key(src: str) -> str:
    """Group rows by publisher for leave-one-source-out (the part before the first path)."""
    s = src.strip()
    for sep in (" @", " (", "#"):
        s = s.split(sep)[0]
    if s.startswith("http"):
        parts = s.split("/")
        return "/".join(parts[:4]) if len(parts) > 3 else s
    return s.split(":")[0] + (":" + s.split(":")[1].split("/")[0] if ":" in s else "")


def _decompose(ev: Evaluator, ev1: Evaluator, st_fn) -> Parts:
    """Raw parts at unit efficiency; counts read off by re-running with unit overheads."""
    a, b = st_fn(ev), st_fn(ev1)
    layers = ev.pp * ev.layers_per_stage
    seqs = (b.overhead - a.overhead) / 1e-6 - layers - 1000.0
    return Parts(a.memory, a.compute, a.comm, (b.comm - a.comm) / 1e-6, layers, seqs)


def prepare(idx: int, row: dict) -> Case | Skipped:
    """Resolve a CSV row to a case, or say why it cannot be evaluated."""
    metric = row.get("metric", "").strip()
    try:
        measured = float(row.get("value", ""))
    except ValueError:
        return Skipped(idx, row, "value is not a number")
    try:
        model = get_model(row["model"].split(" ")[0])
    except EstimatorError:
        return Skipped(idx, row, f"unknown model '{row['model']}'")
    gname = _GPU_ALIASES.get(row["gpu"].strip(), row["gpu"].strip())
    try:
        gpu = get_gpu(gname)
    except EstimatorError:
        return Skipped(idx, row, f"unknown GPU '{row['gpu']}'")
    wd = row.get("weight_dtype", "").strip().lower()
    if wd not in _WEIGHTS:
        return Skipped(idx, row, f"weight format '{wd or 'blank'}' not published")
    notes = row.get("notes", "")
    assumptions = []
    weights = _WEIGHTS[wd]
    if wd == "w4a8-awq":
        assumptions.append("W4A8 modelled as W4A16")
    kd = row.get("kv_dtype", "").strip().lower()
    if kd in _KV:
        kv = _KV[kd]
    else:  # not stated: ModelOpt FP8/FP4 checkpoints ship an FP8 KV cache; others 16-bit
        kv = "fp8" if weights in ("fp8", "fp4") else "bf16"
        assumptions.append(f"KV format not stated: assumed {kv}")
    tp, pp = _int(row.get("tp")), _int(row.get("pp")) or 1
    n = _int(row.get("n_gpus"))
    if tp is None or n is None:
        return Skipped(idx, row, "parallel split not published")
    if n % (tp * pp):
        return Skipped(idx, row, f"n_gpus {n} is not a multiple of TP×PP")
    ep = _int(row.get("ep")) or 1
    attn_dp = "attention_dp" in notes and tp > 1
    if model.is_moe and "--ep" in notes and ep == 1 and tp > 1:
        ep = tp
        assumptions.append(f"EP size not published: assumed EP={tp}")
    if attn_dp:
        assumptions.append("attention data-parallel (enable_attention_dp)")
    fw = row.get("framework", "").lower()
    engine = (
        "trtllm"
        if ("trt" in fw or "nim" in fw or "tensorrt" in fw)
        else ("sglang" if "sglang" in fw else "vllm")
    )
    isl, osl = _int(row.get("isl")), _int(row.get("osl"))
    if not isl or not osl:
        return Skipped(idx, row, "variable-length dataset: input length not published")
    par = Parallel(
        tp=tp,
        pp=pp,
        ep=ep if ep <= tp and tp % ep == 0 else 1,
        attention_dp=attn_dp,
        replicas=n // (tp * pp),
    )
    try:
        ev = Evaluator(model, gpu, par, weights, kv, engine, UNIT)
    except EstimatorError as e:
        return Skipped(idx, row, f"split rejected: {e}")
    ev1 = ev.with_efficiency(
        replace(
            UNIT,
            collective_base_us=1.0,
            layer_overhead_us=1.0,
            step_overhead_ms=1.0,
            seq_overhead_us=1.0,
        )
    )
    conc = _int(row.get("concurrency_or_batch"))
    max_b = int(ev.max_batch(isl + osl))
    if max_b < 1:
        return Skipped(idx, row, "does not fit in memory in the estimator")
    if conc is None:
        kind, b = "offline", min(max_b, ev.engine.max_num_seqs)
    else:
        kind, b = "closed", conc / par.replicas
        if b > max_b:
            assumptions.append(
                f"concurrency {b:g} per replica exceeds the {max_b} that fit: capped"
            )
            b = max_b
    known = {
        "output_tok_s_total",
        "output_tok_s_per_gpu",
        "throughput_tok_s_total",
        "ttft_ms",
        "itl_ms",
        "tpot_ms",
        "tok_s_per_user",
    }
    if metric not in known:
        return Skipped(idx, row, f"metric '{metric}' not evaluated")
    if kind == "offline" and metric in ("ttft_ms", "itl_ms", "tpot_ms", "tok_s_per_user"):
        return Skipped(idx, row, "latency under an offline/server load without its concurrency")
    case = Case(
        idx,
        row,
        gpu.family,
        source_key(row.get("source", "")),
        kind,
        metric,
        measured,
        b,
        isl,
        osl,
        par.replicas,
        n,
        50.0,
        fit=not any(f in notes for f in FIT_EXCLUDE_FLAGS),
        assumptions=assumptions,
    )
    ctx = isl + osl / 2
    case.dec = _decompose(ev, ev1, lambda e: e.decode_step(b, ctx))
    case.first = _decompose(ev, ev1, lambda e: e.decode_step(b, isl))
    case.pre = _decompose(ev, ev1, lambda e: e.prefill(1, isl))
    return case


def load_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            r = csv.DictReader(f)
            missing = [
                c for c in ("model", "gpu", "metric", "value") if c not in (r.fieldnames or [])
            ]
            if missing:
                raise EstimatorError(f"{p}: missing columns {', '.join(missing)}")
            for row in r:
                row["_file"] = str(p)
                rows.append(row)
    return rows


# ---- the parameter vector ---------------------------------------------------------------
GLOBAL = ("collective_base_us", "layer_overhead_us", "step_overhead_ms", "seq_overhead_us")


@dataclass
class Params:
    families: dict[str, tuple[float, float]]  # family -> (memory, compute)
    collective_base_us: float
    layer_overhead_us: float
    step_overhead_ms: float
    seq_overhead_us: float

    def eff(self, family: str) -> tuple[float, float]:
        return self.families.get(family, self.families.get("default", (0.8, 0.6)))


def current_params(families: list[str]) -> Params:
    fams = {}
    for f in [*families, "default"]:
        e = efficiency_for(f if f != "default" else "__none__")
        fams[f] = (e.memory, e.compute)
    e = efficiency_for("__none__")
    return Params(
        fams, e.collective_base_us, e.layer_overhead_us, e.step_overhead_ms, e.seq_overhead_us
    )


class Batch:
    """All cases as arrays, for fast prediction under any parameters."""

    def __init__(self, cases: list[Case]):
        self.cases = cases
        self.dec = Parts.stack([c.dec for c in cases])
        self.first = Parts.stack([c.first for c in cases])
        self.pre = Parts.stack([c.pre for c in cases])
        self.b = np.array([c.batch for c in cases])
        self.osl = np.array([c.osl for c in cases], float)
        self.isl = np.array([c.isl for c in cases], float)
        self.rep = np.array([c.replicas for c in cases], float)
        self.ngpu = np.array([c.n_gpus for c in cases], float)
        self.measured = np.array([c.measured for c in cases])
        self.family = np.array([c.family for c in cases])
        self.kind = np.array([c.kind for c in cases])
        self.metric = np.array([c.metric for c in cases])

    def predict(self, p: Params) -> np.ndarray:
        me = np.array([p.eff(f)[0] for f in self.family])
        ce = np.array([p.eff(f)[1] for f in self.family])
        k = (
            p.collective_base_us * 1e-6,
            p.layer_overhead_us * 1e-6,
            p.step_overhead_ms * 1e-3,
            p.seq_overhead_us * 1e-6,
        )
        t_dec = self.dec.time(me, ce, *k)
        t_first = self.first.time(me, ce, *k)
        s = self.pre.compute / ce + self.pre.comm + self.pre.collectives * k[0]
        s_alone = self.pre.time(me, ce, *k)
        out = np.empty(len(self.cases))
        for i in range(len(self.cases)):
            osl = int(self.osl[i])
            if self.kind[i] == "offline":
                tok = self.rep[i] * saturated_tokens_per_s(t_dec[i], s[i], self.b[i], osl)
                tpot = ttft = float("nan")
            else:
                lt = closed_loop(t_dec[i], t_first[i], s[i], s_alone[i], self.b[i], osl, 50.0)
                tok = self.rep[i] * float(lt.output_tokens_per_s)
                tpot, ttft = float(lt.tpot_s), float(lt.ttft_mean_s)
            m = self.metric[i]
            out[i] = {
                "output_tok_s_total": tok,
                "output_tok_s_per_gpu": tok / self.ngpu[i],
                "throughput_tok_s_total": tok * (self.isl[i] + osl) / osl,
                "ttft_ms": ttft * 1e3,
                "itl_ms": tpot * 1e3,
                "tpot_ms": tpot * 1e3,
                "tok_s_per_user": 1.0 / tpot if tpot == tpot else float("nan"),
            }[m]
        return out


def error_pct(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    return 100.0 * (pred - meas) / meas


def metric_class(metric: str) -> str:
    return "latency" if metric in ("ttft_ms", "itl_ms", "tpot_ms") else "throughput"


# ---- fitting ------------------------------------------------------------------------------
MIN_ROWS_PER_FAMILY = 15


def fit(cases: list[Case]) -> tuple[Params, dict]:
    """Least squares on log(predicted/measured) over the fit-eligible cases, with bounds
    that keep every factor physical (efficiencies in (0, 1], overheads >= 0)."""
    from scipy.optimize import least_squares

    use = [c for c in cases if c.fit]
    batch = Batch(use)
    counts: dict[str, int] = {}
    for c in use:
        counts[c.family] = counts.get(c.family, 0) + 1
    fams = sorted(f for f, n in counts.items() if n >= MIN_ROWS_PER_FAMILY)

    def unpack(x: np.ndarray) -> Params:
        d = {"default": (x[0], x[1])}
        for i, f in enumerate(fams):
            d[f] = (x[2 + 2 * i], x[3 + 2 * i])
        k = 2 + 2 * len(fams)
        return Params(d, x[k], x[k + 1], x[k + 2], x[k + 3])

    x0 = [0.8, 0.6] + [0.8, 0.6] * len(fams) + [6.6, 4.0, 1.0, 2.0]
    lo = [0.2, 0.1] + [0.2, 0.1] * len(fams) + [0.0, 0.0, 0.0, 0.0]
    hi = [1.0, 1.0] + [1.0, 1.0] * len(fams) + [50.0, 50.0, 20.0, 50.0]

    def resid(x):
        r = np.log(batch.predict(unpack(x)) / batch.measured)
        return np.nan_to_num(r, nan=3.0, posinf=3.0, neginf=-3.0)

    res = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.2, x_scale="jac")
    p = unpack(res.x)
    info = {
        "rows": len(use),
        "families_fitted": fams,
        "rows_per_family": counts,
        "cost": float(res.cost),
        "success": bool(res.success),
    }
    return p, info


def summarise(cases: list[Case], pred: np.ndarray) -> dict:
    """Median and p90 absolute % error and signed bias (median), by metric class, GPU family
    and source."""
    err = error_pct(pred, np.array([c.measured for c in cases]))

    def stats(mask):
        e = err[mask]
        e = e[np.isfinite(e)]
        if not len(e):
            return None
        return {
            "n": int(len(e)),
            "median_abs_pct": float(np.median(np.abs(e))),
            "p90_abs_pct": float(np.percentile(np.abs(e), 90)),
            "bias_pct": float(np.median(e)),
        }

    out: dict[str, Any] = {"all": stats(np.ones(len(cases), bool))}
    for key, fn in (
        ("metric", lambda c: metric_class(c.metric)),
        ("family", lambda c: c.family),
        ("source", lambda c: c.source_key),
    ):
        groups = sorted({fn(c) for c in cases})
        out[key] = {g: stats(np.array([fn(c) == g for c in cases])) for g in groups}
    return out


def cross_validate(cases: list[Case]) -> np.ndarray:
    """Leave-one-source-out: each source predicted by factors fitted on the others."""
    pred = np.full(len(cases), np.nan)
    sources = sorted({c.source_key for c in cases})
    for s in sources:
        train = [c for c in cases if c.source_key != s]
        test_idx = [i for i, c in enumerate(cases) if c.source_key == s]
        if not any(c.fit for c in train):
            continue
        p, _ = fit(train)
        pred[test_idx] = Batch([cases[i] for i in test_idx]).predict(p)
    return pred


def finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else x
