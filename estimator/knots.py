"""The batch sizes at which a replica's per-iteration tables are kept, and reading a table
between them (:class:`estimator.steps.Steps` holds iteration seconds and memory at these)."""

from __future__ import annotations

import numpy as np

# The batch sizes at which a replica's iteration time and memory are tabulated: every whole
# batch up to DENSE_KNOTS (every engine default of max_num_seqs), then a step of 1/128 of the
# batch (attention-DP and small models on large GPUs run tens of thousands of sequences: a
# decode step is linear in the batch within each regime, so a 0.8% spacing moves the
# interpolated time by at most ~0.2%, at a regime's kink). Shared by every replica, so
# tables of many stack into one array.
DENSE_KNOTS = 1024
KNOT_STEP = 1 / 128


def _knots(top: float = 1e8) -> np.ndarray:
    out = list(range(DENSE_KNOTS + 1))
    while out[-1] < top:
        out.append(out[-1] + int(np.ceil(out[-1] * KNOT_STEP)))
    return np.array(out, float)


BATCH_KNOTS = _knots()


def knot_index(slots):
    """The index of the first batch knot at or above ``slots`` (each of an array)."""
    return np.searchsorted(BATCH_KNOTS, slots)


def last_knot(slots, width: int | None = None):
    """The index of the last knot of a table through ``slots`` (at least one): the first knot
    at or past it, within a table ``width`` knots wide where given (each of an array)."""
    last = knot_index(np.maximum(slots, 1))
    return last if width is None else np.minimum(last, width - 1)


def knots_upto(slots: int) -> np.ndarray:
    """The batch knots from 0 through the first at or above ``slots``."""
    return BATCH_KNOTS[: int(knot_index(slots)) + 1]


def interp_table(table: np.ndarray, x, rows=None):
    """The piecewise-linear table (on :data:`BATCH_KNOTS`) at ``x``: one table for every
    ``x``, or table row ``rows[i]`` for ``x[i]`` (np.interp's arithmetic: both give the same
    numbers)."""
    width = table.shape[-1]
    knots = BATCH_KNOTS[:width]
    if table.ndim == 1:
        return np.interp(x, knots, table)
    x = np.clip(np.asarray(x, float), 0, knots[-1])
    if width <= DENSE_KNOTS + 1:  # every knot a whole batch: the index is the floor
        i = np.minimum(np.floor(x).astype(np.intp), max(width - 2, 0))
    else:
        i = np.minimum(np.searchsorted(knots, x, side="right") - 1, max(width - 2, 0))
    j = np.minimum(i + 1, width - 1)
    lo, hi, x0, x1 = table[rows, i], table[rows, j], knots[i], knots[j]
    frac = (x - x0) / np.maximum(x1 - x0, 1.0)
    return np.where(x == x0, lo, np.where(x == x1, hi, (hi - lo) * frac + lo))
