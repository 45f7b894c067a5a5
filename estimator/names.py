"""How a typed name becomes a catalogue key.

Models: a Hugging Face repo id in any case, with or without its org, the ``org--name``
spelling of the hub cache (``models--org--name``), and the usual derivative suffixes
(``-Instruct``, ``-chat-hf``, ``-FP8``, ``-AWQ``, ``-GPTQ-Int4``, dated ``-2507``...), each
stripped only when the name itself is not in the catalogue. A quantisation suffix implies
the weight format. GPUs: product names as ``nvidia-smi`` / ``rocm-smi`` print them and the
``VENDOR-MODEL-MEMORY`` spellings of benchmark tables, case- and punctuation-insensitively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---- models -----------------------------------------------------------------------------

# Quantisation suffixes (one token each, matched at the end after - _ or .) and the weight
# format they imply; combined ones (-AWQ-INT4, -FP8-dynamic) are stripped token by token.
_QUANT: list[tuple[str, str | None]] = [
    (r"fp8(?:[-_.](?:dynamic|static|block))?", "fp8"),
    (r"mxfp4", "mxfp4"),
    (r"(?:nv)?fp4", "fp4"),
    (r"awq|gptq|bnb[-_.]4bit|4bit|int4|w4a16|quantized[-_.]w4a16", "int4"),
    (r"int8|8bit|w8a8|quantized[-_.]w8a8", "int8"),
]
# Release and packaging suffixes that name the same architecture as the checkpoint they
# derive from: instruction/chat tunes, the "-hf" conversions, base/pretrained, dated updates.
_VARIANT = r"instruct|chat|hf|base|it|pt|\d{4}"

_QUANT_RE = [(re.compile(rf"[-_.\s]({p})$"), fmt) for p, fmt in _QUANT]
_VARIANT_RE = re.compile(rf"[-_.\s]({_VARIANT})$")


def model_key(name: str) -> str:
    """Case-folded, with the hub-cache and ``org--name`` spellings turned into ``org/name``."""
    s = name.strip().strip("/").lower()
    if s.startswith("models--"):
        s = s[len("models--") :]
    if "/" not in s and "--" in s:
        s = s.replace("--", "/", 1)
    return s


def without_org(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def compact(key: str) -> str:
    """Letters, digits and dots only: 'Llama 2 70B', 'llama2-70b' and 'llama-2-70b' meet
    (dots stay, so 'opt-1.3b' never meets 'opt-13b')."""
    return re.sub(r"[^a-z0-9.]", "", without_org(key))


@dataclass(frozen=True)
class Derivation:
    """One candidate reading of a typed name: the key to look up, the weight format a
    stripped quantisation suffix implies, and the suffixes stripped to get there."""

    key: str
    weights: str | None
    stripped: tuple[str, ...]


def derivations(key: str) -> list[Derivation]:
    """The name as typed, then each shorter form obtained by stripping one suffix at a
    time (quantisation first, then release suffixes), most specific first."""
    out = [Derivation(key, None, ())]
    weights: str | None = None
    stripped: list[str] = []
    s = key
    while True:
        for rx, fmt in _QUANT_RE:
            m = rx.search(s)
            if m:
                weights = weights or fmt
                break
        else:
            m = _VARIANT_RE.search(s)
            if not m:
                return out
        stripped.append(s[m.start() :])
        s = s[: m.start()]
        out.append(Derivation(s, weights, tuple(stripped)))


# The weight format a config's ``quantization_config`` implies (its quant_method, and for
# integer methods its bit width).
def config_weight_format(config: dict) -> str | None:
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        text = config.get("text_config")
        q = text.get("quantization_config") if isinstance(text, dict) else None
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method in ("nvfp4", "modelopt_fp4"):
        return "fp4"
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).lower()
        return "fp4" if "fp4" in algo else "fp8" if "fp8" in algo else None
    if method in ("compressed-tensors", "compressed_tensors"):
        return _compressed_tensors_format(q)
    if method == "bitsandbytes":
        return "int4" if q.get("load_in_4bit") else "int8" if q.get("load_in_8bit") else None
    if method in ("awq", "gptq"):
        return {4: "int4", 8: "int8"}.get(int(bits)) if bits else "int4"
    return None


def _compressed_tensors_format(q: dict) -> str | None:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    w = next(iter(groups.values())).get("weights") or {}
    bits, kind = w.get("num_bits"), str(w.get("type", "int")).lower()
    if bits == 8:
        return "fp8" if kind == "float" else "int8"
    if bits == 4:
        return "fp4" if kind == "float" else "int4"
    return None


# ---- GPUs -------------------------------------------------------------------------------

# Words that add nothing to which part it is: vendors and brands, memory technologies.
_GPU_NOISE = {
    "nvidia", "amd", "intel", "habana", "geforce", "tesla", "instinct", "quadro", "radeon",
    "hbm", "hbm2", "hbm2e", "hbm3", "hbm3e", "gddr6", "gddr6x", "gddr7", "graphics", "gpu",
    "accelerator", "edition", "generation",
}  # fmt: skip
_MEM = re.compile(r"^(\d+(?:\.\d+)?)(gb|g)$")


def gpu_key(name: str) -> tuple[str, float | None]:
    """(the part's name folded to letters and digits, the memory in GB it states or None).
    Parenthesised remarks ('(form factor not stated)', '(NVL72)') are dropped."""
    s = re.sub(r"\([^)]*\)", " ", name.lower())
    tokens = [t for t in re.split(r"[^a-z0-9.]+", s) if t and t != "."]
    mem = None
    kept: list[str] = []
    for i, t in enumerate(tokens):
        m = _MEM.match(t)
        if m:
            mem = float(m.group(1))
        elif t.isdigit() and i + 1 < len(tokens) and tokens[i + 1] == "gb":
            mem = float(t)
        elif t == "gb" or t in _GPU_NOISE:
            continue
        else:
            kept.append(t.replace(".", ""))
    return "".join(kept), mem
