"""An error band as the tables print it: p10-p90 and the median."""

from __future__ import annotations


def band_cell(band: dict | None, fmt, scale: float = 1.0, unit: str = "") -> str:
    """A table's band column: 'a-b unit (median c)'. The median is the estimate times the
    median measured/predicted of its regime: where the published runs of that regime ran
    mostly slower (or faster) than estimated, the estimate itself lies outside its band."""
    if not band:
        return ""
    lo, mid, hi = (fmt(band[q] * scale) for q in ("p10", "p50", "p90"))
    return f"{lo}-{hi}{' ' + unit if unit else ''} (median {mid})"
