"""Terminal views of the sizing calculator's three checks: where throughput saturates
(``planner saturation``), whether another GPU helps (``planner scaling``) and the smallest
configuration that holds the model (``planner fit``)."""

from __future__ import annotations

from tabulate import tabulate

from estimator import Parallel

from .chart import text_chart


def _num(x, fmt: str = ".3g") -> str:
    return "" if x is None else format(x, fmt)


def _shown(batches: list[int], keep: set[int]) -> list[int]:
    """Rows worth a line: powers of two, the last, and the marked batches."""
    out = []
    for i, b in enumerate(batches):
        if b & (b - 1) == 0 or b in keep or i == len(batches) - 1:
            out.append(i)
    return out


def saturation_text(r) -> str:
    p = r.parallel
    head = (
        f"{r.labels['model']} on {p['tp'] * p['pp']} x {r.labels['gpu']} "
        f"({Parallel(**p).label()}), {r.input_tokens} in / {r.output_tokens} out, engine "
        f"{r.engine}: decode speed against batch, up to the memory limit"
    )
    lines = [head]
    target = r.tokens_per_s_target
    for s in r.series:
        keep = {x for x in (s.saturation_batch, s.crossing_batch, s.engine_cap) if x}
        rows = []
        for i in _shown(s.batch, keep):
            b = s.batch[i]
            mark = []
            if b == s.saturation_batch:
                mark.append("saturation")
            if b == s.crossing_batch:
                mark.append("crossing")
            if b == s.engine_cap:
                mark.append("engine cap (--max-num-seqs)")
            if i == len(s.batch) - 1:
                mark.append("memory limit")
            rows.append(
                [
                    b,
                    f"{s.tokens_per_s[i]:.0f}",
                    f"{s.per_user_tokens_per_s[i]:.1f}",
                    f"{s.output_tokens_per_s[i]:.0f}",
                    f"{s.tpot_s[i] * 1e3:.2f}",
                    s.bottleneck[i],
                    ", ".join(mark),
                ]
            )
        lines += [
            "",
            f"{s.label()}: memory limit {s.memory_limit} sequences (engine cap {s.engine_cap})",
        ]
        if not s.batch:
            lines.append("  does not fit one sequence")
            continue
        lines.append(
            tabulate(
                rows,
                headers=[
                    "batch",
                    "tok/s total",
                    "tok/s/user",
                    "with prefill",
                    "TPOT ms",
                    "bound by",
                    "",
                ],
            )
        )
        if s.saturation_batch:
            lines.append(
                f"saturation batch: {s.saturation_batch} ({s.saturation_tokens_per_s:.0f} tok/s;"
                f" past it another sequence adds < {r.threshold:.0%} of a lone one's speed)"
            )
        else:
            lines.append("saturation batch: not reached before the memory limit")
        if target is not None:
            lines.append(
                f"crossing with {target:g} tok/s per user: batch {s.crossing_batch} "
                f"({s.crossing_tokens_per_s:.0f} tok/s total)"
                if s.crossing_batch
                else f"crossing with {target:g} tok/s per user: not even one sequence meets it"
            )
    lines += [""] + text_chart(
        [(f"total, {s.label()}", s.batch, s.tokens_per_s) for s in r.series if s.batch],
        x_label="batch",
        y_label="decode tok/s (replica)",
    )
    lines += [""] + text_chart(
        [(f"per user, {s.label()}", s.batch, s.per_user_tokens_per_s) for s in r.series if s.batch],
        x_label="batch",
        y_label="tok/s per user",
    )
    return "\n".join(lines)


