"""Plan assembly: a solver solution -> the plan a buyer reads (replicas per workload with
their speed at the load they will carry, GPUs by type, cost, power, $/M tokens)."""

from __future__ import annotations

import math

from estimator.bands import bands_for, family_bands

from .capacity import operating_point, operating_points, targets
from .costs import HOURS_PER_YEAR
from .kinds import KINDS
from .optimize import Solution
from .options import SearchSpace, _Option
from .procurement import instances_for
from .results import Assignment, Plan
from .workloads import LLMWorkload

SECONDS_PER_YEAR = 365 * 86400
TARGET_SLACK = 1e-9  # relative: the load model's own rounding, nothing more


class PlanCheckError(RuntimeError):
    """A plan about to be reported misses its own targets: a bug in the capacity search or
    the load model, never to be printed as a recommendation."""


def check_targets(w: LLMWorkload, op, where: str, ev) -> None:
    """Re-evaluate an assignment at the load it will carry: it must meet every target (at
    the scenario's confidence, when it sets one)."""
    misses = []
    ttft, tps = targets(w, ev)
    if ttft and op.ttft_s > ttft * (1 + TARGET_SLACK):
        misses.append(f"TTFT p{w.ttft_percentile:g} {op.ttft_s:.4g} s > target {ttft:.4g} s")
    if tps and op.tokens_per_s < tps * (1 - TARGET_SLACK):
        misses.append(f"{op.tokens_per_s:.4g} tokens/s < target {tps:.4g}")
    if misses:
        raise PlanCheckError(f"workload '{w.name}' on {where}: " + "; ".join(misses))


def to_plan(space: SearchSpace, options: list[_Option], sol: Solution) -> Plan:
    """The plan a solution describes: assignments with their operating points, GPUs by
    type, cost, power and cost per million output tokens."""
    by_w = _by_workload(options, sol)
    assignments = []
    for w in space.sc.workloads:
        rows = by_w.get(w.name, [])
        served = sum(o.cap.units * n for o, n in rows)
        need = space.demands[w.name].required
        if not KINDS[w.kind].language_model:
            assignments += _family_assignments(space, w, rows, served, need)
            continue
        for o, n in rows:
            share, load = _load(o, n, served, need)
            op = operating_point(o.ev, w, min(load, o.cap.units), o.split)
            check_targets(w, op, f"{o.cand.label()} at {min(load, o.cap.units)} sessions", o.ev)
            p = o.cand.parallel
            cycle = w.think_time_s + op.ttft_mean_s + (w.output_tokens - 1) / op.tokens_per_s
            active_sessions = w.users * w.hours_per_person / 24.0 * share
            tokens_year = active_sessions * w.output_tokens / cycle * SECONDS_PER_YEAR
            assignments.append(
                Assignment(
                    workload=w.name,
                    model=space.models[w.name].name,
                    weights=w.weights,
                    gpu=o.cand.gpu.name,
                    vendor=o.cand.gpu.vendor,
                    gpus_per_replica=o.opt.gpus,
                    tp=p.tp,
                    pp=p.pp,
                    ep=p.ep,
                    attention_dp=p.attention_dp,
                    replicas=n,
                    seats_needed=need,
                    seats_served=o.cap.units * n,
                    seats_per_replica=o.cap.units,
                    load_per_replica=load,
                    ttft_s=op.ttft_s,
                    ttft_target_s=w.ttft_s,
                    ttft_percentile=w.ttft_percentile,
                    tokens_per_s=op.tokens_per_s,
                    tokens_per_s_target=w.tokens_per_s,
                    ttft_headroom_pct=(100 * (w.ttft_s / op.ttft_s - 1)) if w.ttft_s else None,
                    tokens_per_s_headroom_pct=(100 * (op.tokens_per_s / w.tokens_per_s - 1))
                    if w.tokens_per_s
                    else None,
                    seats_headroom_pct=100 * (served / need - 1),
                    prefill_replicas=o.split[0] if o.split else None,
                    decode_replicas=o.split[1] if o.split else None,
                    binding=o.cap.binding,
                    bottleneck=op.bottleneck,
                    output_tokens_per_year=tokens_year,
                    bands=_bands(o.ev, op),
                )
            )
    years = space.sc.cost.years
    units = [(space.unit_list[j], n) for j, n in sorted(sol.units.items())]
    spares = [(space.unit_list[j], n) for j, n in sorted(sol.spares.items())]
    by_type: dict[str, int] = {}
    for u, n in units:
        by_type[u.gpu] = by_type.get(u.gpu, 0) + u.gpus * n
    by_type = dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0])))
    breakdown = _breakdown(units, spares, space.per_type_usd_per_year * len(by_type))
    per_year = sum(breakdown.values())
    tokens = sum(a.output_tokens_per_year for a in assignments)
    bought = units + spares
    return Plan(
        assignments,
        sum(by_type.values()),
        by_type,
        cost_usd=per_year * years,
        cost_per_year_usd=per_year,
        capex_usd=sum(u.capex * n for u, n in bought),
        power_kw=sum(u.power_kw * n for u, n in bought),
        usd_per_million_tokens=per_year / (tokens / 1e6) if tokens else None,
        optimal=sol.optimal,
        units=[_unit_row(u, n) for u, n in units],
        spares=[_unit_row(u, n) for u, n in spares],
        cost_breakdown_per_year=breakdown,
        cost_breakdown_usd={k: v * years for k, v in breakdown.items()},
        rack_units=sum(u.rack_units * n for u, n in bought),
        spare_gpus=sum(u.gpus * n for u, n in spares),
        break_even_months=_break_even(space, bought, breakdown),
    )


