"""Number formats: bytes per stored value and the precision the math runs in.

One place for what a weight or KV-cache format costs in memory and which tensor-core
precision it can use. Scale overheads are the formats' own block layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import EstimatorError


@dataclass(frozen=True)
class Format:
    name: str
    bytes_per_value: float  # including per-block scale overhead
    compute: str  # the precision the matmuls run in when the GPU supports it natively
    note: str


# Weight formats. Scale overheads: FP8 per-channel/per-tensor scales are negligible;
# INT8 per-channel likewise; INT4 AWQ/GPTQ group 128 with an FP16 scale and FP16 zero
# (4 B per 128 values = 0.03125 B/value); NVFP4 one FP8 scale per 16 values (0.0625 B/value,
# NVIDIA Blackwell NVFP4 spec; MXFP4 is one E8M0 scale per 32 = 0.03125).
WEIGHT_FORMATS: dict[str, Format] = {
    "bf16": Format("bf16", 2.0, "bf16", "16-bit brain float"),
    "fp16": Format("fp16", 2.0, "fp16", "16-bit float"),
    "fp8": Format("fp8", 1.0, "fp8", "W8A8 FP8 (E4M3), per-channel scales"),
    "int8": Format("int8", 1.0, "int8", "W8A8 INT8 (SmoothQuant-style), per-channel scales"),
    "int4": Format(
        "int4",
        0.5 + 4 / 128,
        "bf16",
        "W4A16 (AWQ/GPTQ, group 128): dequantised to BF16 for the math",
    ),
    "fp4": Format("fp4", 0.5 + 1 / 16, "fp4", "W4A4 NVFP4 (FP8 scale per 16 values)"),
    # OCP MXFP4: one E8M0 scale per 32 values (gpt-oss ships its experts so); the math runs
    # in FP4 where the GPU has it, else dequantised to 16-bit like any 4-bit format.
    "mxfp4": Format("mxfp4", 0.5 + 1 / 32, "fp4", "MXFP4 (E8M0 scale per 32 values)"),
}

# KV-cache formats. INT4 KV carries a 16-bit scale per 64 values (KIVI-style grouping).
KV_FORMATS: dict[str, Format] = {
    "bf16": Format("bf16", 2.0, "bf16", "16-bit KV cache"),
    "fp16": Format("fp16", 2.0, "fp16", "16-bit KV cache"),
    "fp8": Format("fp8", 1.0, "bf16", "FP8 KV cache (E4M3)"),
    "int4": Format("int4", 0.5 + 2 / 64, "bf16", "INT4 KV cache, 16-bit scale per 64 values"),
}

# Fall-back order when the GPU has no tensor-core path for a precision: the honest
# alternative is to dequantise and compute in the widest 16-bit format it does have.
_FALLBACK = {
    "fp4": ["fp8", "bf16", "fp16"],
    "fp8": ["bf16", "fp16"],
    "int8": ["bf16", "fp16"],
    "bf16": ["fp16", "fp32"],
    "fp16": ["bf16", "fp32"],
}


def weight_format(name: str) -> Format:
    try:
        return WEIGHT_FORMATS[name.lower()]
    except KeyError:
        raise EstimatorError(
            f"unknown weight format '{name}'; use one of {', '.join(WEIGHT_FORMATS)}"
        ) from None


def kv_format(name: str) -> Format:
    try:
        return KV_FORMATS[name.lower()]
    except KeyError:
        raise EstimatorError(
            f"unknown KV-cache format '{name}'; use one of {', '.join(KV_FORMATS)}"
        ) from None


def compute_precision(wanted: str, supported: dict[str, float]) -> tuple[str, str | None]:
    """The precision the math actually runs in on a GPU, and a note when it is not ``wanted``.

    FP4 from W4A4 on Hopper falls back to FP8 only if the engine re-quantises; we take the
    conservative path the engines ship (dequantise to 16-bit: W4A16 Marlin-style kernels).
    """
    if supported.get(wanted):
        return wanted, None
    order = ["bf16", "fp16", "fp32"] if wanted == "fp4" else _FALLBACK.get(wanted, ["bf16"])
    for alt in order:
        if supported.get(alt):
            return alt, (
                f"{wanted.upper()} math is not native on this GPU: weights keep the "
                f"{wanted.upper()} memory and bandwidth saving, matmuls run in {alt.upper()}"
            )
    raise EstimatorError(f"GPU supports none of {wanted}, {', '.join(order)}")
