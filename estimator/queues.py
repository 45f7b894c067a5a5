"""Queueing formulas of the load model: the finite-source queue of a closed loop (users who
come back after thinking) and the tail of its waiting time."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


class Repairman:
    """Finite-source queue M/M/c//N (the machine-repairman model): ``n`` users each come
    back after ``think`` seconds on average and hold one of ``c`` servers for ``hold``
    seconds. Exact for every population, vectorised over an array of them.

    The number in service or queue, ``k``, has ``p_k ∝ N!/(N−k)! / (min(k,c)!·c^max(k−c,0))
    · (hold/think)^k``, a log-concave sequence: its mass sits within a few standard
    deviations of its mode, which is found in closed form. So each population sums only the
    window where ``p_k`` is within e^-60 of its peak (every term, or a smooth sample of at
    most 800 a side), never all ``N`` terms: the cost does not grow with the population."""

    DROP = 60.0  # the window ends where p_k has fallen by e^-60 from the mode
    SAMPLES = 800  # sample points per half-window where the sum is smooth
    MAX_COLS = 16384  # terms per population at most (reached only past ~10^6 users)

    def __init__(self, n, c: int):
        self.all_n = np.atleast_1d(np.asarray(n, float))
        self.rows = self.all_n > c  # with no more users than servers nobody ever waits
        self.n = self.all_n[self.rows]
        self.c = c
        self._log_fact_n = gammaln(self.n + 1)

    def _window(self, r: np.ndarray):
        """Sample points ``k`` (rows x columns), their weights, and a validity mask."""
        n, c = self.n, self.c
        # the mode: where p_{k+1}/p_k = (N−k)·r / min(k+1, c) falls through 1
        high = n - c / r  # in the queueing region (k >= c)
        low = (n * r - 1) / (1 + r)  # below c
        mode = np.clip(np.where(high >= c, high, np.minimum(low, c)), 0, n)
        # half-width: where log p has fallen by DROP from the mode, given its slope there
        # (a mode at 0 can decay slowly, geometrically) and its curvature, 1/(N−k) at least
        var = n - mode + 1
        slope = np.minimum(
            0.0, np.log(np.maximum((n - mode) * r, 1e-300) / np.minimum(mode + 1, c))
        )
        width = var * (slope + np.sqrt(slope**2 + 2 * self.DROP / var))
        # sample every few terms only where the sum is smooth at that scale: the window
        # clear of the kink at k = c and a slow slope; otherwise every term (at most MAX_COLS)
        smooth = mode - width > c + 1
        stride = np.floor(np.minimum(width / self.SAMPLES, 0.05 / np.maximum(-slope, 1e-12)))
        stride = np.where(smooth, np.maximum(1.0, stride), 1.0)
        width = np.minimum(width, self.MAX_COLS / 2 * stride)
        half = np.ceil(width / stride) + 2
        start = np.maximum(0.0, np.floor(mode / stride - half) * stride)
        cols = int(np.max(np.minimum(2 * half + 1, n // stride + 1)))
        k = start[:, None] + stride[:, None] * np.arange(cols)[None, :]
        valid = k <= n[:, None]
        return np.where(valid, k, 0.0), stride[:, None], valid

    def __call__(self, think, hold):
        """(probability an arrival waits, mean wait), over all the populations given."""
        shape = self.all_n.shape
        pw_all, wq_all = np.zeros(shape), np.zeros(shape)
        if not self.n.size:
            return pw_all, wq_all
        h = (np.asarray(hold, float) * np.ones(shape))[self.rows]
        z = (np.asarray(think, float) * np.ones(shape))[self.rows]
        r = np.maximum(h, 1e-30) / np.maximum(z, 1e-30)
        k, stride, valid = self._window(r)
        c, n = self.c, self.n[:, None]
        served = np.minimum(k, c)
        logp = (
            self._log_fact_n[:, None]
            - gammaln(n - k + 1)
            - gammaln(served + 1)
            - np.maximum(k - c, 0) * np.log(c)
            + k * np.log(r)[:, None]
        )
        logp = np.where(valid, logp, -np.inf)
        p = np.exp(logp - logp.max(axis=1, keepdims=True)) * stride
        p /= p.sum(axis=1, keepdims=True)
        x = (served * p).sum(axis=1) / np.maximum(h, 1e-30)  # throughput
        wq = (np.maximum(k - c, 0) * p).sum(axis=1) / np.maximum(x, 1e-30)  # Little's law
        pw_all[self.rows] = (p * (k >= c)).sum(axis=1)
        wq_all[self.rows] = wq
        return pw_all, wq_all


def tail_wait(pw, w, p: float):
    """The ``p``-quantile of a queueing wait that is zero with probability ``1 - pw`` and
    otherwise exponential with mean ``w / pw`` (the M/M/c conditional-wait shape)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            pw > 1 - p,
            (w / np.maximum(pw, 1e-12)) * np.log(np.maximum(pw, 1e-300) / (1 - p)),
            0.0,
        )
