"""Where a MoE layer's tokens go: the share of experts a step touches and the expert-parallel
ranks one token reaches (uniform routing)."""

from __future__ import annotations

import numpy as np


def expert_touch(k: int, experts: int, tokens):
    """Share of experts a step's tokens route to: 1 − (1 − k/E)^tokens (uniform routing)."""
    return 1.0 - (1.0 - k / experts) ** np.asarray(tokens, float)


def ranks_reached(k: int, experts: int, ranks: int) -> float:
    """Expected expert-parallel ranks one token's ``k`` distinct experts sit on (its own
    included), the ``experts`` spread evenly over ``ranks``: ``ranks x (1 - C(E - E/r, k) /
    C(E, k))``. A dispatch sends a token once to each rank holding one of its experts (and
    the combine returns one partial sum from each), not once per expert."""
    if ranks <= 1:
        return 1.0
    others = experts - experts / ranks
    miss = 1.0
    for j in range(k):  # P(none of the k experts on a given rank), drawn without replacement
        miss *= max(others - j, 0.0) / (experts - j)
    return ranks * (1.0 - miss)
