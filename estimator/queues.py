"""Queueing formulas of the load model: the finite-source queue of a closed loop (users who
come back after thinking) and the tail of its waiting time."""

from __future__ import annotations

import numpy as np

from .special import gammaincc, gammaln


class Repairman:
    """Finite-source queue M/M/c//N (the machine-repairman model): ``n`` users each come
    back after ``think`` seconds on average and hold one of ``c`` servers for ``hold``
    seconds. Exact for every population, vectorised over an array of them.

    The number in service or queue, ``k``, has ``p_k ∝ N!/(N−k)! / (min(k,c)!·c^max(k−c,0))
    · (hold/think)^k``, a log-concave sequence: its mass sits within a few standard
    deviations of its mode, which is found in closed form. So each population sums only the
    window where ``p_k`` is within e^-45 of its peak (every term, or a smooth sample of at
    most 200 a side), never all ``N`` terms: the cost does not grow with the population.
    With one server (the prefill queue) the sum is an incomplete gamma function, in closed
    form where it is representable (:meth:`_single_server`). Many servers have a closed form
    too (incomplete beta below ``c``, incomplete gamma above), but in numpy its continued
    fractions cost more than the window sums they replace (in the shipped scenarios the
    tails of most populations underflow it, and the window takes them anyway)."""

    DROP = 45.0  # the window ends where p_k has fallen by e^-45 (3e-20) from the mode:
    # below a double's resolution of the sum
    SAMPLES = 200  # sample points per half-window where the sum is smooth (36 a standard
    # deviation at least: the sampled sum matches every term to ~1e-12)
    MAX_COLS = 16384  # terms per population at most (reached only past ~10^6 users)
    LIGHT = 0.5  # one server with n·hold/think at most this: light load (see _light)
    LIGHT_TAIL = 1e-20  # its terms are summed until the next would fall below this

    def __init__(self, n, c):
        """``c``: the servers, one count for every population or one per population."""
        self.all_n = np.atleast_1d(np.asarray(n, float))
        all_c = np.broadcast_to(np.asarray(c, float), self.all_n.shape)
        self.rows = self.all_n > all_c  # with no more users than servers nobody ever waits
        self.n = self.all_n[self.rows]
        self.c = all_c[self.rows]
        self._log_fact_n = gammaln(self.n + 1)

    def _window(self, r: np.ndarray):
        """Per population: the first sample point, the stride between samples, and how many
        samples its window holds."""
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
        cols = np.minimum(2 * half + 1, n // stride + 1)
        return start, stride, cols

    def __call__(self, think, hold, only=None):
        """(probability an arrival waits, mean wait), over all the populations given (or
        only those where ``only`` is true; the others read 0). Rows are summed in blocks of
        equal width (a power of two at least their window), so a population's numbers never
        depend on the others computed with it."""
        shape = self.all_n.shape
        pw_all, wq_all = np.zeros(shape), np.zeros(shape)
        if not self.n.size:
            return pw_all, wq_all
        h = (np.asarray(hold, float) * np.ones(shape))[self.rows]
        z = (np.asarray(think, float) * np.ones(shape))[self.rows]
        r = np.maximum(h, 1e-30) / np.maximum(z, 1e-30)
        pw, wq = np.zeros(len(r)), np.zeros(len(r))
        skip = np.zeros(len(r), bool)
        if only is not None:  # rows not asked for count as done and read 0
            skip = ~np.broadcast_to(np.asarray(only, bool), shape)[self.rows]
        done = self._light(r, h, pw, wq, skip) | skip
        done |= self._single_server(r, h, z, pw, wq, done)
        rest = np.flatnonzero(~done)
        if rest.size:
            start, stride, cols = self._window(r)
            width = np.maximum(8, 2 ** np.ceil(np.log2(np.maximum(cols[rest], 1))))
            every = stride[rest] == 1  # every term summed (no sampling): by its ratios
            for w, e in sorted(set(zip(width.tolist(), every.tolist(), strict=True))):
                sel = rest[(width == w) & (every == e)]
                pw[sel], wq[sel] = self._sums(sel, int(w), r[sel], h[sel], start, stride, cols)
        pw_all[self.rows] = pw
        wq_all[self.rows] = wq
        return pw_all, wq_all

    def _light(self, r, h, pw, wq, skip) -> np.ndarray:
        """One server at light load (``n·r`` at most :data:`LIGHT`: a lightly used prefill
        queue, most of a capacity search's counts, where the closed form underflows or
        cancels): ``p_k/p_0 = Π_{m<k} (n−m)·r`` falls by ``n·r`` a term at least, so the
        terms down to :data:`LIGHT_TAIL` are the sum to below a double's resolution, as
        products (no logarithms, no window). Fills ``pw``/``wq`` where it applies (not in
        ``skip``); returns where."""
        ok = (self.c == 1) & (self.n * r <= self.LIGHT) & ~skip
        if not ok.any():
            return ok
        i = np.flatnonzero(ok)
        n, rr = self.n[i, None], r[i, None]
        most = max(float(np.max(n * rr)), 1e-300)
        terms = int(np.clip(np.ceil(np.log(self.LIGHT_TAIL) / np.log(most)), 1, 80))
        m = np.arange(terms)[None, :]
        # term m + 1 from term m; none past the population (k <= n, as the window sums)
        t = np.cumprod(np.where(m + 1 <= n, (n - m) * rr, 0.0), axis=1)
        total = t.sum(axis=1)
        busy = total / (1.0 + total)  # P(k >= 1)
        queue = (t * m).sum(axis=1) / (1.0 + total)  # E[(k − 1)+]: term m holds k = m + 1
        pw[i] = busy
        wq[i] = queue / np.maximum(busy / np.maximum(h[i], 1e-30), 1e-30)  # Little's law
        return ok

    def _single_server(self, r, h, z, pw, wq, skip=None) -> np.ndarray:
        """One server and a whole number of users (the prefill queue): in closed form, where
        it is representable. With ``u = think/hold``, the normaliser is
        ``Σ_k N!/(N−k)!·r^k = N!·r^N·e^u·Q(N+1, u)`` (Q: the regularised upper incomplete
        gamma), so the server idles with ``p0`` its inverse; throughput ``(1−p0)/hold``, the
        users away ``x·think``, the rest at the server, one of them in service (Little's law
        gives the wait). Fills ``pw``/``wq`` where it applies (rows in ``skip`` are not
        asked for); returns where."""
        n = self.n
        ok = (self.c == 1) & (n == np.round(n))
        if skip is not None:
            ok &= ~skip
        if not ok.any():
            return ok
        u = 1.0 / r
        q = np.zeros(len(r))
        # far from saturation Q is below 1e-250 (or underflows): the window sums those
        q[ok] = gammaincc(n[ok] + 1, u[ok], floor=1e-250)
        ok &= q > 1e-250
        with np.errstate(divide="ignore", over="ignore"):
            log_z = self._log_fact_n + n * np.log(r) + u + np.log(np.where(ok, q, 1.0))
        p0 = np.exp(-np.where(ok, log_z, 0.0))
        busy = 1.0 - p0
        # light load: the queue is a small difference of large terms; the window sums it
        ok &= busy > 0.01
        x = busy / np.maximum(h, 1e-30)
        queue = np.maximum(n - x * z - busy, 0.0)
        pw[ok] = busy[ok]
        wq[ok] = (queue / np.maximum(x, 1e-30))[ok]
        return ok

    def _sums(self, sel, width: int, r, h, start, stride, cols):
        """(P(k >= c), mean wait) of the rows ``sel``, each over its own window."""
        j = np.arange(width)[None, :]
        k = start[sel, None] + stride[sel, None] * j
        c, n = self.c[sel, None], self.n[sel, None]
        valid = (j < cols[sel, None]) & (k <= n)
        k = np.where(valid, k, 0.0)
        served = np.minimum(k, c)
        if (stride[sel] == 1).all():
            # consecutive terms: log p by its ratios p_{k+1}/p_k = (N−k)·r/min(k+1, c), which
            # the normalisation below makes absolute (a log a term, not three log-gammas)
            step = np.log(np.maximum(n - k, 1e-300) * r[:, None]) - np.log(np.minimum(k + 1, c))
            logp = np.zeros(k.shape)
            np.cumsum(step[:, :-1], axis=1, out=logp[:, 1:])
        else:
            logp = (
                self._log_fact_n[sel, None]
                - gammaln(n - k + 1)
                - gammaln(served + 1)
                - np.maximum(k - c, 0) * np.log(c)
                + k * np.log(r)[:, None]
            )
        logp = np.where(valid, logp, -np.inf)
        p = np.exp(logp - logp.max(axis=1, keepdims=True)) * stride[sel, None]
        p /= p.sum(axis=1, keepdims=True)
        x = (served * p).sum(axis=1) / np.maximum(h, 1e-30)  # throughput
        wq = (np.maximum(k - c, 0) * p).sum(axis=1) / np.maximum(x, 1e-30)  # Little's law
        return (p * (k >= c)).sum(axis=1), wq


def tail_wait(pw, w, p):
    """The ``p``-quantile of a queueing wait that is zero with probability ``1 - pw`` and
    otherwise exponential with mean ``w / pw`` (the M/M/c conditional-wait shape)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            pw > 1 - p,
            (w / np.maximum(pw, 1e-12)) * np.log(np.maximum(pw, 1e-300) / (1 - p)),
            0.0,
        )


def poisson_quantile(mean, p, cap=np.inf):
    """The ``p``-quantile of a Poisson count of ``mean`` (``p``: one, or one per mean),
    continuous in ``mean``: the integer quantile ``k`` (the least with ``P(K <= k) >= p``)
    less the share of ``P(K = k)`` not needed to reach ``p`` (0 below the first step). Never
    above ``cap``."""
    m = np.maximum(np.atleast_1d(np.asarray(mean, float)), 1e-300)
    top = int(min(np.max(m + 10 * np.sqrt(m) + 10, initial=10), np.max(cap, initial=10) + 1))
    k = np.arange(top + 1)
    # in logs: no overflow for any mean
    log_pmf = k[None, :] * np.log(m)[:, None] - m[:, None] - gammaln(k + 1.0)[None, :]
    pmf = np.exp(log_pmf)
    cdf = np.cumsum(pmf, axis=1)
    p = np.asarray(p, float)
    p_row = p[:, None] if p.ndim else p  # one percentile for all, or one per mean
    j = np.minimum((cdf < p_row).sum(axis=1), top)  # the integer quantile
    rows = np.arange(len(m))
    over = (cdf[rows, j] - p) / np.maximum(pmf[rows, j], 1e-300)
    q = np.maximum(j - np.clip(over, 0.0, 1.0), 0.0)
    out = np.minimum(q, cap)
    return out if np.ndim(mean) else float(out[0])