def _break_even(space: SearchSpace, bought, breakdown: dict[str, float]) -> float | None:
    """Months after which buying this fleet beats renting the same GPUs on demand (the
    cheapest published instance per GPU of each type): the capital over the monthly saving
    of renting minus running costs. None for rental plans, or where no instance rents a
    type, or where renting is cheaper to run than owning."""
    if space.sc.cost.basis != "purchase":
        return None
    rent = 0.0
    for u, n in bought:
        found = instances_for(u.gpu, None, "on-demand", space.presets)
        if not found:
            return None
        per_gpu_hour = min(i.usd_per_hour / i.gpus for i in found)
        rent += per_gpu_hour * u.gpus * n * HOURS_PER_YEAR
    running = sum(breakdown.get(k, 0.0) for k in ("energy", "hosting", "operations"))
    capex = sum(u.capex * n for u, n in bought)
    saving = (rent - running) / 12
    return capex / saving if saving > 0 else None


def _unit_row(u, n: int) -> dict:
    """One line of what to order: a server model or a cloud instance shape, and how many."""
    row = {"kind": u.kind, "gpu": u.gpu, "count": n, "gpus_per_unit": u.gpus}
    if u.kind == "instance":
        row.update(cloud=u.cloud, name=u.name.split(":", 1)[1], usd_per_hour=u.usd_per_hour)
    else:
        row.update(name=u.name, label=u.label, rack_units=u.rack_units)
    if u.price_usd:
        row["usd_each"] = u.price_usd
    row["usd_per_year"] = u.per_year * n
    return row


def _breakdown(units, spares, operations: float) -> dict[str, float]:
    """USD per year by cost line, summing to the plan's cost per year: the units in service
    line by line, the spares as one line, and the per-GPU-type operations cost."""
    lines: dict[str, float] = {}
    for u, n in units:
        for k, v in u.parts.items():
            lines[k] = lines.get(k, 0.0) + v * n
    lines["spares"] = sum(u.per_year * n for u, n in spares)
    lines["operations"] = operations
    return lines


def _family_assignments(space: SearchSpace, w, rows, served: int, need: int) -> list[Assignment]:
    d = space.demands[w.name]
    out = []
    for o, n in rows:
        p = o.cand.parallel
        metrics = dict(o.family.metrics) if o.family else {}
        t, limit = metrics.get("s_per_batch"), KINDS[w.kind].pass_limit_s(w, metrics)
        timed = limit is not None and isinstance(t, int | float) and t > 0
        out.append(
            Assignment(
                workload=w.name,
                model=space.family_models[w.name].name,
                weights=w.weights,
                gpu=o.cand.gpu.name,
                vendor=o.cand.gpu.vendor,
                gpus_per_replica=o.opt.gpus,
                tp=p.tp,
                pp=p.pp,
                ep=p.ep,
                attention_dp=False,
                replicas=n,
                seats_needed=need / d.scale,
                seats_served=o.cap.units * n / d.scale,
                seats_per_replica=o.cap.units / d.scale,
                load_per_replica=math.ceil(need * (o.cap.units * n / served) / n) / d.scale,
                seats_headroom_pct=100 * (served / need - 1),
                binding=o.cap.binding,
                unit=d.unit,
                metrics=metrics,
                pass_s=float(t) if timed else None,
                pass_limit_s=float(limit) if timed else None,
                pass_headroom_pct=100 * (limit / t - 1) if timed else None,
                bands=family_bands(getattr(space.family_models[w.name], "family", ""), metrics),
            )
        )
    return out


def _load(o: _Option, n: int, served: float, need: float) -> tuple[float, int]:
    """(share of the workload, sessions per replica) of ``n`` replicas of ``o``: demand is
    spread in proportion to capacity."""
    share = o.cap.units * n / served
    return share, max(1, math.ceil(need * share / n))


def _by_workload(options: list[_Option], sol: Solution) -> dict[str, list[tuple[_Option, int]]]:
    """The solution's replicas, (option, count) per workload."""
    by_w: dict[str, list[tuple[_Option, int]]] = {}
    for i, n in sorted(sol.replicas.items()):
        by_w.setdefault(options[i].opt.workload, []).append((options[i], n))
    return by_w


def prefetch_points(space: SearchSpace, plans: list[tuple[list[_Option], Solution]]) -> None:
    """The operating points the plans of these solutions will read, computed together (one
    stacked load evaluation per workload) before the plans are assembled."""
    wanted: dict[str, list] = {}
    for options, sol in plans:
        by_w = _by_workload(options, sol)
        for w in space.sc.workloads:
            rows = by_w.get(w.name, [])
            if not KINDS[w.kind].language_model or not rows:
                continue
            served = sum(o.cap.units * n for o, n in rows)
            need = space.demands[w.name].required
            for o, n in rows:
                if o.split is None:
                    _, load = _load(o, n, served, need)
                    wanted.setdefault(w.name, []).append((o.ev, min(load, o.cap.units)))
    for w in space.sc.workloads:
        if w.name in wanted:
            operating_points(wanted[w.name], w)


def _bands(ev, op) -> dict:
    """The p10-p90 of a language-model row's TTFT, per-user speed and replica output
    tokens/s at its operating point (what estimate and curve carry: estimator.bands)."""
    b = bands_for(ev.gpu, op.ttft_s, 1.0 / op.tokens_per_s, op.output_tokens_per_s, ev.model)
    return (
        {
            "ttft_s": b.get("ttft_s"),
            "tokens_per_s": b.get("per_user_tokens_per_s"),
            "output_tokens_per_s": b.get("output_tokens_per_s"),
            "basis": b.get("basis"),
        }
        if b
        else {}
    )
