"""Tables for ``planner estimate``: the language-model estimate with its pictures, a family
estimate's metrics, and what to say when a configuration does not fit."""

from __future__ import annotations

from tabulate import tabulate

from estimator import FamilyEstimate, ServingEstimate

from .bands import band_cell
from .pictures import pictures


def estimate_text(e: ServingEstimate | FamilyEstimate) -> str:
    if isinstance(e, FamilyEstimate):
        return _family_table(e)
    out = _llm_table(e, e.labels["model"], e.labels["gpu"])
    lo = e.under_load
    if lo:
        b = lo.get("bands") or {}
        n = e.workload["batch"]
        out += (
            f"\nunder load ({n} user{'' if n == 1 else 's'} in a closed loop, think "
            f"{lo['think_time_s']:g} s): TTFT {lo['ttft_s']:.3g} s mean, "
            f"{lo['ttft_p90_s']:.3g} s p90{_band(b.get('ttft_s'), 's')}; "
            f"{lo['per_user_tokens_per_s']:.1f} tok/s per user"
            f"{_band(b.get('per_user_tokens_per_s'), 'tok/s')}; "
            f"{lo['output_tokens_per_s']:.0f} tok/s per replica"
        )
    return out


def _band(band: dict | None, unit: str) -> str:
    """' (p10-p90 a-b unit (median c))' of a band, '' without one."""
    if not band:
        return ""
    return f" (p10-p90 {band_cell(band, lambda x: f'{x:.3g}', unit=unit)})"


def _fits(e: ServingEstimate) -> str:
    if e.fits:
        return "yes"
    if e.refused_by:
        return "NO (an engine limit: see below)"
    return f"NO (short {e.shortfall_gb:.1f} GB per GPU)"


def does_not_fit(e: ServingEstimate | FamilyEstimate) -> str:
    m = e.memory_gb
    if isinstance(e, FamilyEstimate):
        return f"does not fit: needs {m.total:.1f} GB per GPU, the engine allows {m.usable:.1f} GB"
    if e.refused_by:
        msg = f"does not run: {e.refused_by}"
    else:
        msg = (
            f"does not fit: needs {m.total:.1f} GB per GPU, the engine allows {m.usable:.1f} "
            f"GB of {m.capacity:.1f} GB: short by {e.shortfall_gb:.1f} GB per GPU"
        )
    if e.advice:
        msg += "\nnearest that fits: " + "; ".join(e.advice)
    return msg


def _family_table(e: FamilyEstimate) -> str:
    m, p = e.memory_gb, e.parallel
    rows = [
        ["fits", "yes" if e.fits else "NO"],
        ["largest batch that fits", e.max_batch],
        ["bottleneck", e.bottleneck],
    ]
    rows += [[k, f"{v:.4g}" if isinstance(v, float) else v] for k, v in e.metrics.items()]
    for r in rows:
        r.append(band_cell(e.bands.get(r[0]), lambda x: f"{x:.4g}"))
    out = [
        f"{e.labels['model']} ({e.family}) on {p['tp'] * p['pp'] * p['replicas']} x "
        f"{e.labels['gpu']} (TP{p['tp']}), weights {e.weights_format}, math in "
        f"{e.compute_precision}",
        tabulate(rows, headers=["", "estimate", "p10-p90 (median)"], tablefmt="simple"),
        f"memory per GPU: weights {m.weights:.2f} GB, KV {m.kv_cache:.2f} GB, "
        f"activations {m.activations:.2f} GB, overhead {m.overhead:.2f} GB, "
        f"total {m.total:.2f} of {m.capacity:.0f} GB",
    ]
    if e.bands:
        out.append(f"p10-p90: {e.bands['basis']}")
    out += [f"note: {n}" for n in e.notes]
    return "\n".join(out)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _num(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _llm_table(e: ServingEstimate, model_label: str, gpu_label: str) -> str:
    p = e.parallel
    wl = e.workload
    attn = e.attention_precision
    head = (
        f"{model_label} on {p['tp'] * p['pp'] * p['replicas']} x {gpu_label} "
        f"(TP{p['tp']} PP{p['pp']} EP{p['ep']}{' attn-DP' if p['attention_dp'] else ''}"
        f"{', ' + str(p['replicas']) + ' replicas' if p['replicas'] > 1 else ''}), "
        f"weights {e.weights_format}, KV {e.kv_format}, math in {e.compute_precision}, "
        f"{'' if attn == 'bf16' else f'attention in {attn}, '}"
        f"engine {e.engine}"
    )
    work = (
        f"batch {wl['batch']} per replica, {wl['input_tokens']} in / {wl['output_tokens']} out "
        "tokens"
    )
    rows = [
        ["fits", _fits(e)],
        ["largest batch that fits", e.max_batch],
        [
            "prefill (idle replica)"
            if wl["batch"] == 1
            else f"prefill of all {wl['batch']} prompts at once (idle replica)",
            _ms(e.prefill_s),
        ],
        [
            f"serving stack's time to a first token ({e.engine})",
            # fitted only where published one-client TTFTs through that server measure it
            _ms(e.serving_stack_s) if e.serving_stack_s else "0 (none fitted)",
        ],
        [
            "TTFT" if wl["batch"] == 1 else "TTFT (all arrive together; see 'under load')",
            _ms(e.ttft_s),
        ],
        ["time per output token", f"{e.tpot_s * 1e3:.2f} ms"],
        ["per-user speed", f"{e.per_user_tokens_per_s:.1f} tok/s"],
        ["replica decode throughput", f"{e.decode_tokens_per_s:.0f} tok/s"],
        ["replica output throughput (with prefill)", f"{e.output_tokens_per_s:.0f} tok/s"],
    ]
    if p["replicas"] > 1:
        rows.append(["all replicas output throughput", f"{e.total_output_tokens_per_s:.0f} tok/s"])
    rows += [
        ["end-to-end latency", f"{e.e2e_latency_s:.2f} s"],
        ["bottleneck (decode)", e.bottleneck],
        ["bottleneck (prefill)", e.prefill_bottleneck],
    ]
    d = e.decode_times_s
    step = (
        f"decode step: memory {d['memory'] * 1e3:.2f} ms, compute {d['compute'] * 1e3:.2f} ms, "
        f"interconnect {d['comm'] * 1e3:.2f} ms, fixed overheads {d['overhead'] * 1e3:.2f} ms"
    )
    if e.kv_cache_tokens is not None:
        rows.insert(2, ["KV cache the engine reserves", f"{e.kv_cache_tokens:,} tokens"])
    band = {
        "TTFT": ("ttft_s", 1e3, "ms"),
        "time per output token": ("tpot_s", 1e3, "ms"),
        "per-user speed": ("per_user_tokens_per_s", 1, "tok/s"),
        "replica output throughput (with prefill)": ("output_tokens_per_s", 1, "tok/s"),
    }
    for r in rows:
        key = next((k for k in band if str(r[0]).startswith(k)), None)
        b = e.bands.get(band[key][0]) if key else None
        scale, unit = (band[key][1], band[key][2]) if key else (1, "")
        r.append(band_cell(b, _num, scale, unit))
    table = tabulate(rows, headers=["", "estimate", "p10-p90 (median)"], tablefmt="simple")
    out = [head, work, "", table, "", *pictures(e), step]
    if e.bands:
        out.append(f"p10-p90: {e.bands['basis']}")
    if e.notes:
        out += ["", *("note: " + n for n in e.notes)]
    return "\n".join(out)
