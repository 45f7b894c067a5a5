"""A small text chart for the terminal: a few series of y against x on one grid, each drawn
with its own mark, with the y range on the left and the x range below."""

from __future__ import annotations

import math

MARKS = "*o+x#@"


def text_chart(
    series: list[tuple[str, list[float], list[float]]],
    *,
    width: int = 56,
    height: int = 12,
    x_label: str = "",
    y_label: str = "",
    log_x: bool = False,
) -> list[str]:
    """``series``: (label, xs, ys). Points share the axes; a later series overwrites an
    earlier one where they meet. Empty or non-finite points are left out."""
    pts = [
        (i, x, y)
        for i, (_, xs, ys) in enumerate(series)
        for x, y in zip(xs, ys, strict=True)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    if log_x:
        pts = [(i, x, y) for i, x, y in pts if x > 0]
    if not pts:
        return ["(nothing to draw)"]

    def fx(x: float) -> float:
        return math.log(x) if log_x else x

    x0, x1 = min(fx(p[1]) for p in pts), max(fx(p[1]) for p in pts)
    y0, y1 = 0.0, max(p[2] for p in pts)
    y0 = min(y0, min(p[2] for p in pts))
    grid = [[" "] * width for _ in range(height)]
    for i, x, y in pts:
        c = 0 if x1 == x0 else round((fx(x) - x0) / (x1 - x0) * (width - 1))
        r = 0 if y1 == y0 else round((y - y0) / (y1 - y0) * (height - 1))
        grid[height - 1 - r][c] = MARKS[i % len(MARKS)]
    top, bottom = f"{y1:.3g}", f"{y0:.3g}"
    pad = max(len(top), len(bottom))
    lines = [f"{y_label}"] if y_label else []
    for r, row in enumerate(grid):
        tick = top if r == 0 else bottom if r == height - 1 else ""
        lines.append(f"{tick:>{pad}} |" + "".join(row))
    lines.append(" " * pad + " +" + "-" * width)
    lo = min(p[1] for p in pts)
    hi = max(p[1] for p in pts)
    span = f"{lo:g}" + " " * max(1, width - len(f"{lo:g}") - len(f"{hi:g}")) + f"{hi:g}"
    lines.append(" " * (pad + 2) + span + (f"  {x_label}" if x_label else ""))
    lines.append(
        " " * (pad + 2)
        + "   ".join(f"{MARKS[i % len(MARKS)]} {label}" for i, (label, _, _) in enumerate(series))
    )
    return lines
