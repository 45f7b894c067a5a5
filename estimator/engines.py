"""Engine memory policies and the fixed runtime overheads of a serving process.

Engines budget KV memory differently, so the engine is a parameter rather than an average,
each computed the way that engine computes it (``kv_budget_bytes``):

- vLLM: ``gpu_memory_utilization x total - weights - peak activation of its profile run -
  non-torch memory`` (vllm/worker gpu_worker.determine_available_memory; the CUDA context
  and graphs sit outside the fraction: its logs add weights + non-torch + activation + KV
  to total x utilization, validation/engine_logs.csv);
- SGLang: ``mem_fraction_static x total - weights - what was in use before loading``
  (model_runner: rest memory after weights less (1 - mem_fraction_static) x total);
- TensorRT-LLM: ``free_gpu_memory_fraction x memory free after weights and buffers``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from .errors import EstimatorError, closest


@dataclass(frozen=True)
class Engine:
    name: str
    fraction: float
    budget: Literal["vllm", "static", "free"]  # how the KV budget is computed (see above)
    max_num_batched_tokens: int  # tokens per prefill chunk the engine profiles activations at
    max_num_seqs: int  # most sequences the scheduler runs at once
    note: str
    max_model_len: int | None = None  # longest sequence served (None: the model's maximum)
    # bytes per logit (dummy requests x vocabulary) at the sampler's peak in vLLM's profile
    # run, which its KV budget subtracts. V1 (`_dummy_sampler_run`): the 16-bit logits, the
    # sampler's fp32 copy and its fp32 probabilities, 10
    sampler_bytes: float = 10.0
    # GPU families on which an FP8-quantised model with an FP8 KV cache runs its prompt
    # attention in FP8 (see attention_precision)
    fp8_prompt_attention: tuple[str, ...] = ()
    # a hybrid's recurrent states: None where they share the KV pool (vLLM's hybrid
    # allocator, TensorRT-LLM), else the ratio of a state pool of their own to the attention
    # KV pool the budget splits into, and the state slots one running request holds
    state_pool_ratio: float | None = None
    state_slots_per_request: int = 1
    # the serving stack's own time to a first token (HTTP, tokenising, scheduling, streaming
    # it back), ms, where its user measured theirs; None: what the calibration fitted for the
    # engine's own server (Efficiency.request_overhead_ms)
    stack_ms: float | None = None


# max_num_seqs: vLLM V1 defaults to 1024 for the API server on large GPUs (256 on small);
# TensorRT-LLM's max_batch_size defaults to 2048; SGLang sizes max_running_requests from
# memory, and we cap it like vLLM.
ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        "vllm",
        0.90,
        "vllm",
        8192,
        1024,
        "vLLM: gpu_memory_utilization=0.9 of total memory; max_num_batched_tokens=8192",
    ),
    "sglang": Engine(
        "sglang",
        0.88,
        "static",
        8192,
        1024,
        "SGLang: mem_fraction_static~0.88 of total memory; chunked_prefill_size=8192",
        # a hybrid (Mamba, Gated DeltaNet, lightning attention) model's states get
        # rest x ratio / (1 + ratio) of what the static fraction leaves, at the default
        # --mamba-full-memory-ratio 0.9, and running requests are capped at the state slots
        # over 3 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO: the radix cache, on by
        # default, keeps states of cached prefixes); sgl-project/sglang
        # python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
        # (handle_max_mamba_cache, calculate_mamba_ratio, init_memory) @001ccef
        state_pool_ratio=0.9,
        state_slots_per_request=3,
    ),
    "trtllm": Engine(
        "trtllm",
        0.90,
        "free",
        8192,
        2048,
        "TensorRT-LLM: free_gpu_memory_fraction=0.9 of memory free after weights",
        fp8_prompt_attention=("ada", "hopper"),
    ),
}


# vLLM's V0 engine profiles with top-p 0.99 and top-k vocabulary - 1 (worker/model_runner.py
# profile_run, e.g. v0.6.6.post1: "to reflect the accurate memory usage"), which takes its
# sampler's sort path (model_executor/layers/sampler.py `_apply_top_k_top_p`): alive at its
# peak are the 16-bit logits (2), their fp32 copy (4), the sorted values (4) and int64
# indices (8), the top-k mask (1), the sorted probabilities (4), their cumulative sum (4),
# the top-p mask (1) and the re-scattered logits (4): 32 bytes per logit. The four V0
# start-up logs that print their activation peak read 31-35 (calibration/data/engine_logs.csv)
VLLM_V0_SAMPLER_BYTES = 32.0


def at_version(e: Engine, version: str) -> Engine:
    """The engine as a published version of it budgets memory: vLLM before its V1 engine
    (a log tagged V0, or a version before 0.8, when V1 became the default) samples its profile
    run on the sort path. Other engines and versions: ``e`` unchanged."""
    text = version.lower()
    if e.budget != "vllm" or "v1" in text:
        return e
    num = re.search(r"(\d+)\.(\d+)", text)
    if "v0" in text or (num and (int(num[1]), int(num[2])) < (0, 8)):
        return replace(e, sampler_bytes=VLLM_V0_SAMPLER_BYTES)
    return e


def engine(spec: str | Engine) -> Engine:
    if isinstance(spec, Engine):
        return spec
    try:
        return ENGINES[spec.lower()]
    except KeyError:
        near = closest(spec, list(ENGINES))
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        raise EstimatorError(
            f"unknown engine '{spec}' for a language model.{hint} Language-model engines: "
            f"{', '.join(ENGINES)}"
        ) from None


def attention_precision(e: Engine, weights: str, kv: str, family: str) -> str:
    """The precision a replica's attention math runs in: 16-bit, except where the engine
    runs an FP8-quantised model's prompt attention in FP8 over an FP8 KV cache.
    TensorRT-LLM does (its FP8 context FMHA): trtllm-bench enables it for every FP8 build
    (tensorrt_llm/bench/build/build.py: ``use_fp8_context_fmha`` when the quantisation is
    FP8), NIM's fp8_kv profiles list it, and the PyTorch backend asks for FP8 attention
    output from FP8 layers over an FP8 KV cache (tensorrt_llm/_torch/attention_backend/
    trtllm.py); its kernels exist for Ada and Hopper only (cpp/tensorrt_llm/common/
    attentionOp.cpp: "FP8 FMHA cannot be enabled except on Ada or Hopper Arch"). Decode
    attention reads the cache at memory speed either way."""
    if weights == "fp8" and kv == "fp8" and family in e.fp8_prompt_attention:
        return "fp8"
    return "bf16"


# Speech (Whisper) serving engines: their speed differences are host time per decoding step
# (estimator.families.asr, fitted in calibration.yaml); listed here so the command line can
# offer them without loading the model families. The first is the default: what most
# self-hosted transcription servers run (WhisperX and speaches build on it), and the engine
# with the most published runs.
SPEECH_ENGINES: dict[str, str] = {
    "faster-whisper": "faster-whisper (CTranslate2; also under WhisperX and speaches)",
    "transformers": "Hugging Face transformers pipeline (eager PyTorch, Python generate loop)",
    "openai-whisper": "the openai/whisper reference package (eager PyTorch)",
    "vllm": "vLLM (CUDA-graph decode; no published Whisper run: the LLM engines' step costs)",
    "trtllm": "TensorRT-LLM (fused kernels and graphs; the LLM engines' step costs)",
}


def family_engine(name: str | None, table: dict[str, str], what: str) -> str:
    """A family's engine name, checked against ``table`` (its engines, the default first;
    None: the default); ``what`` names the kind in the error ('speech')."""
    n = (name or next(iter(table))).lower()
    if n not in table:
        near = closest(n, list(table))
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        raise EstimatorError(
            f"unknown {what} engine '{name}'.{hint} {what.capitalize()} engines: {', '.join(table)}"
        )
    return n


# Text encoder engines: fused kernels (the estimate's roofline) or eager PyTorch, whose host
# time per layer and slower kernels are fitted from published pairs of the same model run
# both ways (estimator.families.encoder, calibration.yaml family_engines.encoder). The first
# is the default.
ENCODER_ENGINES: dict[str, str] = {
    "tei": "fused kernels: Text Embeddings Inference (as TensorRT, ONNX Runtime's optimised "
    "graphs, FasterTransformer, infinity)",
    "transformers": "eager PyTorch: Hugging Face transformers or sentence-transformers",
}


# Diffusion pipeline engines: they differ in how fast the same denoiser passes run (fused
# kernels, autotuned GEMMs, CUDA graphs), a time factor on the denoiser fitted from published
# pairs of the same pipeline run both ways (estimator.families.diffusion, calibration.yaml
# family_engines.diffusion). The first is the default.
DIFFUSION_ENGINES: dict[str, str] = {
    "diffusers": "diffusers (or any eager PyTorch pipeline)",
    "torch-compile": "the denoiser under torch.compile (max-autotune): fused kernels, CUDA graphs",
    "tensorrt": "TensorRT engines (MLPerf, TensorRT Model Optimizer)",
}


# The engine knobs users set, with the bounds the CLI, the scenario schema and configure()
# all enforce (one place).
KNOBS: dict[str, tuple[float, float]] = {
    "gpu_memory_utilization": (0.05, 1.0),
    "max_num_seqs": (1, 1_000_000),
    "max_num_batched_tokens": (16, 10_000_000),
    "max_model_len": (16, 1_000_000_000),
    # SGLang's --mamba-full-memory-ratio: a hybrid's state pool over its attention KV pool
    "mamba_full_memory_ratio": (0.01, 100.0),
    # the serving stack's own time to a first token, ms, as measured on one's own stack
    "serving_stack_ms": (0.0, 600_000.0),
}


def configure(
    spec: str | Engine,
    *,
    gpu_memory_utilization: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    max_model_len: int | None = None,
    mamba_full_memory_ratio: float | None = None,
    serving_stack_ms: float | None = None,
) -> Engine:
    """An engine with the knobs its users set: ``gpu_memory_utilization`` is vLLM's name for
    the memory fraction (SGLang's ``mem_fraction_static``, TensorRT-LLM's
    ``free_gpu_memory_fraction``: the same field, each engine's own base);
    ``mamba_full_memory_ratio`` is SGLang's, for an engine that keeps a hybrid's states in a
    pool of their own; ``serving_stack_ms`` the stack's own time to a first token, where its
    users measured it (else the calibration's, fitted for the engine's own server)."""
    e = engine(spec)
    given = {
        "gpu_memory_utilization": gpu_memory_utilization,
        "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": max_num_batched_tokens,
        "max_model_len": max_model_len,
        "mamba_full_memory_ratio": mamba_full_memory_ratio,
        "serving_stack_ms": serving_stack_ms,
    }
    given = {k: v for k, v in given.items() if v is not None}
    for name, v in given.items():
        lo, hi = KNOBS[name]
        if not lo <= v <= hi:
            raise EstimatorError(f"{name} must be from {lo:,} to {hi:,}, not {v}")
    if "gpu_memory_utilization" in given:  # the field each engine calls its memory fraction
        given["fraction"] = given.pop("gpu_memory_utilization")
    if "mamba_full_memory_ratio" in given:
        if e.state_pool_ratio is None:
            pooled = ", ".join(n for n, x in ENGINES.items() if x.state_pool_ratio)
            raise EstimatorError(
                f"mamba_full_memory_ratio is {pooled}'s: {e.name} keeps a hybrid's "
                "recurrent states in its KV pool"
            )
        given["state_pool_ratio"] = given.pop("mamba_full_memory_ratio")
    if "serving_stack_ms" in given:
        given["stack_ms"] = float(given.pop("serving_stack_ms"))
    return replace(e, **given) if given else e


def stack_seconds(engine: Engine, eff) -> float:
    """The serving stack's own time to a first token, seconds: the engine's as its users set
    it (``stack_ms``), else what the calibration fitted for the engine's own server."""
    ms = engine.stack_ms
    return (eff.request_overhead_ms if ms is None else ms) * 1e-3


# Fixed per-GPU runtime overhead, bytes. Explicit, documented terms, not a fudge factor:
CUDA_CONTEXT_BYTES = 0.8e9  # CUDA context + cuBLAS/cuDNN workspaces of a PyTorch process
CUDA_GRAPHS_BYTES = 0.5e9  # captured decode graphs (vLLM logs ~0.3-1.5 GiB)
COLLECTIVE_BUFFERS_BYTES = 0.5e9  # NCCL/RCCL channel buffers, only when the replica spans GPUs
# What vLLM logs as "non_torch_memory" on one GPU: 0.01-0.35 GiB, median 0.08 GiB over the
# TP=1 start-up logs in validation/engine_logs.csv (allocations outside torch after start).
NON_TORCH_BYTES = 0.09e9


def runtime_overhead_bytes(gpus_per_replica: int) -> float:
    return outside_bytes() + non_torch_bytes(gpus_per_replica)


def outside_bytes() -> float:
    """Memory in use before the engine measures its budget (context) or allocated after it
    (CUDA graphs): outside vLLM's fraction."""
    return CUDA_CONTEXT_BYTES + CUDA_GRAPHS_BYTES


def non_torch_bytes(gpus_per_replica: int) -> float:
    return NON_TORCH_BYTES + (COLLECTIVE_BUFFERS_BYTES if gpus_per_replica > 1 else 0.0)


def kv_budget_bytes(
    e: Engine, capacity: float, weights: float, activations: float, gpus: int
) -> float:
    """The KV-cache bytes one GPU's engine reserves, computed as that engine computes it."""
    if e.budget == "vllm":
        return e.fraction * capacity - weights - activations - non_torch_bytes(gpus)
    if e.budget == "static":  # SGLang: the context was in use before the weights loaded
        return e.fraction * capacity - weights - CUDA_CONTEXT_BYTES
    free = capacity - weights - activations - runtime_overhead_bytes(gpus)
    return e.fraction * free


def split_state_pool(
    e: Engine, kv_budget: float, state_bytes: float
) -> tuple[float, float, int | None, list[str]]:
    """A hybrid's recurrent states (``state_bytes`` per sequence per GPU) under engine ``e``:
    (the attention KV budget, the state pool, the most requests it runs, notes). Where the
    states share the KV pool (vLLM, TensorRT-LLM), the budget is whole and each sequence is
    charged its state from it; where the engine keeps them apart (SGLang), the budget splits
    at its ratio and the running requests are capped at the state slots over the slots each
    holds (:attr:`Engine.state_pool_ratio`)."""
    r = e.state_pool_ratio
    if state_bytes <= 0 or not r:
        notes = []
        if r and r != ENGINES.get(e.name, e).state_pool_ratio:  # a knob set where it does nothing
            notes.append(
                f"mamba_full_memory_ratio {r:g} does nothing: the model has no recurrent state"
            )
        return kv_budget, 0.0, None, notes
    pool = max(kv_budget, 0.0) * r / (1.0 + r)
    cap = max(int(pool // state_bytes) // e.state_slots_per_request, 0)
    note = (
        f"{e.name} keeps the recurrent states in a pool of their own ({pool / 1e9:,.1f} GB "
        f"per GPU, {r:g} of the attention KV's): it runs at most {cap:,} requests, "
        f"{e.state_slots_per_request} state slots each"
    )
    return kv_budget - pool, pool, cap, [note]
