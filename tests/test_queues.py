"""The finite-source queue against its definition, summed term by term, and its special
functions against scipy's."""

import numpy as np
import pytest
from scipy import special as sp

from estimator import special
from estimator.queues import Repairman


def _every_term(n: float, c: float, think: float, hold: float) -> tuple[float, float]:
    """(P(an arrival waits), mean wait) of M/M/c//N from all N+1 terms of p_k."""
    k = np.arange(np.floor(n) + 1)
    served = np.minimum(k, c)
    logp = (
        sp.gammaln(n + 1)
        - sp.gammaln(n - k + 1)
        - sp.gammaln(served + 1)
        - np.maximum(k - c, 0) * np.log(c)
        + k * np.log(hold / think)
    )
    p = np.exp(logp - logp.max())
    p /= p.sum()
    x = (served * p).sum() / hold
    return float(p[k >= c].sum()), float((np.maximum(k - c, 0) * p).sum() / x)


def _window_only(q: Repairman) -> Repairman:
    q._single_server = lambda r, h, z, pw, wq, skip=None: np.zeros(len(r), bool)
    q._light = lambda r, h, pw, wq, skip: np.zeros(len(r), bool)
    return q


@pytest.mark.parametrize("servers", ["one", "many"])
def test_queue_matches_every_term_summed(servers):
    rng = np.random.default_rng(3 if servers == "many" else 2)
    size = 300
    n = np.round(10 ** rng.uniform(0.3, 3.7, size))
    n[::7] += 0.375  # users shared among replicas: fractional populations
    if servers == "one":
        c = np.ones(size)
    else:
        c = np.maximum(1, np.round(n * 10 ** rng.uniform(-2.5, 0.1, size)))
    hold, think = 10 ** rng.uniform(-2, 1, size), 10 ** rng.uniform(-2, 2.5, size)
    pw, wq = Repairman(n, c)(think, hold)
    for i in range(size):
        if n[i] <= c[i]:
            assert pw[i] == 0.0 and wq[i] == 0.0  # nobody ever waits
            continue
        ref_pw, ref_wq = _every_term(n[i], c[i], think[i], hold[i])
        assert pw[i] == pytest.approx(ref_pw, abs=1e-9)
        assert wq[i] == pytest.approx(ref_wq, rel=1e-7, abs=1e-9 * hold[i])


def test_single_server_closed_form_matches_the_window_sum():
    rng = np.random.default_rng(2)
    n = rng.integers(2, 3000, size=400).astype(float)
    hold, think = 10 ** rng.uniform(-3, 1, size=400), 10 ** rng.uniform(-3, 2, size=400)
    q = Repairman(n, 1)
    closed = q(think, hold)
    r = hold / think
    taken = q._single_server(r, hold, think, np.zeros(400), np.zeros(400))
    assert taken.mean() > 0.3  # most populations take the closed form (the point of it)
    pw, wq = _window_only(Repairman(n, 1))(think, hold)
    np.testing.assert_allclose(closed[0], pw, atol=1e-10)
    big = wq > 1e-9 * hold  # tiny waits differ only in rounding
    np.testing.assert_allclose(closed[1][big], wq[big], rtol=1e-7)
    np.testing.assert_allclose(closed[1][~big], wq[~big], atol=1e-8 * hold.max())


def test_rows_not_asked_for_read_zero_and_the_others_do_not_change():
    rng = np.random.default_rng(4)
    n = np.round(10 ** rng.uniform(0.5, 4, 500))
    c = np.maximum(1, np.round(n * 10 ** rng.uniform(-2, 0, 500)))
    hold, think = 10 ** rng.uniform(-1, 1, 500), 10 ** rng.uniform(0, 2, 500)
    q = Repairman(n, c)
    pw, wq = q(think, hold)
    only = rng.random(500) < 0.5
    pw2, wq2 = q(think, hold, only)
    np.testing.assert_array_equal(pw2[only], pw[only])
    np.testing.assert_array_equal(wq2[only], wq[only])
    assert not pw2[~only].any() and not wq2[~only].any()


