"""Where a MoE layer's tokens go: the share of experts a step touches, the share its busiest
expert-parallel rank streams, and the ranks one token reaches (uniform routing)."""

from __future__ import annotations

from functools import lru_cache
from math import lgamma

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


def slowest_rank_touch(k: int, experts: int, ranks: int, tokens):
    """Share of its own experts the busiest of ``ranks`` expert-parallel ranks streams in a
    step: E[max over ranks of the experts touched on a rank] / (experts per rank), each
    expert touched independently with :func:`expert_touch`'s probability (a Binomial per
    rank), and never below the even share of the touched experts, ceil(touched / ranks): a
    step of few tokens touches few experts, each on one rank (top-1 at one token: one rank
    streams a whole expert). Every MoE layer ends in a collective, so each layer waits for its
    slowest rank: at small batch a few ranks hold most of the touched experts (DeepSeek-V3,
    4 tokens on EP8: 6.6 of a rank's 32 experts on the busiest against 3.8 on average). Under
    expert-TP (``ranks`` 1) every rank streams a slice of every touched expert: balanced."""
    share = expert_touch(k, experts, tokens)
    if ranks <= 1:
        return share
    if experts % ranks:
        raise ValueError(f"{ranks} expert-parallel ranks do not divide {experts} experts")
    n = experts // ranks
    grid, table = _busiest_table(n, ranks)
    busiest = np.interp(share, grid, table)  # a function of the touch probability alone
    even = np.ceil(share * experts / ranks - 1e-9) / n  # the touched experts dealt out evenly
    return np.where(share > 0, np.maximum(busiest, even), 0.0)


@lru_cache(maxsize=128)
def _busiest_table(n: int, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """E[max of ``ranks`` Binomial(n, p)] / n on a grid of p (geometric near 0, where steps
    touch few experts): interpolated, it answers a whole batch grid at the cost of a lookup."""
    grid = np.concatenate(([0.0], np.geomspace(1e-7, 1.0, 600)))
    j = np.arange(n + 1, dtype=float)
    log_c = np.array([lgamma(n + 1) - lgamma(x + 1) - lgamma(n - x + 1) for x in j])
    p = np.clip(grid, 1e-12, 1 - 1e-12)[:, None]
    pmf = np.exp(log_c + j * np.log(p) + (n - j) * np.log1p(-p))
    cdf = np.clip(np.cumsum(pmf, axis=-1), 0.0, 1.0)
    busiest = np.sum(1.0 - cdf[:, :-1] ** ranks, axis=-1)  # E[max] = sum_j P(max > j)
    return grid, busiest / n


@lru_cache(maxsize=128)
def _ep_excess(k: int, experts: int, ranks: int) -> tuple[float, ...]:
    tokens = np.array([1.0, 8.0, 64.0])
    r = slowest_rank_touch(k, experts, ranks, tokens) / expert_touch(k, experts, tokens)
    return tuple(float(x) for x in r)


def ep_note(model, ranks: int) -> str | None:
    """What an estimate says of an expert-parallel split: how much more than the mean rank its
    busiest rank streams (None without EP or experts)."""
    if ranks <= 1 or not model.is_moe:
        return None
    r = _ep_excess(model.moe.top_k, model.moe.num_experts, ranks)
    return (
        f"EP{ranks}: each MoE layer waits for the rank whose own experts its tokens touch "
        f"most (uniform routing): {r[0]:.1f}x the mean rank's expert weights at 1 token a "
        f"step, {r[1]:.1f}x at 8, {r[2]:.2f}x at 64 (expert-TP streams a slice of each: even)"
    )
