"""The per-GPU memory box every estimate reports (language models and the other families)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MemoryBox:
    """Per-GPU memory, GB (1e9 bytes)."""

    weights: float
    kv_cache: float
    activations: float
    overhead: float
    total: float
    capacity: float
    usable: float  # what the engine lets the process use for all of the above