def test_log_gamma_matches_scipy():
    rng = np.random.default_rng(0)
    x = np.concatenate([10 ** rng.uniform(-300, -1, 500), 10 ** rng.uniform(-1, 7, 20000)])
    x = np.concatenate([x, np.arange(1.0, 200.0), [0.5, 1.0, 2.0, 8.0]])
    ref = sp.gammaln(x)
    np.testing.assert_allclose(special.gammaln(x), ref, rtol=1e-13, atol=1e-13)
    assert special.gammaln(5.0) == pytest.approx(np.log(24.0), rel=1e-15)


def test_upper_incomplete_gamma_matches_scipy():
    rng = np.random.default_rng(1)
    a = 10 ** rng.uniform(-3, 5, 50000)
    a[::3] = np.round(a[::3]) + 1  # whole populations, as the queue calls it
    x = a * 10 ** rng.uniform(-2, 2, 50000)
    got, ref = special.gammaincc(a, x), sp.gammaincc(a, x)
    converged = np.isfinite(got)
    assert converged.mean() > 0.995  # only near the transition of huge a: the window takes it
    keep = converged & (ref > 1e-280)
    np.testing.assert_allclose(got[keep], ref[keep], rtol=1e-9)
    # Poisson tail by hand: Q(3, 2) = e^-2 (1 + 2 + 2) = 5 e^-2
    assert special.gammaincc(3.0, 2.0) == pytest.approx(5 * np.exp(-2.0), rel=1e-14)
    # the floor: values certainly below it read 0 without being computed
    floored = special.gammaincc(a, x, floor=1e-250)
    low = converged & (ref < 1e-260)
    assert (floored[low] == 0).mean() > 0.9
    high = converged & (ref > 1e-240)
    np.testing.assert_allclose(floored[high], got[high], rtol=0)


def test_poisson_quantile_is_continuous_and_meets_the_integer_one():
    """The p-quantile of a Poisson count: 0 while P(K = 0) covers p, then rising
    continuously to the integer quantile at each step (scipy's ppf, hand-checked values:
    mean 1 -> 2, mean 4 -> 7, mean 20 -> 26 at p = 0.9); never above its cap."""
    from estimator.queues import poisson_quantile

    assert poisson_quantile(0.0, 0.9) == 0.0
    assert poisson_quantile(0.1, 0.9) == 0.0  # e^-0.1 = 0.905 >= 0.9
    for mean, k in ((1.0, 2), (4.0, 7), (20.0, 26)):
        assert k - 1 < poisson_quantile(mean, 0.9) <= k
    x = np.linspace(0, 30, 3001)
    q = poisson_quantile(x, 0.9)
    assert np.all(np.diff(q) >= 0) and np.max(np.diff(q)) < 0.1
    assert poisson_quantile(np.array([50.0]), 0.9, cap=np.array([12.0]))[0] == 12.0


def test_light_load_products_match_every_term_summed():
    """One server at light load (n x hold/think <= 0.5): its terms as products down to
    1e-20 are the whole sum, fractional populations included."""
    rng = np.random.default_rng(5)
    n = np.round(10 ** rng.uniform(0.3, 4, 300))
    n[::5] += 0.4
    hold = 10 ** rng.uniform(-3, 0, 300)
    think = hold * n / 10 ** rng.uniform(-4, np.log10(0.5), 300)  # n·r in [1e-4, 0.5]
    q = Repairman(n, 1)
    pw, wq = q(think, hold)
    taken = q._light(hold / think, hold, np.zeros(300), np.zeros(300), np.zeros(300, bool))
    assert taken.all()
    wpw, wwq = _window_only(Repairman(n, 1))(think, hold)
    for i in range(300):
        ref_pw, ref_wq = _every_term(n[i], 1.0, think[i], hold[i])
        assert pw[i] == pytest.approx(ref_pw, rel=1e-9, abs=1e-15)
        assert wq[i] == pytest.approx(ref_wq, rel=1e-7, abs=1e-12 * hold[i])
    np.testing.assert_allclose(pw, wpw, rtol=1e-9, atol=1e-15)