def scaling_text(r) -> str:
    head = (
        f"{r.labels['model']}, weights {r.weights}, KV {r.kv}, engine {r.engine}: batch "
        f"{r.batch}, {r.input_tokens} in / {r.output_tokens} out, one replica over more GPUs"
    )
    rows = [
        [
            p.gpu,
            p.mode.upper(),
            p.gpus,
            p.split,
            "yes" if p.fits else "NO",
            f"{p.ttft_s * 1e3:.1f}",
            f"{p.tpot_s * 1e3:.2f}",
            f"{p.tokens_per_s:.0f}",
            f"{p.tokens_per_s_per_gpu:.0f}",
            f"{p.collective_share_decode:.0%}",
            _num(p.efficiency, ".0%") if p.efficiency is not None else "",
            p.interconnect,
        ]
        for p in r.points
    ]
    lines = [
        head,
        tabulate(
            rows,
            headers=[
                "gpu",
                "mode",
                "GPUs",
                "split",
                "fits",
                "TTFT ms",
                "TPOT ms",
                "tok/s",
                "tok/s/GPU",
                "collectives",
                "efficiency",
                "link",
            ],
        ),
        "",
        "collectives: share of a decode step spent in all-reduces and stage sends; "
        "efficiency: per-GPU throughput against the fewest GPUs that fit",
    ]
    most = max(p.gpus for p in r.points)
    for key, n in r.scaling_limit.items():
        gpu, mode = key.split("/")
        if n is None:
            verdict = "fits nowhere up to the GPUs asked"
        elif n == most:
            verdict = f"worth it up to at least {n} GPU(s), the most tried"
        else:
            verdict = (
                f"worth it up to {n} GPU(s); past that each added GPU brings less than "
                f"{r.min_gain:.0%} of a GPU's throughput"
            )
        lines.append(f"{gpu} {mode.upper()}: {verdict}")
    for s in r.skipped:
        lines.append(f"skipped {s['gpu']} {s['mode'].upper()}{s['gpus']}: {s['why']}")
    tp = [p for p in r.points if p.mode == "tp" and p.fits]
    if tp:
        lines += [""] + text_chart(
            [
                (g, [p.gpus for p in tp if p.gpu == g], [p.tokens_per_s for p in tp if p.gpu == g])
                for g in dict.fromkeys(p.gpu for p in tp)
            ],
            x_label="GPUs per replica (TP)",
            y_label="replica tok/s",
            log_x=True,
        )
    return "\n".join(lines)


def fit_text(r) -> str:
    head = (
        f"{r.labels['model']}, weights {r.weights}, KV {r.kv}, engine {r.engine}: the fewest "
        f"GPUs that hold {r.users} sequence(s) of {r.input_tokens} + {r.output_tokens} tokens, "
        "cheapest first"
    )
    rows = [
        [
            f.gpu,
            f.gpus,
            f.split,
            f.max_batch,
            _num(f.memory_gb_total, ".1f"),
            _num(f.per_user_tokens_per_s, ".1f"),
            _num(f.ttft_s and f.ttft_s * 1e3, ".0f"),
            _num(f.usd_per_hour, ".2f"),
            _num(f.purchase_usd, ",.0f"),
        ]
        for f in r.by_gpu
        if f.fits
    ]
    headers = [
        "gpu",
        "GPUs",
        "split",
        "max batch",
        "GB used",
        "tok/s/user",
        "TTFT ms",
        "$/h",
        "price $",
    ]
    return _fit_lines(
        r,
        head,
        rows,
        headers,
        lambda f: f"~{f.per_user_tokens_per_s:.0f} tok/s per user at {r.users} user(s)",
    )


def _fit_lines(r, head: str, rows: list, headers: list, speed) -> str:
    """A fit's table, its minimum GPU (``speed``: what it does there) and the GPU types that
    hold nothing, with why."""
    lines = [head, tabulate(rows, headers=headers) if rows else "(none fits)"]
    if rows:
        f = next(f for f in r.by_gpu if f.fits)
        lines.append(
            f"\nminimum GPU: {f.gpus}x {f.gpu} ({f.split}), max batch {f.max_batch}, {speed(f)}"
        )
    misses = [f for f in r.by_gpu if not f.fits]
    if misses:
        lines += ["", f"no fit up to {r.max_gpus} GPUs per replica:"]
        lines += [f"  {f.gpu}: {f.why_not}" for f in misses]
    return "\n".join(lines)


def family_fit_text(r) -> str:
    """``planner fit`` on a model of the families served in batches."""
    rate = r.rate_key.replace("_", " ")
    head = (
        f"{r.labels['model']} ({r.family}), weights {r.weights}: the fewest GPUs of a TP "
        "replica that hold it at batch 1, cheapest first"
    )
    rows = [
        [
            f.gpu,
            f.gpus,
            f.max_batch,
            _num(f.memory_gb_per_gpu, ".1f"),
            _num(f.s_per_batch, ".3g"),
            _num(f.rate, ".4g"),
            _num(f.usd_per_hour, ".2f"),
            _num(f.purchase_usd, ",.0f"),
        ]
        for f in r.by_gpu
        if f.fits
    ]
    headers = [
        "gpu",
        "GPUs",
        "max batch",
        "GB/GPU",
        "s at batch 1",
        f"{rate} at max",
        "$/h",
        "price $",
    ]
    return _fit_lines(r, head, rows, headers, lambda f: f"{f.rate:.4g} {rate} there")
