"""A closed-loop TTFT against its share of the client's cycle.

A client of a closed loop (no think time) sends its next prompt when its answer ends, so its
cycle is ``TTFT + decode`` and the run's request rate is ``clients / cycle`` (the
response-time law). Where the same run also publishes its output tokens/s ``X``, the cycle
is measured: ``clients × output tokens / X`` (the clients it kept in flight). Where TTFT is
a small share of it, throughput says almost nothing about TTFT (the decode sets the rate):
what sets TTFT there is how the harness's requests line up behind each other's prefills,
which the published rows rarely describe. This module pairs each closed-loop TTFT row with
its run's throughput row and reports the error by that share, so the report can say which
TTFT misses are of that kind.
"""

from __future__ import annotations

import numpy as np

from .cases import COLUMNS, Case

# the run a row belongs to: every column that describes the measurement, up to its metric
_RUN = tuple(COLUMNS[: COLUMNS.index("metric")])
BINS = (0.0, 0.03, 0.1, 0.3, 1.0)  # TTFT's share of a client's cycle
DECODE_SETS = 0.1  # below this share, decode is nine tenths of the cycle or more


def _run(c: Case) -> tuple:
    return tuple(str(c.row.get(k, "")) for k in _RUN)


def cycle_shares(cases: list[Case]) -> dict[int, tuple[float, int]]:
    """For each closed-loop TTFT row (by its index in ``cases``) whose run also publishes
    ``output_tok_s_total``: (measured TTFT / measured client cycle, index of that row)."""
    thr = {
        _run(c): i
        for i, c in enumerate(cases)
        if c.kind == "closed" and c.metric == "output_tok_s_total"
    }
    out = {}
    for i, c in enumerate(cases):
        j = thr.get(_run(c))
        if c.kind != "closed" or c.metric != "ttft_ms" or j is None:
            continue
        clients = c.clients * c.replicas  # the load it kept in flight (below a cap: printed)
        cycle = clients * c.osl / cases[j].measured  # seconds per request per client
        out[i] = (c.measured * 1e-3 / cycle, j)
    return out


def share_table(cases: list[Case], err: np.ndarray, shares: dict | None = None) -> list[list]:
    """Rows of (share of cycle, TTFT rows, TTFT median abs. error, the same runs' throughput
    median abs. error), from the errors ``err`` (percent, index for index with ``cases``);
    ``shares``: :func:`cycle_shares` of ``cases``, where the caller has them."""
    shares = cycle_shares(cases) if shares is None else shares
    rows = []
    for lo, hi in zip(BINS[:-1], BINS[1:], strict=True):
        pick = [(i, j) for i, (s, j) in shares.items() if lo <= s < hi]
        if not pick:
            continue
        t = np.abs([err[i] for i, _ in pick])
        x = np.abs([err[j] for _, j in pick])
        rows.append(
            [
                f"{lo:.0%}-{hi:.0%}",
                len(pick),
                f"{np.nanmedian(t):.1f}%",
                f"{np.nanmedian(x):.1f}%",
            ]
        )
    return rows


def share_note(share: float | None, arrivals: str = "waves") -> str:
    """The worst-rows table's reading of a row with that share ('' for none, or one at or
    above :data:`DECODE_SETS`), scored with ``arrivals`` (Case.arrivals)."""
    if share is None or share >= DECODE_SETS:
        return ""
    return (
        f"TTFT is {share:.1%} of a client's measured cycle: the run's rate is set by decode, "
        f"its TTFT by how the harness's prompts queue ({arrivals} assumed)"
    )
