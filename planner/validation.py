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
from estimator.efficiency import Efficiency, efficiency_for, efficiency_key
from estimator.serving import lockstep, saturated_tokens_per_s

from .files import atomic_write_text

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
    clients: float  # closed loop: clients per replica (may exceed the running batch)
    fit: bool
    assumptions: list[str] = field(default_factory=list)
    dec: Parts | None = None
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
    """Group rows by publication for leave-one-source-out: a repository (owner/name) or a
    web page's site and first path segment."""
    s = src.strip().split(" ")[0]
    if s.startswith("http"):
        parts = s.split("/")
        return "/".join(parts[2:4]) if len(parts) > 3 else parts[2]
    if ":" in s:
        kind, rest = s.split(":", 1)
        return f"{kind}:{'/'.join(rest.split('/')[:2])}"
    return s


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
    max_b = min(int(ev.max_batch(isl + osl)), ev.max_seqs)
    if max_b < 1:
        return Skipped(idx, row, "does not fit in memory in the estimator")
    if conc is None:
        kind, b, clients = "offline", max_b, float(max_b)
    else:  # fixed-length closed loop: lockstep waves of at most max_b running sequences
        kind, clients = "closed", conc / par.replicas
        b = min(clients, max_b)
        if clients > max_b:
            assumptions.append(f"{clients:g} clients per replica, {max_b} fit: the rest wait")
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
        efficiency_key(gpu),
        source_key(row.get("source", "")),
        kind,
        metric,
        measured,
        b,
        isl,
        osl,
        par.replicas,
        n,
        clients,
        fit=not any(f in notes for f in FIT_EXCLUDE_FLAGS),
        assumptions=assumptions,
    )
    ctx = isl + osl / 2
    case.dec = _decompose(ev, ev1, lambda e: e.decode_step(b, ctx))
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
        self.pre = Parts.stack([c.pre for c in cases])
        self.b = np.array([c.batch for c in cases])
        self.clients = np.array([c.clients for c in cases])
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
        s = self.pre.compute / ce + self.pre.comm + self.pre.collectives * k[0]
        s_alone = self.pre.time(me, ce, *k)
        out = np.empty(len(self.cases))
        for i in range(len(self.cases)):
            osl = int(self.osl[i])
            if self.kind[i] == "offline":
                tok = self.rep[i] * saturated_tokens_per_s(t_dec[i], s[i], self.b[i], osl)
                tpot = ttft = float("nan")
            else:
                lt = lockstep(t_dec[i], s[i], s_alone[i], self.clients[i], osl, self.b[i])
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
    # The defaults (for families without enough data) are fitted only on rows of such
    # families; when there are none they become the row-weighted mean of the fitted families.
    own_default = any(counts[f] for f in counts if f not in fams)
    nd = 2 if own_default else 0

    def unpack(x: np.ndarray) -> Params:
        d = {}
        for i, f in enumerate(fams):
            d[f] = (x[nd + 2 * i], x[nd + 1 + 2 * i])
        if own_default:
            d["default"] = (x[0], x[1])
        else:
            w = np.array([counts[f] for f in fams], float)
            d["default"] = tuple(
                float(np.average([d[f][k] for f in fams], weights=w)) for k in (0, 1)
            )
        k = nd + 2 * len(fams)
        return Params(d, x[k], x[k + 1], x[k + 2], x[k + 3])

    x0 = [0.8, 0.6] * (len(fams) + nd // 2) + [6.6, 4.0, 1.0, 2.0]
    lo = [0.2, 0.1] * (len(fams) + nd // 2) + [0.0, 0.0, 0.0, 0.0]
    hi = [1.0, 1.0] * (len(fams) + nd // 2) + [50.0, 200.0, 20.0, 50.0]

    def resid(x):
        r = np.log(batch.predict(unpack(x)) / batch.measured)
        return np.nan_to_num(r, nan=3.0, posinf=3.0, neginf=-3.0)

    res = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.2, x_scale="jac")
    p = unpack(res.x)
    names = [
        f"{f}.{k}"
        for f in (["default"] if own_default else []) + fams
        for k in ("memory", "compute")
    ] + list(GLOBAL)
    at_bound = [
        n for n, x, a, b in zip(names, res.x, lo, hi, strict=True) if x <= a + 1e-6 or x >= b - 1e-6
    ]
    info = {
        "at_bounds": at_bound,
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


# ---- running, reporting, writing the calibration ----------------------------------------
SHIPPED = Path(__file__).resolve().parent.parent / "validation"


def shipped_files() -> list[Path]:
    return sorted(p for p in SHIPPED.glob("llm_*.csv"))


@dataclass
class Report:
    cases: list[Case]
    skipped: list[Skipped]
    predicted: np.ndarray
    summary: dict
    cv_predicted: np.ndarray | None = None
    cv_summary: dict | None = None


def run(paths: list[Path], cross_validation: bool = False) -> Report:
    rows = load_rows(paths)
    prepped = [prepare(i, r) for i, r in enumerate(rows)]
    cases = [c for c in prepped if isinstance(c, Case)]
    skipped = [c for c in prepped if isinstance(c, Skipped)]
    if not cases:
        return Report(cases, skipped, np.array([]), {"all": None})
    pred = Batch(cases).predict(current_params(sorted({c.family for c in cases})))
    rep = Report(cases, skipped, pred, summarise(cases, pred))
    if cross_validation:
        rep.cv_predicted = cross_validate(cases)
        rep.cv_summary = summarise(cases, rep.cv_predicted)
    return rep


def row_records(rep: Report) -> list[dict]:
    """Per-row output: the input columns plus predicted, error_pct, status."""
    out = []
    for c, p in zip(rep.cases, rep.predicted, strict=True):
        rec = {k: v for k, v in c.row.items() if not k.startswith("_")}
        rec.update(
            predicted=finite(float(p)),
            error_pct=finite(float(100 * (p - c.measured) / c.measured)),
            status="evaluated",
            used_in_fit=c.fit,
            assumptions="; ".join(c.assumptions),
        )
        if rep.cv_predicted is not None:
            cvp = float(rep.cv_predicted[rep.cases.index(c)])
            rec["cv_predicted"] = finite(cvp)
            rec["cv_error_pct"] = finite(100 * (cvp - c.measured) / c.measured)
        out.append(rec)
    for s in rep.skipped:
        rec = {k: v for k, v in s.row.items() if not k.startswith("_")}
        rec.update(predicted=None, error_pct=None, status=f"skipped: {s.reason}")
        out.append(rec)
    return out


def write_calibration(paths: list[Path], date: str, target: Path | None = None) -> dict:
    """Fit on every shipped/given row, cross-validate by source, and write the one file the
    estimator reads its efficiency factors from."""
    import hashlib

    import yaml

    rows = load_rows(paths)
    cases = [c for c in (prepare(i, r) for i, r in enumerate(rows)) if isinstance(c, Case)]
    params, info = fit(cases)
    pred = Batch(cases).predict(params)
    cv = cross_validate(cases)
    ins, cvs = summarise(cases, pred), summarise(cases, cv)

    def r4(x):
        return round(float(x), 4)

    fams = {
        f: {"memory": r4(m), "compute": r4(c)}
        for f, (m, c) in params.families.items()
        if f != "default"
    }
    dm, dc = params.families["default"]
    doc = {
        "status": "fitted",
        "fitted_on": date,
        "command": "planner calibrate --write",
        "inputs": [
            {
                "file": _rel(p),
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest()[:16],
            }
            for p in paths
        ],
        "rows_evaluated": len(cases),
        "rows_in_fit": info["rows"],
        # factors pinned at a bound are not identified by the data (or absorb missing physics)
        "at_bounds": info["at_bounds"],
        "defaults": {
            "memory": r4(dm),
            "compute": r4(dc),
            "comm_latency_scale": 1.0,
            "collective_base_us": r4(params.collective_base_us),
            "layer_overhead_us": r4(params.layer_overhead_us),
            "step_overhead_ms": r4(params.step_overhead_ms),
            "seq_overhead_us": r4(params.seq_overhead_us),
        },
        "families": fams,
        "links": {"nic_latency_us": 8.0},
        "error": {
            "in_sample": {k: _slim(ins["metric"].get(k)) for k in ("throughput", "latency")},
            "leave_one_source_out": {
                k: _slim(cvs["metric"].get(k)) for k in ("throughput", "latency")
            },
        },
    }
    target = target or Path(__file__).resolve().parent.parent / "estimator" / "calibration.yaml"
    header = (
        "# Efficiency factors: the achieved share of datasheet peaks. The ONE place they live.\n"
        "# Written by `planner calibrate --write` (planner/validation.py): a bounded, robust\n"
        "# least-squares fit of log(predicted/measured) over the published measurements in the\n"
        "# inputs below; families with fewer than 15 rows use the defaults. Do not edit by hand:\n"
        "# change the physics or the data and refit.\n"
        "# memory/compute: achieved share of peak HBM bandwidth / dense FLOPS.\n"
        "# collective_base_us: fixed start-up latency per collective; layer_overhead_us: fixed\n"
        "# cost per layer per step (kernel launches and gaps); step_overhead_ms: per engine step;\n"
        "# seq_overhead_us: host work per running sequence per step (sampling, scheduling).\n"
        "# links.nic_latency_us: per-hop latency of the scale-out NIC (not fitted: no data).\n"
    )
    text = header + yaml.safe_dump(doc, sort_keys=False)
    atomic_write_text(target, text)
    from estimator.efficiency import calibration

    calibration.cache_clear()
    return doc


def _slim(s: dict | None) -> dict | None:
    if not s:
        return None
    return {
        "n": s["n"],
        "median_abs_pct": round(s["median_abs_pct"], 2),
        "p90_abs_pct": round(s["p90_abs_pct"], 2),
        "bias_pct": round(s["bias_pct"], 2),
    }


def _why(c: Case, err: float) -> str:
    """A short, automatic reading of why a row misses (where a known effect applies)."""
    notes = c.row.get("notes", "")
    reasons = []
    if "QUEUEING-DOMINATED" in notes:
        reasons.append("TTFT at saturation is queueing for memory slots (lockstep waves)")
    if c.kind == "offline" and c.batch >= 2048:
        reasons.append("batch set by the engine's max_batch_size (not published; we assume 2048)")
    model = c.row.get("model", "")
    if any(k in model for k in ("A3B", "A22B", "16E", "128E", "Mixtral")):
        reasons.append("MoE: expert GEMMs with few tokens each run below the dense-GEMM efficiency")
    if "RTX-PRO" in c.row.get("gpu", "") and (_int(c.row.get("tp")) or 1) > 1:
        reasons.append("TP over PCIe: real collectives slower than the alpha-beta model")
    if c.assumptions:
        reasons.append("assumed: " + "; ".join(c.assumptions))
    if not reasons:
        reasons.append("over-predicted" if err > 0 else "under-predicted")
    return "; ".join(reasons)


def _fmt_stats(s: dict | None) -> list[str]:
    if not s:
        return ["-", "-", "-", "-"]
    return [
        str(s["n"]),
        f"{s['median_abs_pct']:.1f}%",
        f"{s['p90_abs_pct']:.1f}%",
        f"{s['bias_pct']:+.1f}%",
    ]


def _rel(f: Path) -> str:
    return str(f.relative_to(SHIPPED.parent)) if f.is_relative_to(SHIPPED.parent) else str(f)


def markdown(rep: Report, files: list[Path], cal: dict) -> str:
    from tabulate import tabulate

    head = ["", "rows", "median abs. error", "p90 abs. error", "bias (median signed error)"]
    lines = [
        "# Validation: the estimator against published measurements",
        "",
        "Generated by `planner validate --cv --report docs/VALIDATION.md`; do not edit by hand.",
        "",
        "## What was compared",
        "",
        f"Inputs: {', '.join(_rel(f) for f in files)}. "
        f"{len(rep.cases)} rows evaluated, {len(rep.skipped)} skipped (reasons below). "
        "Each row is a "
        "published number measured on real GPUs (see `validation/README.md` for the columns and "
        "sources); the estimator predicts it from the model's config, the GPU preset and the "
        "row's split, formats, engine, lengths and concurrency. Offline max-throughput rows use "
        "the KV-limited batch under the engine's memory policy; closed-loop rows use the lockstep "
        "model of `estimator/serving.py` at the published concurrency (fixed lengths, no "
        "think time).",
        "",
        f"Calibration: `estimator/calibration.yaml`, status `{cal.get('status')}`, fitted on "
        f"{cal.get('fitted_on')}, by `{cal.get('command', 'n/a')}`. The headline error is the "
        "**leave-one-source-out** cross-validated one: each source's rows are predicted with "
        "factors fitted on the other sources only.",
        "",
    ]
    for title, summ in (
        ("Leave-one-source-out (cross-validated)", rep.cv_summary),
        ("In-sample (current calibration)", rep.summary),
    ):
        if summ is None:
            continue
        lines += [f"## {title}", ""]
        rows = [["all", *_fmt_stats(summ["all"])]]
        rows += [[f"metric: {k}", *_fmt_stats(v)] for k, v in summ["metric"].items()]
        rows += [[f"GPU family: {k}", *_fmt_stats(v)] for k, v in summ["family"].items()]
        rows += [[f"source: {k}", *_fmt_stats(v)] for k, v in summ["source"].items()]
        lines += [tabulate(rows, headers=head, tablefmt="github"), ""]
    pred = rep.cv_predicted if rep.cv_predicted is not None else rep.predicted
    err = error_pct(pred, np.array([c.measured for c in rep.cases]))
    order = np.argsort(-np.nan_to_num(np.abs(err), nan=-1))[:15]
    lines += [
        "## Worst rows and why they miss",
        "",
        "Cross-validated error. 'Why' lists the known effects that apply to the row.",
        "",
    ]
    rows = []
    for i in order:
        c = rep.cases[i]
        rows.append(
            [
                c.row["model"].split("/")[-1],
                c.row["gpu"],
                f"TP{c.row.get('tp')}",
                c.row.get("weight_dtype"),
                f"{c.isl}/{c.osl}",
                c.row.get("concurrency_or_batch") or "max",
                c.metric,
                f"{c.measured:g}",
                f"{pred[i]:.4g}",
                f"{err[i]:+.0f}%",
                _why(c, err[i]),
            ]
        )
    lines += [
        tabulate(
            rows,
            headers=[
                "model",
                "gpu",
                "split",
                "weights",
                "in/out",
                "conc.",
                "metric",
                "measured",
                "predicted",
                "error",
                "why",
            ],
            tablefmt="github",
        ),
        "",
    ]
    if rep.skipped:
        from collections import Counter

        cnt = Counter(s.reason for s in rep.skipped)
        lines += [
            "## Skipped rows",
            "",
            tabulate(
                [[r, n] for r, n in cnt.most_common()],
                headers=["reason", "rows"],
                tablefmt="github",
            ),
            "",
        ]
    lines += [
        "## Missing physics (what the remaining error points at)",
        "",
        "- MoE expert GEMMs with few tokens per expert run well below dense-GEMM efficiency;",
        "  we fit one compute efficiency per GPU family for dense and MoE alike.",
        "- Offline benchmarks' engine batch caps (`max_batch_size`, `max_num_tokens`) are not",
        "  published; we assume the engine defaults.",
        "- One host overhead per running sequence for every engine: vLLM's Python scheduler",
        "  costs more than TensorRT-LLM's C++ one; on AMD (all vLLM-on-ROCm rows) the fitted",
        "  cdna3 compute efficiency absorbs it, so treat it as an engine+GPU figure.",
        "- Closed-loop benchmark rows are modelled as lockstep waves (fixed lengths, no think",
        "  time); chunked-prefill scheduling details of each engine are not modelled.",
        "",
    ]
    return "\n".join(lines)
