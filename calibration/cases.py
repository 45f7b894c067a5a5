"""Published measurements -> cases. Each CSV row (columns of ``calibration/data/README.md``)
becomes a *case*: the estimator's step times decomposed once into raw physics (bytes ÷ peak
bandwidth, FLOPs ÷ peak FLOPS, collective bytes ÷ link bandwidth and hop latencies, how many
collectives and layers a step runs), or a skipped row with its reason."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from estimator import EstimatorError, Evaluator, Parallel, get_gpu, get_model
from estimator.efficiency import Efficiency, efficiency_key
from estimator.engines import configure
from estimator.harness import trtllm_bench_batch

from .knobs import published_knobs, run_length

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
    "mean_in_flight",
]

# A closed loop whose harness draws each request's lengths (sglang.bench_serving's random
# dataset from [1, nominal], ShareGPT): its clients' cycles differ, so they fall out of step
# within a cycle or two and their prompts arrive spread in time, not in waves (lockstep
# needs identical cycles). Scored with spread arrivals, the 26 such TTFTs of several clients
# read 59.2 -> 36.4% median leave-one-source-out (all TTFTs 36.4 -> 36.1%, p90 223 -> 176%);
# the fit's surrogate (calibration.batch) still reads them with the harness formulas
VARIABLE_LENGTHS = "VARIABLE LENGTHS"

# A run with speculative decoding on (MTP, EAGLE): its time per token and throughput follow an
# acceptance rate no row publishes, so only its TTFT (the prompt pass) is scored
SPECULATIVE_FLAGS = ("SPECULATIVE", "MTP speculative")

# Rows the fit leaves out (still reported): their number is dominated by something the
# roofline does not claim to model row by row.
FIT_EXCLUDE_FLAGS = (
    "QUEUEING-DOMINATED",
    *SPECULATIVE_FLAGS,
    "READ-FROM-CHART",
    "NON-DEFAULT KERNELS",  # the engine run with its optimised kernels switched off
)

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
    int4: np.ndarray  # of memory: int4 weight-only streaming, for its stream share
    # the attention kernels' own roofline (KV and state reads, attention FLOPs), after the
    # GEMMs' (memory and compute above: weights, activations, matmul FLOPs)
    attn_memory: np.ndarray = 0.0
    attn_compute: np.ndarray = 0.0
    # the routed experts' grouped GEMMs' own roofline (int4_expert: of it, int4 streaming)
    expert_memory: np.ndarray = 0.0
    expert_compute: np.ndarray = 0.0
    int4_expert: np.ndarray = 0.0

    @staticmethod
    def stack(items: list[Parts]) -> Parts:
        return Parts(*(np.array([float(getattr(p, f.name)) for p in items]) for f in fields(Parts)))

    @property
    def all_compute(self):
        return self.compute + self.attn_compute + self.expert_compute

    @property
    def all_memory(self):
        return self.memory + self.attn_memory + self.expert_memory

    def time(self, mem_eff, cmp_eff, base_s, layer_s, step_s, seq_s, int4_stream=1.0):
        slower = 1.0 / int4_stream - 1.0  # int4 weights' extra streaming cost per byte
        mem = self.memory + self.int4 * slower
        e_mem = self.expert_memory + self.int4_expert * slower
        t = np.maximum(mem / mem_eff, self.compute / cmp_eff) + self.comm
        t = t + np.maximum(self.attn_memory / mem_eff, self.attn_compute / cmp_eff)
        t = t + np.maximum(e_mem / mem_eff, self.expert_compute / cmp_eff)
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
    precision: str = ""  # the precision the matmuls run in (the compute factor's precision)
    ev: Any = None  # the row's Evaluator at unit efficiency (the sizing model's scoring)
    rate: float = 0.0  # open loop: requests per second per replica
    requests: int | None = None  # open loop: the run's length (--num-prompts), where stated
    # the harness's arrival pattern: a synthetic closed loop of fixed lengths (all clients
    # start together, no think time) arrives in waves; one that draws its lengths, spread
    # (VARIABLE_LENGTHS)
    arrivals: str = "waves"
    frontend: str = ""  # the serving front end (see frontend_of); "" is the engine's own
    dec: Parts | None = None
    pre: Parts | None = None

    @property
    def server(self) -> str:
        """The front end whose request time the row carries (the engine's own by default)."""
        return self.frontend or self.ev.engine.name


@dataclass
class Skipped:
    idx: int
    row: dict
    reason: str

    @property
    def kind(self) -> str:
        """naming: the model or GPU is not in the catalogue; unpublished: the source leaves
        out an input the estimate needs; other: the row cannot be scored as stated."""
        if self.reason.startswith(("unknown model", "unknown GPU", "ambiguous")):
            return "naming"
        if "not published" in self.reason:
            return "unpublished"
        return "other"


def _float(v: str | None) -> float | None:
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


def _int(v: str) -> int | None:
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


# Repositories that republish another's measurements: left out together with the original
# (a fork mirroring an API's data is the same publisher, not an independent source).
SAME_PUBLISHER = {
    "github:vngcloud/InferenceX-app": "github:SemiAnalysisAI/InferenceX",
    "github:SemiAnalysisAI/InferenceX-app": "github:SemiAnalysisAI/InferenceX",
}


# The front end a row's requests pass through owns the serving stack's own time to a first
# token (HTTP, tokenising, admission, streaming). Harnesses that call the runtime in-process
# (MLPerf's LoadGen harnesses, TensorRT-LLM's C++ benchmarks, trtllm-bench, offline engines)
# have none; NIM puts its own API server in front of TensorRT-LLM (its TTFTs at one client are
# the prefill plus ~5 ms, where trtllm-serve's are the prefill plus 60-150 ms); every other
# row goes through the engine's own server (vllm serve, sglang.launch_server, trtllm-serve).
# Serving runtimes whose scheduler is C++ with a KV budget taken from the memory left after
# the weights: TensorRT-LLM (and NIM over it); LMDeploy's TurboMind (cache_max_entry_count of
# free memory, its batch loop in C++) has too few rows for host costs of its own, and shares
# TensorRT-LLM's rather than a Python scheduler's
CPP_RUNTIMES = ("trt", "nim", "tensorrt", "turbomind")
IN_PROCESS = (
    "mlperf",
    "gptsession",
    "tensorrt 9.1",
    "static batch",
    "static-batch",
    "trtllm-bench",
    "offline",
    "benchmark_latency",
    "benchmark_throughput",
)
NO_FRONTEND = "none"


def engine_of(framework: str) -> str:
    """The engine a row ran on: the earliest one its framework text names (a client or
    harness named after it is not it: 'vLLM 0.11.2 (client: tensorrt_llm.serve...)' ran on
    vLLM); vLLM when it names none."""
    fw = framework.lower()
    marks = {"trtllm": CPP_RUNTIMES, "sglang": ("sglang",), "vllm": ("vllm",)}
    first = {
        e: min((i for k in keys if (i := fw.find(k)) >= 0), default=len(fw) + 1)
        for e, keys in marks.items()
    }
    e = min(first, key=first.__getitem__)
    return e if first[e] <= len(fw) else "vllm"


def frontend_of(framework: str, engine: str) -> str:
    """The serving front end of a row measured with ``framework`` on ``engine``."""
    fw = framework.lower()
    if "nim" in fw.split("(")[0].split():
        return "nim"
    if any(k in fw for k in IN_PROCESS):
        return NO_FRONTEND
    return engine


def load_label(row: dict) -> str:
    """The load a row was measured at, for tables: its clients (or batch), its request rate
    (an open loop), or 'max' (offline, the engine's largest batch)."""
    if row.get("concurrency_or_batch"):
        return str(row["concurrency_or_batch"])
    rate = _float(row.get("request_rate"))
    return f"{rate:g}/s" if rate else "max"


def source_key(src: str) -> str:
    """Group rows by publication for leave-one-source-out: a repository (owner/name) or a
    web page's site and first path segment (mirrors grouped with what they mirror)."""
    s = src.strip().split(" ")[0]
    if s.startswith("http"):
        parts = s.split("/")
        return "/".join(parts[2:4]) if len(parts) > 3 else parts[2]
    if ":" in s:
        kind, rest = s.split(":", 1)
        key = f"{kind}:{'/'.join(rest.split('/')[:2])}"
        return SAME_PUBLISHER.get(key, key)
    return s


def _decompose(ev: Evaluator, ev1: Evaluator, st_fn) -> Parts:
    """Raw parts at unit efficiency; counts read off by re-running with unit overheads, and
    the int4 weight stream by re-running at half its share (twice its bytes)."""
    a, b = st_fn(ev), st_fn(ev1)
    int4 = int4_e = 0.0  # only int4 weights stream at the int4 share
    if ev.wfmt.name == "int4":
        h = st_fn(ev.with_efficiency(replace(UNIT, int4_stream=0.5)))
        int4_e = h.expert_memory - a.expert_memory
        int4 = h.memory - a.memory - int4_e
    layers = ev.pp * ev.layers_per_stage
    seqs = (b.overhead - a.overhead) / 1e-6 - layers - 1000.0
    return Parts(
        a.memory - a.attn_memory - a.expert_memory,
        a.compute - a.attn_compute - a.expert_compute,
        a.comm,
        (b.comm - a.comm) / 1e-6,
        layers,
        seqs,
        int4,
        a.attn_memory,
        a.attn_compute,
        a.expert_memory,
        a.expert_compute,
        int4_e,
    )


def without_remark(text: str) -> str:
    """A name without a trailing remark in parentheses ('Llama 3.1 70B Instruct (FP8)')."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", text).strip()


def model_named(text: str):
    """The model a row names: the whole name without a trailing remark in parentheses,
    else its first word ('EleutherAI/gpt-j-6b (MLPerf)')."""
    for candidate in dict.fromkeys((without_remark(text), text.split(" ")[0])):
        try:
            return get_model(candidate)
        except EstimatorError:
            continue
    return None


def prepare(idx: int, row: dict) -> Case | Skipped:
    """Resolve a CSV row to a case, or say why it cannot be evaluated."""
    metric = row.get("metric", "").strip()
    try:
        measured = float(row.get("value", ""))
    except ValueError:
        return Skipped(idx, row, "value is not a number")
    model = model_named(row["model"])
    if model is None:
        return Skipped(idx, row, f"unknown model '{row['model']}'")
    try:
        gpu = get_gpu(row["gpu"].strip())
    except EstimatorError:
        return Skipped(idx, row, f"unknown GPU '{row['gpu']}'")
    wd = row.get("weight_dtype", "").strip().lower()
    if wd not in _WEIGHTS:
        return Skipped(idx, row, f"weight format '{wd or 'blank'}' not published")
    notes = row.get("notes", "")
    if metric != "ttft_ms" and any(f in notes for f in SPECULATIVE_FLAGS):
        return Skipped(idx, row, "speculative decoding: its acceptance rate not published")
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
    engine = engine_of(fw)
    knobs = published_knobs(notes, engine)  # scored under the configuration it ran
    if knobs:
        assumptions.append(
            "engine set as published: " + ", ".join(f"{k} {v}" for k, v in knobs.items())
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
        ev = Evaluator(model, gpu, par, weights, kv, configure(engine, **knobs), UNIT)
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
    rate = _float(row.get("request_rate"))
    # trtllm-bench throughput sets its own batch cap from the dataset, not the engine default
    cap = trtllm_bench_batch(ev, isl, osl) if "trtllm-bench" in fw else ev.max_seqs
    max_b = min(int(ev.max_batch(isl + osl)), cap)
    if max_b < 1:
        return Skipped(idx, row, "does not fit in memory in the estimator")
    if rate:  # an open loop: requests arrive at a fixed rate whatever the replica does
        if metric not in ("ttft_ms", "itl_ms", "tpot_ms", "tok_s_per_user"):
            return Skipped(idx, row, "open loop: its throughput is the arrival rate it was sent")
        if conc is not None:
            return Skipped(idx, row, "open loop under a concurrency cap: not modelled")
        if "BURST" in notes or "QUEUEING-DOMINATED" in notes:
            # a run shorter than a few request lifetimes, or one past the replica's
            # saturation (its queue grows for as long as it runs), has no steady state
            return Skipped(idx, row, "open loop with no steady state (flagged in its notes)")
        kind, b, clients = "open", 1.0, 1.0  # the load model finds the batch the rate sustains
    elif conc is None:
        kind, b, clients = "offline", max_b, float(max_b)
    else:  # a closed loop: its clients per replica, at most max_b of them running
        kind, clients = "closed", conc / par.replicas
        in_flight = _float(row.get("mean_in_flight"))
        if in_flight and in_flight < conc:
            # the harness printed the requests it kept in flight on average: fewer than its
            # cap where lengths vary and the run drains at its end (sglang.bench_serving's
            # 'Concurrency:'); that, not the cap, is the load the engine carried
            clients = in_flight / par.replicas
            assumptions.append(f"{in_flight:g} requests in flight on average (cap {conc})")
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
    # one client alone has no one to fall out of step with: the idle replica's TTFT
    spread = kind == "closed" and clients > 1 and VARIABLE_LENGTHS in notes
    arrivals = "spread" if spread else "waves"
    if spread:
        assumptions.append("lengths drawn per request: clients out of step (spread arrivals)")
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
        # open-loop rows are scored with the sizing model, not fitted: the fit's fast
        # surrogate (calibration.batch) has the synchronised harnesses' formulas only
        fit=kind != "open" and not any(f in notes for f in FIT_EXCLUDE_FLAGS),
        assumptions=assumptions,
        precision=ev.precision,
        ev=ev,
        frontend=frontend_of(row.get("framework", ""), engine),
        rate=(rate or 0.0) / par.replicas,
        requests=run_length(notes) if kind == "open" else None,
        arrivals=arrivals,
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


def load_cases(paths: list[Path]) -> list[Case]:
    """The rows of ``paths`` the estimator can predict, as cases (the others skipped)."""
    prepped = (prepare(i, r) for i, r in enumerate(load_rows(paths)))
    return [c for c in prepped if isinstance(c, Case)]
