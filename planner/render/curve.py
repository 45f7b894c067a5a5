"""Table for ``planner curve``: the load curve, the operating point, the knee and the
memory limit."""

from __future__ import annotations

from tabulate import tabulate

from estimator import BatchCurve, CurveResult, Parallel

from .bands import band_cell


def curve_text(c: CurveResult) -> str:
    p, pct = c.parallel, c.targets["percentile"]
    head = (
        f"{c.labels['model']} on {p['tp'] * p['pp'] * p['replicas']} x {c.labels['gpu']} "
        f"({Parallel(**p).label()}), weights {c.weights}, KV {c.kv}, {c.input_tokens} in / "
        f"{c.output_tokens} out, think {c.options['think_time_s']:g} s; "
        f"{c.kv_slots_per_replica} KV slots per replica"
    )
    # each point's p10-p90 beside its value (none where the calibration has no residuals)
    banded = any(q.get("bands") for q in c.points)
    rows = [
        [
            q["users"],
            f"{q['ttft_s']:.3g}",
            f"{q[f'ttft_p{pct:g}_s']:.3g}",
            *([_span(q["bands"].get("ttft_s"), "{:.3g}")] if banded else []),
            f"{q['per_user_tokens_per_s']:.1f}",
            *([_span(q["bands"].get("per_user_tokens_per_s"), "{:.1f}")] if banded else []),
            f"{q['output_tokens_per_s']:.0f}",
            f"{q['memory_gb']:.1f}",
            "yes" if q["fits"] else "NO",
        ]
        for q in c.points
    ]
    table = tabulate(
        rows,
        headers=[
            "users",
            "TTFT mean s",
            f"TTFT p{pct:g} s",
            *(["p10-p90"] if banded else []),
            "tok/s/user",
            *(["p10-p90"] if banded else []),
            "tok/s total",
            "GB/GPU",
            "fits",
        ],
    )
    o = c.operating_point
    targets = c.targets["ttft_s"] or c.targets["tokens_per_s"]
    why = "targets" if targets else "TTFT within 3x and speed within 2x of light load"
    return "\n".join(
        [
            head,
            table,
            f"\noperating point: {o['users']} users: TTFT {o['ttft_s']:.3g} s mean, "
            f"{o['ttft_pct_s']:.3g} s p{pct:g}, {o['per_user_tokens_per_s']:.1f} tok/s "
            f"per user, {o['output_tokens_per_s']:.0f} tok/s total",
            _band_line(o.get("bands") or {}, pct),
            f"knee: {c.knee_users} users (most before breaking the {why})",
            f"most users that fit in memory: {c.max_users_fit}",
            *(f"note: {n}" for n in c.notes),
        ]
    )


def _span(band: dict | None, fmt: str) -> str:
    """A point's band in a table cell: 'p10-p90' of the value beside it."""
    return f"{fmt.format(band['p10'])}-{fmt.format(band['p90'])}" if band else ""


def _band_line(b: dict, pct: float) -> str:
    """The operating point's p10-p90 band from the cross-validated residuals."""
    if not b:
        return "  (no error band: the calibration has no residuals for this GPU)"
    t, u = b.get("ttft_s"), b.get("per_user_tokens_per_s")
    parts = []
    if t:
        parts.append(f"TTFT p{pct:g} {band_cell(t, lambda x: f'{x:.3g}', unit='s')}")
    if u:
        parts.append(band_cell(u, lambda x: f"{x:.1f}", unit="tok/s per user"))
    return "  p10-p90 (cross-validated): " + ", ".join(parts)


def batch_curve_text(c: BatchCurve) -> str:
    """A family model's time and throughput against its batch."""
    p, rate, lat = c.parallel, c.rate_key, c.latency_key
    head = (
        f"{c.labels['model']} ({c.family}) on {p['tp'] * p['pp'] * p['replicas']} x "
        f"{c.labels['gpu']} (TP{p['tp']}), weights {c.weights_format}; the largest batch that "
        f"fits: {c.max_batch}"
    )
    rows = []
    for q in c.points:
        m, b = q["metrics"], q["bands"].get(rate)
        rows.append(
            [
                q["batch"],
                f"{m[lat]:.4g}",
                f"{m[rate]:.4g}",
                f"{b['p10']:.4g}-{b['p90']:.4g}" if b else "",
                f"{q['memory_gb']:.1f}",
                "yes" if q["fits"] else "NO",
            ]
        )
    table = tabulate(
        rows,
        headers=["batch", f"{lat}", rate, f"{rate} p10-p90", "GB/GPU", "fits"],
        tablefmt="simple",
    )
    first, last = c.points[0]["metrics"][rate], c.points[-1]["metrics"][rate]
    gain = f"{last / first:.2f}x" if first else "-"
    out = [
        head,
        table,
        f"batching from 1 to {c.points[-1]['batch']} gives {gain} the {rate.replace('_', ' ')}",
    ]
    if c.points and c.points[0]["bands"]:
        out.append(f"p10-p90: {c.points[0]['bands']['basis']}")
    return "\n".join(out)
