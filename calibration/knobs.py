"""The engine knobs a published run states it set, read from its row's notes, so the row is
scored under the configuration it ran (the estimator's own knobs,
:func:`estimator.engines.configure`): memory fraction, sequence cap, tokens per iteration.

Each engine's own spelling (its server's command-line flags, or the LLM API's field names
TensorRT-LLM runs take in an options file); a range or a value the notes only quote as
someone else's is not a setting, so only ``flag value`` and ``flag=value`` pairs count.
Also the run's length (:func:`run_length`), which scores an open loop past saturation."""

from __future__ import annotations

import re

# engine -> {its spelling: the estimator's knob}
_FLAGS: dict[str, dict[str, str]] = {
    "vllm": {
        "--gpu-memory-utilization": "gpu_memory_utilization",
        "--max-num-seqs": "max_num_seqs",
        "--max-num-batched-tokens": "max_num_batched_tokens",
    },
    "sglang": {
        "--mem-fraction-static": "gpu_memory_utilization",
        "--max-running-requests": "max_num_seqs",
        "--chunked-prefill-size": "max_num_batched_tokens",
        "--max-prefill-tokens": "max_num_batched_tokens",
        "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
    },
    "trtllm": {
        "--kv_cache_free_gpu_mem_fraction": "gpu_memory_utilization",
        "free_gpu_memory_fraction": "gpu_memory_utilization",
        "--max_batch_size": "max_num_seqs",
        "--max_num_tokens": "max_num_batched_tokens",
    },
}
_NUMBER = r"[ =:]\s*([0-9]+(?:\.[0-9]+)?)(?![0-9.]*\s*-\s*[0-9])"


def published_knobs(notes: str, engine: str) -> dict[str, float]:
    """The knobs ``notes`` state for ``engine`` (the last value where a flag repeats)."""
    out: dict[str, float] = {}
    for flag, knob in (_FLAGS.get(engine) or {}).items():
        for m in re.finditer(re.escape(flag) + _NUMBER, notes):
            value = float(m[1])
            fraction = knob in ("gpu_memory_utilization", "mamba_full_memory_ratio")
            out[knob] = value if fraction else int(value)
    return out


# A run's length as its notes give it: the client's flag (vLLM/SGLang --num-prompts,
# guidellm --max-requests) or 'N requests' / 'N prompts'.
_RUN_LENGTH = re.compile(
    r"(?:--num-prompts|--max-requests)[ =](\d+)|\b(\d[\d,]*) (?:requests|prompts)\b"
)


def run_length(notes: str) -> int | None:
    """The number of requests a benchmark run sent, where its notes state it."""
    m = _RUN_LENGTH.search(notes or "")
    if m is None:
        return None
    return int((m.group(1) or m.group(2)).replace(",", ""))
