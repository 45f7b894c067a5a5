"""The width scale that makes a band hold its nominal share of rows it was not built from
(calibration.bands.scale_for_coverage), on draws whose spread is known."""

import numpy as np

from calibration.bands import NOMINAL_INNER, _widen, scale_for_coverage

Z90 = 1.2815515655446004  # the standard normal's 90th percentile


def _bands(sigma: float, n: int):
    """p10, p50, p90 of a lognormal of log-spread ``sigma``, one per row."""
    lo, hi = np.exp(-Z90 * sigma), np.exp(Z90 * sigma)
    return np.full(n, lo), np.ones(n), np.full(n, hi)


def test_a_band_half_as_wide_as_the_spread_widens_twofold():
    """Rows spread twice as wide (in log space) as the band built from others: the band
    must widen about twice to hold 80% of them."""
    x = np.exp(np.random.default_rng(0).normal(0.0, 0.5, 20000))
    lo, mid, hi = _bands(0.25, len(x))
    scale = scale_for_coverage(x, lo, mid, hi)
    assert 1.95 <= scale <= 2.05
    inside = (x >= lo**scale) & (x <= hi**scale)
    assert NOMINAL_INNER <= inside.mean() < NOMINAL_INNER + 0.01


def test_a_band_wide_enough_already_is_never_narrowed():
    x = np.exp(np.random.default_rng(1).normal(0.0, 0.1, 5000))
    assert scale_for_coverage(x, *_bands(0.5, len(x))) == 1.0


def test_an_offset_the_band_did_not_see_widens_it():
    """Each source's rows share an offset of their own (its harness and stack): bands from
    the rows' spread alone hold fewer than 80% of them, and widen to."""
    rng = np.random.default_rng(2)
    offsets = rng.normal(0.0, 0.3, 40)
    x = np.exp(np.repeat(offsets, 50) + rng.normal(0.0, 0.2, 2000))
    lo, mid, hi = _bands(0.2, len(x))
    assert ((x >= lo) & (x <= hi)).mean() < 0.7
    assert scale_for_coverage(x, lo, mid, hi) > 1.5


def test_widening_keeps_the_median_and_the_order_of_the_quantiles():
    q = {"n": 40, "sources": 7, "p5": 0.5, "p10": 0.6, "p25": 0.8, "p50": 1.1}
    q |= {"p75": 1.3, "p90": 1.7, "p95": 2.2}
    w = _widen(q, 1.5)
    assert w["p50"] == 1.1 and w["n"] == 40 and w["sources"] == 7 and w["width_scale"] == 1.5
    values = [w[f"p{k}"] for k in (5, 10, 25, 50, 75, 90, 95)]
    assert values == sorted(values)
    assert w["p90"] == round(1.1 * (1.7 / 1.1) ** 1.5, 3) and w["p10"] < q["p10"]
