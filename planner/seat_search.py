"""The capacity search, vectorised over many replicas at once: for each, the most sessions
whose load point meets its targets (TTFT at the percentile, per-user speed) and fits its KV
slots. Every round evaluates the user counts of every open search in one call, then closes
each search's bracket with array operations, not a Python loop per replica.

A search scans a coarse geometric grid up to a count past saturation (or, where the caller
knows about where the answer lies, counts close around that guess), then scans the bracket
between the last count that passes and the first that fails (16 evenly spaced counts at
most) until the two are one user apart. The load curve is monotone in users, so
the passing counts are a prefix: a count that fails ends the prefix ("never past a count
that fails").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

GRID = 10  # geometric grid points up to past saturation
SCAN = 16  # evenly spaced counts per bracket scan, its two ends included
# the first round's counts around a guess (as shares of it), beside one user and n_hi: the
# speed-bound guess (planner.capacity.speed_bound_users) is within a few per cent of most
# answers, which then lie in a bracket that one scan closes (three_workloads.yaml's load
# points: 197 -> 152 ms); a poor guess costs a scan or two more, never another answer
NEAR = np.array([0.5, 0.8, 0.95, 1.0, 1.03, 1.07, 1.15, 1.4])
BINDINGS = ("memory", "tokens_per_s", "ttft", "saturation")


@dataclass
class Found:
    """Per search: seats, what stops it going higher (an index into :data:`BINDINGS`), and
    the TTFT and per-user speed at one session."""

    units: np.ndarray
    binding: np.ndarray
    best_ttft_s: np.ndarray
    best_tokens_per_s: np.ndarray

    def names(self) -> list[str]:
        return [BINDINGS[b] for b in self.binding.tolist()]


def search(
    evaluate: Callable[..., object],
    n_hi,
    ttft_s,
    tokens_per_s,
    guess=None,
) -> Found:
    """Seats of each search ``k`` (arrays over the searches: ``n_hi`` a user count past
    saturation, the targets, NaN where a workload sets none). ``evaluate(users, k, bracket)``
    returns the load points (a LoadPoint's arrays) of those user counts, each on its own
    search's replica; ``bracket`` (None in the first round) holds, per count, the request
    rates of the counts that bracket it, which its fixed point may start from. ``guess``:
    per search, a user count near the answer (NaN where none is known): the first round's
    counts then close in on it (:data:`NEAR`), not a geometric grid; the answer is the same
    (every count that passes is still below every count that fails), in fewer rounds."""
    n_hi = np.asarray(n_hi, float)
    ttft_s, tps = np.asarray(ttft_s, float), np.asarray(tokens_per_s, float)
    count = len(n_hi)
    units = np.zeros(count, np.int64)
    binding = np.zeros(count, np.int64)
    best_ttft, best_tps = np.full(count, np.inf), np.zeros(count)
    if not count:
        return Found(units, binding, best_ttft, best_tps)
    # round 0: the grid (rounded to whole users; a repeated count is evaluated once)
    grid = _first_counts(n_hi, guess)
    keep = np.ones(grid.shape, bool)
    keep[:, 1:] = grid[:, 1:] != grid[:, :-1]
    rows, users, ok, bind, lp = _round(evaluate, np.arange(count), grid, keep, ttft_s, tps, None)
    starts = _starts(rows, count)
    best_ttft[:] = np.asarray(lp.ttft_pct_s)[starts]  # the first grid count is one user
    best_tps[:] = np.asarray(lp.per_user_tokens_per_s)[starts]
    passed = _passed(ok, starts)
    lengths = np.diff(np.append(starts, len(rows)))
    none = passed == 0
    binding[none] = bind[starts[none]]
    every = passed == lengths
    units[every] = users[starts[every] + lengths[every] - 1].astype(np.int64)
    binding[every] = BINDINGS.index("saturation")
    mid = ~none & ~every
    pass_at = starts + np.maximum(passed, 1) - 1
    last = np.where(mid, users[pass_at], 0.0)
    fail_at = starts + np.minimum(passed, lengths - 1)
    nxt = np.where(mid, users[fail_at], 0.0)
    binding[mid] = bind[fail_at[mid]]
    rate = _rates(lp, len(users))
    rate_lo, rate_hi = rate[pass_at], rate[fail_at]  # the rates at each bracket's ends
    open_ = np.flatnonzero(mid & (nxt - last > 1))
    while open_.size:
        lo, hi = last[open_], nxt[open_]
        width = np.minimum(hi - lo + 1, SCAN)  # the counts of each scan, its ends included
        j = np.arange(SCAN, dtype=float)[None, :]
        # what np.linspace(lo, hi, width) computes, row by row, rounded to whole users
        pts = np.round(j * ((hi - lo) / (width - 1))[:, None] + lo[:, None])
        inner = (j >= 1) & (j <= (width - 2)[:, None])
        ends = (rate_lo[open_], rate_hi[open_])
        rows, users, ok, bind, lp = _round(evaluate, open_, pts, inner, ttft_s, tps, ends)
        rate = _rates(lp, len(users))
        starts = _starts(rows, len(open_))
        passed = _passed(ok, starts)
        lengths = np.diff(np.append(starts, len(rows)))
        moved = passed > 0
        at = starts[moved] + passed[moved] - 1
        last[open_[moved]] = users[at]
        rate_lo[open_[moved]] = rate[at]
        failed = passed < lengths
        at = starts[failed] + passed[failed]
        nxt[open_[failed]] = users[at]
        rate_hi[open_[failed]] = rate[at]
        binding[open_[failed]] = bind[at]
        open_ = open_[nxt[open_] - last[open_] > 1]
    units[mid] = last[mid].astype(np.int64)
    return Found(units, binding, best_ttft, best_tps)


def _first_counts(n_hi: np.ndarray, guess) -> np.ndarray:
    """Each search's first counts, ascending from one user to ``n_hi``: a geometric grid, or
    where a guess is known, counts around it (:data:`NEAR`)."""
    grid = np.geomspace(1.0, n_hi, GRID, axis=1)
    if guess is not None:
        g = np.asarray(guess, float)
        near = np.concatenate(
            [np.ones((len(g), 1)), g[:, None] * NEAR[None, :], n_hi[:, None]], axis=1
        )
        near = np.sort(np.clip(near, 1.0, n_hi[:, None]), axis=1)
        grid, near = _same_width(grid, near)
        grid = np.where(np.isfinite(g)[:, None], near, grid)
    return np.round(grid)


def _same_width(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two tables of ascending rows, the narrower padded with its last column (a repeated
    count is evaluated once)."""
    w = max(a.shape[1], b.shape[1])
    return tuple(np.pad(t, ((0, 0), (0, w - t.shape[1])), mode="edge") for t in (a, b))


def _round(evaluate, which: np.ndarray, pts: np.ndarray, keep: np.ndarray, ttft_s, tps, ends):
    """Evaluate the kept counts of each search in ``which`` (a row of ``pts`` each; ``ends``:
    the request rates at each one's bracket ends, or None): for each evaluated count its
    search's position in ``which``, the count, whether it passes, and the limit it breaks
    first (an index into BINDINGS); and the load points."""
    r, c = np.nonzero(keep)  # row-major: each search's counts together, in order
    k, users = which[r], pts[r, c]
    lp = evaluate(users, k, None if ends is None else (ends[0][r], ends[1][r]))
    fits = np.asarray(lp.fits, bool)
    fast = np.isnan(tps[k]) | (np.asarray(lp.per_user_tokens_per_s) >= tps[k])
    soon = np.isnan(ttft_s[k]) | (np.asarray(lp.ttft_pct_s) <= ttft_s[k])
    bind = np.where(~fits, 0, np.where(~fast, 1, 2))
    return r, users, fits & fast & soon, bind, lp


def _rates(lp, count: int) -> np.ndarray:
    """The request rate of each evaluated count (NaN where the load points carry none: the
    next round then starts its fixed points from scratch)."""
    rate = getattr(lp, "rate", None)
    return np.full(count, np.nan) if rate is None else np.asarray(rate, float)


def _starts(rows: np.ndarray, count: int) -> np.ndarray:
    """Where each search's counts begin (every search has at least one)."""
    return np.searchsorted(rows, np.arange(count))


def _passed(ok: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per search, how many of its counts pass before the first that fails."""
    pos = np.arange(len(ok))
    first_fail = np.minimum.reduceat(np.where(ok, len(ok), pos), starts)
    ends = np.append(starts[1:], len(ok))
    return np.minimum(first_fail, ends) - starts
