"""The serving engine's rules that refuse a replica or a batch the memory would hold: the
sequence cap, the longest request, and a KV cache too small for one longest request."""

from __future__ import annotations

from typing import Any

# ``ev``: an :class:`estimator.llm.Evaluator` (which imports these rules)
Evaluator = Any


def unstartable(ev: Evaluator) -> str | None:
    """Why the engine cannot start with the max_model_len the user set (its KV cache cannot
    hold one such sequence), or None. Unset, the engine's default is only a note."""
    limit, tokens = ev.engine.max_model_len, ev.kv_cache_tokens
    if limit and tokens is not None and tokens < limit:
        return f"KV cache holds {tokens:,} tokens < max_model_len {limit:,}"
    return None


def engine_cap_refusal(ev: Evaluator, batch: int) -> str | None:
    """The engine runs at most max_num_seqs sequences at once (the rest queue)."""
    if batch <= ev.max_seqs:
        return None
    return (
        f"batch {batch} exceeds the engine's max_num_seqs {ev.max_seqs}: the rest would "
        "wait; raise --max-num-seqs"
    )


def state_pool_refusal(ev: Evaluator, batch: int, max_batch: int) -> str | None:
    """An engine that keeps a hybrid's recurrent states in a pool of their own runs no more
    requests than its state slots hold, whatever room the KV cache has left."""
    cap = ev.state_request_cap
    if cap is None or batch <= max_batch or max_batch < cap:
        return None  # within the cap, or the KV cache binds first
    return (
        f"batch {batch} exceeds the {cap} requests {ev.engine.name}'s pool of recurrent "
        f"states holds ({ev.engine.state_slots_per_request} state slots each): the rest "
        "would wait; a larger --mamba-full-memory-ratio holds more"
    )


def max_model_len_refusal(ev: Evaluator, context: int, notes: list[str]) -> str | None:
    """The engine's sequence-length rules: a request longer than max_model_len is refused,
    and vLLM refuses to start when its KV cache cannot hold one max_model_len sequence ("max
    seq len ... is larger than the maximum number of tokens that can be stored in KV cache").
    Unset, max_model_len is the model's own maximum: then only a note."""
    e, tokens = ev.engine, ev.kv_cache_tokens
    limit = e.max_model_len or ev.model.max_context
    if e.name == "vllm" and limit and tokens is not None and 0 < tokens < limit:
        knob = "max_model_len" if e.max_model_len else "the default max_model_len"
        notes.append(
            f"{e.name} will not start with {knob} {limit:,}: its KV cache holds {tokens:,} "
            f"tokens; set --max-model-len {tokens} or less"
        )
    if e.max_model_len and context > e.max_model_len:
        return f"{context} tokens per request exceed max_model_len {e.max_model_len}"
    if why := unstartable(ev):
        return f"the engine will not start: {why}"
    return None
