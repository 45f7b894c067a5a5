"""Why no plan exists: the binding target with the nearest miss, or, when every workload has
candidates, the fleet limit that binds (found by lifting one limit at a time)."""

from __future__ import annotations

import math
from dataclasses import replace

from .assembly import to_plan
from .candidates import Candidate
from .capacity import Capacity
from .kinds import KINDS
from .options import SearchSpace


def _diagnose_family(space: SearchSpace, w, seen: list[tuple[Candidate, Capacity]]) -> str:
    """Why no candidate serves a non-LLM workload: every split refused, memory, or the
    latency / real-time limit, with the nearest miss."""
    n = space.sc.fleet.max_gpus_per_replica
    runnable = [(c, cap) for c, cap in seen if not cap.binding.startswith("split")]
    if not runnable:
        reason = seen[0][1].binding[7:] if seen else "no allowed GPU"
        return f"no candidate can run {w.model}: {reason}"
    fits = [(c, cap) for c, cap in runnable if cap.binding != "memory"]
    if not fits:
        return (
            f"{w.model} does not fit in memory on any allowed GPU with up to {n} GPUs "
            "per replica (fleet.max_gpus_per_replica); allow more GPUs per replica or "
            "larger GPUs"
        )
    kind = KINDS[w.kind]
    limit = (kind.limit_key, getattr(w, kind.limit_key)) if kind.limit_key else None
    timed = [(c, cap) for c, cap in fits if math.isfinite(cap.best_ttft_s)]
    if limit and timed:
        c, cap = min(timed, key=lambda t: t[1].best_ttft_s)
        return (
            f"no candidate meets {limit[0]} {limit[1]:g}: the fastest, {c.label()}, "
            f"takes {cap.best_ttft_s:.3g} s for one item"
        )
    if kind.too_slow and timed:
        c, cap = min(timed, key=lambda t: t[1].best_ttft_s)
        return kind.too_slow.format(w=w, label=c.label(), ms=cap.best_ttft_s * 1e3)
    if limit:
        return f"no candidate meets {limit[0]} {limit[1]:g} at any batch size"
    return f"no candidate meets the {fits[0][1].binding} limit"


def diagnose(space: SearchSpace) -> str:
    """Why no plan exists: the binding target and the nearest miss, or the limit."""
    for w in space.sc.workloads:
        if any(o.opt.workload == w.name for o in space.options):
            continue
        seen = space.best_seen.get(w.name, [])
        if not KINDS[w.kind].language_model:
            return f"workload '{w.name}': " + _diagnose_family(space, w, seen)
        fits = [(c, cap) for c, cap in seen if cap.max_batch_memory >= 1]
        if not fits:
            n = space.sc.fleet.max_gpus_per_replica
            return (
                f"workload '{w.name}': {space.models[w.name].name} does not fit in memory on "
                f"any allowed GPU with up to {n} GPUs per replica "
                "(fleet.max_gpus_per_replica); allow more GPUs per replica, larger GPUs, "
                "or smaller weight/KV formats"
            )
        msgs = []
        if w.tokens_per_s:
            c, cap = max(fits, key=lambda t: t[1].best_tokens_per_s)
            if cap.best_tokens_per_s < w.tokens_per_s:
                msgs.append(
                    f"no plan meets {w.tokens_per_s:g} tokens/s per user: the fastest "
                    f"candidate, {c.label()}, reaches {cap.best_tokens_per_s:.1f} tokens/s "
                    f"({100 * (1 - cap.best_tokens_per_s / w.tokens_per_s):.0f}% short)"
                )
        if w.ttft_s:
            c, cap = min(fits, key=lambda t: t[1].best_ttft_s)
            if cap.best_ttft_s > w.ttft_s:
                msgs.append(
                    f"no plan meets TTFT {w.ttft_s:g} s (p{w.ttft_percentile:g}): the "
                    f"fastest candidate, {c.label()}, reaches {cap.best_ttft_s:.3g} s"
                )
        if not msgs:
            msgs.append("no single candidate meets TTFT and tokens/s together")
        return f"workload '{w.name}': " + "; ".join(msgs)
    # every workload has options: a fleet limit binds. Lift one limit at a time to name it.
    lim = space.limits()
    b = space.sc.budget
    trials = [
        ("budget", replace(lim, max_usd=None)),
        ("power", replace(lim, max_power_kw=None)),
        ("inventory", replace(lim, available=None)),
        ("single_type", replace(lim, single_type=False, max_types=None)),
        ("vendors", replace(lim, max_vendors=None)),
        ("racks", replace(lim, max_rack_units=None, max_rack_power_kw=None)),
    ]
    parts = []
    for name, relaxed_lim in trials:
        sol = space.run(space.options, relaxed_lim)
        if not sol.found:
            continue
        plan = to_plan(space, space.options, sol)
        if name == "budget":
            parts.append(
                f"budget ${b.max_usd:,.0f} is short by ${plan.cost_usd - b.max_usd:,.0f}: "
                f"the cheapest plan within the other limits ({plan.label()}) costs "
                f"${plan.cost_usd:,.0f}"
            )
        elif name == "power":
            parts.append(
                f"power cap {b.max_power_kw:g} kW is short by "
                f"{plan.power_kw - b.max_power_kw:.1f} kW: the cheapest plan within the "
                f"other limits ({plan.label()}) draws {plan.power_kw:.1f} kW"
            )
        elif name == "inventory":
            short = [
                f"{n} {g} needed, {space.available[g]} available"
                for g, n in plan.gpus_by_type.items()
                if g in space.available and n > space.available[g]
            ]
            parts.append(
                "GPU availability binds: "
                + "; ".join(short)
                + f" (cheapest plan without it: {plan.label()}, ${plan.cost_usd:,.0f})"
            )
        elif name == "vendors":
            parts.append(
                f"fleet.max_vendors {space.sc.fleet.max_vendors} binds: the cheapest plan "
                f"without it ({plan.label()}, ${plan.cost_usd:,.0f}) mixes more vendors"
            )
        elif name == "racks":
            kw = f" of {b.max_kw_per_rack:g} kW" if b.max_kw_per_rack else ""
            parts.append(
                f"{b.max_racks} rack(s){kw} are too few: the cheapest plan within the other "
                f"limits ({plan.order_label()}) takes {plan.rack_units}U and "
                f"{plan.power_kw:.1f} kW"
            )
        else:
            parts.append(
                f"no fleet of so few GPU types (single_type / max_types) serves every workload "
                "within the limits; a mixed "
                f"fleet would: {plan.label()}, ${plan.cost_usd:,.0f}"
            )
    if parts:
        return "; or ".join(parts)
    # every limit lifted at once; the costs that are not limits (per-type cost, spares) stay
    free = replace(
        lim,
        max_usd=None,
        max_power_kw=None,
        available=None,
        single_type=False,
        max_types=None,
        max_vendors=None,
        max_rack_units=None,
        max_rack_power_kw=None,
    )
    sol = space.run(space.options, free)
    if not sol.found:
        return "no combination of candidates covers the demand"
    plan = to_plan(space, space.options, sol)
    return (
        "the fleet limits together (budget, power, inventory, GPU types, vendors, racks) "
        f"exclude every plan; with none of them the best is {plan.label()} at "
        f"${plan.cost_usd:,.0f}"
    )
