"""Where published runs measured an engine well off this estimate, for reasons the physics
does not carry yet: said beside the estimate, with the evidence, so a plan on such a stack
is read with it. The numbers stay the fitted model's (docs/VALIDATION.md, 'Missing
physics', gives each miss in full); a caveat is retired when a term explains its runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Caveat:
    applies: Callable[[Any, Any, str, str], bool]  # (model, gpu, engine name, weight format)
    text: str
    # about the serving stack's fitted time to a first token: moot where its users set theirs
    # (Engine.stack_ms)
    fitted_stack: bool = False
    # about a workload's shape (prompt tokens, answer tokens): said only where it is known
    # and holds
    lengths: Callable[[float, float], bool] | None = None


def _prompt_heavy(prompt: float, answer: float) -> bool:
    """Prompts of ten times their answers' tokens or more: the shape of the runs below
    (2048/128, 5000/500, 20000/2000; 2k-32k prompts for 100-200 tokens)."""
    return prompt >= 10 * answer


CAVEATS: tuple[Caveat, ...] = (
    Caveat(
        lambda m, g, e, w: m.is_moe and w == "fp8" and g.family == "cdna3" and e == "sglang",
        "measured: MoE models with FP8 weights under SGLang on 8x MI300X/MI325X took "
        "1.3-2.6x this estimate's time per token: DeepSeek-R1 under v0.5.9-v0.5.12 (median "
        "1.7x; InferenceX, 72 runs, validation/candidates/llm_measured_inferencex_cdna3.csv) "
        "and Qwen3-Coder-480B-A35B under 0.5.7 (1.9-2.6x at 1-64 clients; the SGLang "
        "cookbook), where MI355X and H200 in the same harness sit within 10% and BF16 "
        "Llama-4 on MI300X within 17% at up to 16 clients: gfx942's block-FP8 MoE kernels",
    ),
    Caveat(
        lambda m, g, e, w: m.num_linear_layers > 0 and e == "sglang",
        "measured: SGLang's mean time per token on Gated DeltaNet hybrids under load was "
        "2.7-4.6x this estimate's (GPUStack's Qwen3.5-9B and 35B-A3B at 8 req/s, SGLang "
        "0.5.9; the SGLang cookbook's Qwen3-Next-80B at 100 clients, 0.5.6: iterations that "
        "prefill arriving prompts stall decode far beyond their FLOPs); at one client it "
        "matched within 15%",
    ),
    Caveat(
        lambda m, g, e, w: e == "vllm",
        "measured: vLLM's own time to a first token (HTTP, tokenising, scheduling, streaming "
        "the token back) is not in this TTFT: its published runs disagree by version, beyond "
        "the prompt's GPU time about 0 ms under v0.8.3 (Llama-3.3-70B on 8x A100, 1 req/s), "
        "12 ms under v0.17.1 (Qwen3.5-9B on an H100, 1 req/s) and 48 ms under v0.11.0 "
        "(Qwen3-8B on an H100, one client through the chat endpoint; "
        "validation/candidates/llm_vllm_serving_prs.csv)",
        fitted_stack=True,
    ),
    Caveat(
        lambda m, g, e, w: e == "vllm" and g.family == "hopper" and w in ("bf16", "fp16"),
        "measured: recent vLLM decoded 16-bit models 19-32% faster per token than this "
        "estimate on H100/H200 (Llama-3-8B on an H200 under 0.11.2, Llama-3.1-8B on an H100 under "
        "0.19.1, Qwen3-30B-A3B on an H100 under 0.10.1, Qwen3-8B on an H100 under 0.11.0): "
        "vLLM's host time per step is fitted over its versions 0.6-0.19, too few of its "
        "runs recent for a fit of their own, so the time per token here is conservative for "
        "today's vLLM on Hopper",
    ),
    Caveat(
        lambda m, g, e, w: e == "sglang" and g.family == "blackwell" and w != "fp8",
        "measured: SGLang decoded faster per token than this estimate on 8x B200/B300 in "
        "BF16 and FP4: 1.7-2.7x at one client under 0.5.8 (DeepSeek-R1 NVFP4, Qwen3-235B "
        "BF16, gpt-oss-120b MXFP4; one published gist) and a median 1.24x for DeepSeek-R1 "
        "NVFP4 under 0.5.12 (InferenceX, 14 runs at 1-128 clients), where its FP8 runs sit "
        "within 10%: the time per token here is conservative for SGLang on Blackwell",
    ),
    Caveat(
        lambda m, g, e, w: g.name == "h20",
        "measured: decode on H20s ran 1.8-3.5x this estimate's time per token (Qwen's speed "
        "tables, SGLang 0.4.6: Qwen3-4B to 32B at batch 1, BF16 and FP8, 2.2-3.5x; "
        "DeepSeek-V3 FP8 on 8x H20 under SGLang ~0.4.8, 1.8x): the compute-capped die "
        "(148 dense BF16 TFLOPS) pays for Hopper's 64-row GEMM tiles at small batch, which "
        "the estimate does not charge",
    ),
    Caveat(
        lambda m, g, e, w: m.is_moe,
        "measured: where prompts dwarf answers (ten times the tokens or more), mixture-of-"
        "experts runs made fewer tokens per second than this estimate, which was 1.2-2x "
        "theirs: TensorRT-LLM's perf overview at 2048/128 and 5000/500 (Qwen3-30B-A3B 1.5-2x "
        "on B200/GB200, Qwen3-235B-A22B 1.2-1.85x, Llama-4 Scout 1.2-1.45x) and GPUStack's "
        "bursts of 100-500 prompts of 2k-32k tokens (gpt-oss, Qwen3-235B, GLM-4.5-Air, "
        "DeepSeek-R1 under vLLM and SGLang, 48 runs, a median 1.8x; "
        "validation/candidates/llm_gpustack_throughput.csv), where "
        "its runs of short prompts and long answers sit near or below the measured: size a "
        "prompt-heavy MoE fleet with that margin",
        lengths=_prompt_heavy,
    ),
    Caveat(
        lambda m, g, e, w: m.is_moe and w == "int4" and e == "vllm",
        "measured: DeepSeek-R1 with 4-bit AWQ weights under vLLM on 8x H100 took 2.3x this "
        "estimate's time per token at one client (tenstorrent's runs at 128-8k tokens: "
        "16.1-16.6 ms against 7.0-7.2): vLLM's W4A16 MoE kernels cost more than the "
        "weight streaming the estimate charges them",
    ),
)


def measured_caveats(model, gpu, engine, weights: str) -> list[str]:
    """The caveats whose published runs match this model class, GPU family, engine (an
    :class:`~estimator.engines.Engine` or its name) and weight format, whatever the
    workload; where the engine's users set its stack's time to a first token, that instead
    of the fitted one's."""
    name = getattr(engine, "name", engine)
    stack_ms = getattr(engine, "stack_ms", None)
    out = [
        c.text
        for c in CAVEATS
        if not c.lengths
        and c.applies(model, gpu, name, weights)
        and not (c.fitted_stack and stack_ms is not None)
    ]
    if stack_ms is not None:
        out.append(
            f"the serving stack's time to a first token is {stack_ms:g} ms as set for this "
            f"stack (serving_stack_ms), not the one fitted for {name}'s own server"
        )
    return out


def shape_caveats(model, gpu, engine, weights: str, prompt: float, answer: float) -> list[str]:
    """The caveats about a workload's shape (``prompt`` and ``answer`` tokens) whose
    published runs match this stack: said where the workload is known, beside
    :func:`measured_caveats`."""
    name = getattr(engine, "name", engine)
    return [
        c.text
        for c in CAVEATS
        if c.lengths and c.lengths(prompt, answer) and c.applies(model, gpu, name, weights)
    ]
