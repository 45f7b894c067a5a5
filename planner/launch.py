"""Deploy what was planned: for each language-model replica kind of a plan, the engine's launch
command whose flags match the planned layout and the memory the plan assumed, and how many
copies to run (a Kubernetes-style replica count).

Flag names as each engine's CLI spells them (vLLM ``vllm serve --help``, SGLang
``python -m sglang.launch_server --help``, TensorRT-LLM ``trtllm-serve --help``); the memory
knobs are the ones the estimate sized with (:mod:`estimator.engines`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from estimator.catalog import model_catalog

from .errors import ScenarioError
from .results import Assignment, PlanResult
from .scenario import Scenario

EMITTERS = ("vllm", "sglang", "trtllm")
# how each engine names a weight format's quantisation (None: the checkpoint says, or none)
_QUANT = {"fp8": "fp8", "int4": "awq", "int8": None, "fp4": None, "mxfp4": None}
_KV = {"vllm": {"fp8": "fp8"}, "sglang": {"fp8": "fp8_e4m3"}, "trtllm": {"fp8": "fp8"}}


@dataclass(frozen=True)
class Launch:
    workload: str
    gpu: str
    replicas: int  # copies of this command to run (Kubernetes replicas)
    gpus_per_replica: int
    command: str
    note: str = ""

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def hub_id(model_name: str, presets: tuple[str, ...] = ()) -> str:
    """The Hugging Face id a preset was read from (its first org/name alias), else its name."""
    preset = model_catalog(presets).items.get(model_name)
    ids = [a for a in (preset.aliases if preset else []) if "/" in a]
    return ids[0] if ids else model_name


def _flags(engine: str, a: Assignment, w, knobs) -> list[str]:
    """The engine's flags for one replica of an assignment."""
    ctx = w.max_model_len or w.input_tokens + w.output_tokens
    quant = _QUANT.get(a.weights)
    kv = _KV[engine].get(w.kv_cache)
    if engine == "vllm":
        # attention data-parallel: vLLM runs TP1 attention on DP ranks, experts over all
        tp, dp = (1, a.tp) if a.attention_dp else (a.tp, 1)
        f = ["--tensor-parallel-size", tp, "--pipeline-parallel-size", a.pp]
        f += ["--data-parallel-size", dp] if dp > 1 else []
        f += ["--enable-expert-parallel"] if a.ep > 1 or a.attention_dp else []
        f += ["--max-num-seqs", knobs.max_num_seqs, "--gpu-memory-utilization", knobs.fraction]
        f += ["--max-num-batched-tokens", knobs.max_num_batched_tokens, "--max-model-len", ctx]
        f += ["--kv-cache-dtype", kv] if kv else []
        f += ["--quantization", quant] if quant else []
        return f
    if engine == "sglang":
        f = ["--tp-size", a.tp, "--pp-size", a.pp]
        f += ["--ep-size", a.ep] if a.ep > 1 else []
        f += ["--enable-dp-attention", "--dp-size", a.tp] if a.attention_dp else []
        f += ["--max-running-requests", knobs.max_num_seqs]
        f += ["--mem-fraction-static", knobs.fraction, "--context-length", ctx]
        f += ["--chunked-prefill-size", knobs.max_num_batched_tokens]
        if w.mamba_full_memory_ratio is not None:
            f += ["--mamba-full-memory-ratio", knobs.state_pool_ratio]
        f += ["--kv-cache-dtype", kv] if kv else []
        f += ["--quantization", quant] if quant else []
        return f
    f = ["--tp_size", a.tp, "--pp_size", a.pp]
    f += ["--ep_size", a.ep] if a.ep > 1 else []
    f += ["--max_batch_size", knobs.max_num_seqs, "--max_num_tokens", knobs.max_num_batched_tokens]
    f += ["--max_seq_len", ctx, "--kv_cache_free_gpu_memory_fraction", knobs.fraction]
    return f


_PROGRAM = {
    "vllm": ["vllm", "serve"],
    "sglang": ["python", "-m", "sglang.launch_server", "--model-path"],
    "trtllm": ["trtllm-serve"],
}


def launch_commands(
    sc: Scenario, result: PlanResult, engine: str, presets: tuple[str, ...] = ()
) -> list[Launch]:
    """One launch command per language-model assignment of the recommendation."""
    if engine not in EMITTERS:
        raise ScenarioError(f"--emit must be one of {', '.join(EMITTERS)}, not '{engine}'")
    if not result.plan:
        return []
    workloads = {w.name: w for w in sc.workloads}
    out = []
    for a in result.plan.assignments:
        w = workloads[a.workload]
        if a.ttft_s is None:  # not a language model: no engine command to emit
            continue
        knobs = w.engine_config(engine)
        args = [*_PROGRAM[engine], hub_id(a.model, presets), *_flags(engine, a, w, knobs)]
        copies = a.replicas * ((a.prefill_replicas or 0) + (a.decode_replicas or 0) or 1)
        note = ""
        if engine != w.engine:
            note = (
                f"the plan was sized for {w.engine}'s memory policy; {engine} keeps a different "
                "KV budget (re-solve with the workload's engine set to it)"
            )
        if a.prefill_replicas:
            note = (note + "; " if note else "") + (
                f"disaggregated: {a.prefill_replicas} prefill + {a.decode_replicas} decode "
                "copies per unit, wired by the engine's disaggregation router"
            )
        out.append(
            Launch(
                a.workload,
                a.gpu,
                copies,
                a.gpus_per_replica,
                " ".join(shlex.quote(str(x)) for x in args),
                note,
            )
        )
    return out
