"""The request rate a closed loop settles at: the one root of a non-increasing implied
rate, found by a kept bracket and Illinois steps (the load model's and the disaggregated
unit's fixed point)."""

from __future__ import annotations

import numpy as np

RATE_TOLERANCE = 1e-9  # relative residual of the request rate at which it is settled
MAX_STEPS = 60  # bracket steps at most; the Illinois steps settle in ~10 in practice
BRACKET_MARGIN = 1e-6  # a given bracket is widened by this (relative): roots at its ends
# once at most this share of the rows evaluated are still settling, evaluate those alone
NARROW_BELOW = 0.5


def rate_fixed_point(
    at_rate, x_max: float, n: np.ndarray, bracket=None, narrow=None
) -> tuple[np.ndarray, np.ndarray]:
    """The request rate ``λ`` at which the users' implied rate ``at_rate(λ)[0]`` equals it,
    per user count: (rate, saturated). ``at_rate(λ, only)`` may leave rows outside ``only``
    unsolved (their queues' sums are the cost). The implied rate never rises with ``λ``, so
    the root in ``[0, x_max]`` is unique; a bracket keeps it and Illinois (modified regula
    falsi) steps close it superlinearly whatever the curve's shape. Saturated where the users
    would send more than ``x_max``. ``bracket``: rates known to hold each root (the roots of
    fewer and of more users: the rate rises with users), a start that settles in fewer
    steps; where one does not hold it, that end falls back to ``0`` or ``x_max``.
    ``narrow(rows)``: the same ``at_rate`` over those rows alone; once most rows have
    settled, the steps evaluate only the rows still settling (the same numbers for each)."""
    x_max = np.broadcast_to(np.asarray(x_max, float), n.shape)
    lo, top = np.zeros_like(n), x_max.copy()
    if bracket is not None:  # NaN: no bound known at that end
        below, above = (np.asarray(b, float) for b in bracket)
        lo = np.clip(np.nan_to_num(below * (1 - BRACKET_MARGIN)), 0.0, x_max)
        top = np.clip(np.where(np.isnan(above), x_max, above * (1 + BRACKET_MARGIN)), lo, x_max)
    f_hi = at_rate(top)[0] - top
    f_lo = at_rate(lo)[0] - lo
    wide = (f_hi >= 0) & (top < x_max)  # the root lies above the bracket given
    if wide.any():
        top = np.where(wide, x_max, top)
        f_hi = np.where(wide, at_rate(top, wide)[0] - top, f_hi)
    below = (f_lo < 0) & (lo > 0)  # or below it
    if below.any():
        lo = np.where(below, 0.0, lo)
        f_lo = np.where(below, at_rate(lo, below)[0] - lo, f_lo)
    saturated = f_hi >= 0
    hi = top.copy()
    side = np.zeros_like(n)  # which end the last step moved: -1 low, +1 high
    x = hi.copy()
    live = ~saturated
    rows, step = None, at_rate  # the rows `step` evaluates (None: all)
    for _ in range(MAX_STEPS):
        if not live.any():
            break
        evaluated = n.size if rows is None else rows.size
        if narrow is not None and live.sum() <= NARROW_BELOW * evaluated:
            rows = np.flatnonzero(live)
            step = narrow(rows)
        x = np.where(live, (lo * f_hi - hi * f_lo) / np.minimum(f_hi - f_lo, -1e-300), x)
        if rows is None:
            f_x = at_rate(x, live)[0] - x  # settled rows are not recomputed (values unread)
        else:
            f_x = np.full(n.shape, np.nan)  # the rows left out have settled (unread)
            f_x[rows] = step(x[rows], live[rows])[0] - x[rows]
        up, down = live & (f_x >= 0), live & (f_x < 0)
        f_hi = np.where(up & (side < 0), f_hi / 2, f_hi)  # Illinois: a stale end loses weight
        f_lo = np.where(down & (side > 0), f_lo / 2, f_lo)
        lo, f_lo = np.where(up, x, lo), np.where(up, f_x, f_lo)
        hi, f_hi = np.where(down, x, hi), np.where(down, f_x, f_hi)
        side = np.where(up, -1.0, np.where(down, 1.0, side))
        live &= (np.abs(f_x) > RATE_TOLERANCE * np.maximum(x, 1e-300)) & (
            hi - lo > RATE_TOLERANCE * hi
        )
    return np.where(saturated, top, x), saturated
