"""The special functions of the queueing closed form, vectorised in numpy: the log gamma
function and the regularised upper incomplete gamma function.

``scipy.special`` has them, but importing it costs about 0.35 s of CPU (it loads scipy's
array-API layer, which walks numpy's lazy submodules), a third of a cold ``planner solve``
on the catalogue; the planner calls them on a few hundred thousand arguments per solve.
The series and continued fractions here are the classical ones (Press et al., *Numerical
Recipes*, 3rd ed., §6.1-6.2: Stirling's series, the incomplete gamma's series and its
Legendre continued fraction by the modified Lentz method).
An argument whose series or fraction has not converged within ``MAX_ITER`` terms (only near
the transition of very large parameters: the work grows as their square root) reads NaN,
which the callers treat as "not representable here" and sum the queue term by term instead.
``tests/test_special.py`` checks them against scipy."""

from __future__ import annotations

import numpy as np

EPS = 1e-15  # relative size of the last term kept (about a double's resolution)
TINY = 1e-300  # Lentz's guard against a zero denominator
MAX_ITER = 400  # terms per argument at most; the rest read NaN (see the module's docstring)
BLOCK = 8  # iterations between convergence checks
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
# Stirling's series for log Γ(y), y >= 8: B_2k / (2k (2k−1) y^(2k−1)), k = 1..7; the first
# term left out is below 1e-15 at y = 8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def gammaln(x) -> np.ndarray:
    """log Γ(x) for x > 0: Stirling's series, at ``x + 8`` less log(x(x+1)…(x+7)) where
    x < 8 (the series needs 8 or more for full precision)."""
    x = np.asarray(x, float)
    low = x < 8.0
    if not low.any():
        return _stirling(x)
    z = np.where(low, x, 1.0)
    prod = z.copy()
    for k in range(1, 8):
        prod *= z + k
    return _stirling(np.where(low, x + 8.0, x)) - np.where(low, np.log(prod), 0.0)


def _stirling(y) -> np.ndarray:
    """Stirling's series for log Γ(y), y >= 8."""
    return (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI + _stirling_tail(y)


def _stirling_tail(y) -> np.ndarray:
    """The series' terms in 1/y: log Γ(y) − ((y − ½)·log y − y + ½·log 2π)."""
    inv2 = 1.0 / (y * y)
    series = _STIRLING[-1] * inv2
    for coef in reversed(_STIRLING[1:-1]):
        series = (series + coef) * inv2
    return (series + _STIRLING[0]) / y


def gammaincc(a, x, floor: float = 0.0) -> np.ndarray:
    """Q(a, x) = Γ(a, x) / Γ(a), a > 0, x >= 0 (broadcast): below ``x = a + 1`` one minus
    the series of P, above it Legendre's continued fraction for Q (each where it converges
    fast and keeps Q's relative precision). Above ``a + 1`` the fraction is at most 1, so Q is
    at most x^a e^-x / Γ(a): where that is below ``floor`` Q reads 0, not computed (a caller
    that cannot use such small values skips their work)."""
    a, x = np.broadcast_arrays(np.asarray(a, float), np.asarray(x, float))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    out = np.full(a.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        log_pre = _log_gamma_front(a, x)
        zero = x <= 0
        out[zero] = 1.0
        series = ~zero & (x < a + 1)
        frac = ~zero & ~series
        if floor > 0:
            below = frac & (log_pre < np.log(floor))
            out[below] = 0.0
            frac &= ~below
        idx = np.flatnonzero(series)
        if idx.size:
            s, ok = _gamma_series(a[idx], x[idx])
            out[idx[ok]] = 1.0 - s[ok] * np.exp(log_pre[idx[ok]])
        idx = np.flatnonzero(frac)
        if idx.size:
            h, ok = _gamma_fraction(a[idx], x[idx])
            out[idx[ok]] = h[ok] * np.exp(log_pre[idx[ok]])
    return out.reshape(shape)


def _log_gamma_front(a, x):
    """log(x^a e^-x / Γ(a)). For large ``a`` the two sides are each about a·log a while
    their difference is small: by Stirling's series, ``a(log1p(t) − t) + ½log(a/2π) − S(a)``
    with ``t = (x − a)/a`` and ``S`` the series' tail, which keeps the digits."""
    small = a < 8.0
    if small.all():
        return a * np.log(x) - x - gammaln(a)
    ab = np.where(small, 8.0, a)
    t = (x - ab) / ab
    big = ab * (np.log1p(t) - t) + 0.5 * np.log(ab) - _HALF_LOG_2PI - _stirling_tail(ab)
    if not small.any():
        return big
    return np.where(small, a * np.log(x) - x - gammaln(a), big)


def _gamma_series(a, x):
    """Σ_n x^n / (a (a+1) … (a+n)): P(a, x) = that × x^a e^-x / Γ(a)."""
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    ok = np.zeros(a.shape, bool)
    live = np.arange(a.size)
    ap_l, t_l, s_l, x_l = ap, term, total, x
    for _ in range(0, MAX_ITER, BLOCK):
        for _ in range(BLOCK):  # a converged sum stays converged: check once a block
            ap_l = ap_l + 1.0
            t_l = t_l * (x_l / ap_l)
            s_l = s_l + t_l
        total[live] = s_l
        done = np.abs(t_l) < np.abs(s_l) * EPS
        ok[live[done]] = True
        keep = ~done
        live, ap_l, t_l, s_l, x_l = live[keep], ap_l[keep], t_l[keep], s_l[keep], x_l[keep]
        if not live.size:
            break
    return total, ok


def _gamma_fraction(a, x):
    """Legendre's continued fraction of Γ(a, x) e^x x^-a, by the modified Lentz method."""
    b = x + 1.0 - a
    d = 1.0 / b
    h = d.copy()
    c = np.full(a.shape, 1.0 / TINY)
    ok = np.zeros(a.shape, bool)
    live = np.arange(a.size)
    a_l, b_l, c_l, d_l, h_l = a, b, c, d, h
    for start in range(1, MAX_ITER + 1, BLOCK):
        for i in range(start, start + BLOCK):  # past convergence the factors stay 1
            an = -i * (i - a_l)
            b_l = b_l + 2.0
            d_l = an * d_l + b_l
            d_l[np.abs(d_l) < TINY] = TINY
            c_l = b_l + an / c_l
            c_l[np.abs(c_l) < TINY] = TINY
            d_l = 1.0 / d_l
            delta = d_l * c_l
            h_l = h_l * delta
        h[live] = h_l
        done = np.abs(delta - 1.0) < EPS
        ok[live[done]] = True
        keep = ~done
        live = live[keep]
        a_l, b_l, c_l, d_l, h_l = a_l[keep], b_l[keep], c_l[keep], d_l[keep], h_l[keep]
        if not live.size:
            break
    return h, ok
