"""Tables for ``planner solve``, ``compare`` and ``sweep``: plans as finance reads them."""

from __future__ import annotations

from collections import Counter

from tabulate import tabulate

from ..results import Comparison, Plan, PlanResult, Sweep
from .bands import band_cell


def _money(x: float) -> str:
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(x) >= scale:
            return f"${x / scale:,.2f}{unit}"
    return f"${x:,.0f}"


def _years(y: float) -> str:
    return f"{y:g} year" + ("" if y == 1 else "s")


def per_mtok(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0f}%"


def _latency(a) -> str:
    """A language model's TTFT at its percentile, or the other families' time per batch
    against their limit (each with its headroom)."""
    if a.ttft_s is not None:
        head = f" ({_pct(a.ttft_headroom_pct)})" if a.ttft_target_s else ""
        return f"{a.ttft_s:.2f} s p{a.ttft_percentile:g}{head}"
    if a.pass_s is not None:
        return f"pass {a.pass_s:.3g} s ({_pct(a.pass_headroom_pct)})"
    return "-"


def _assign_rows(p: Plan) -> list[list]:
    rows = []
    for a in p.assignments:
        rows.append(
            [
                a.workload,
                f"{a.replicas} x {a.gpus_per_replica} {a.gpu}",
                f"{a.split()} {a.weights}",
                f"{a.seats_served:,.4g} / {a.seats_needed:,.4g} {a.unit}",
                _latency(a),
                "-"
                if a.tokens_per_s is None
                else f"{a.tokens_per_s:.1f}"
                + (f" ({_pct(a.tokens_per_s_headroom_pct)})" if a.tokens_per_s_target else ""),
                a.binding,
                a.bottleneck,
            ]
        )
    return rows


def _band_line(p: Plan) -> str | None:
    """Each row's p10-p90 (the estimator's cross-validated error, ``bands``): a language
    model's TTFT and per-user speed, another family's pass; None where no row has one."""
    rows = Counter(a.workload for a in p.assignments)
    parts = []
    for a in p.assignments:
        b = a.bands or {}
        if a.ttft_s is not None and b.get("ttft_s") and b.get("tokens_per_s"):
            t, v = b["ttft_s"], b["tokens_per_s"]
            what = (
                f"TTFT {band_cell(t, lambda x: f'{x:.2f}', unit='s')}, "
                f"{band_cell(v, lambda x: f'{x:.1f}', unit='tok/s/user')}"
            )
        elif a.pass_s is not None and b.get("s_per_batch"):
            what = f"pass {band_cell(b['s_per_batch'], lambda x: f'{x:.3g}', unit='s')}"
        else:
            continue
        where = (
            f" ({a.replicas}x{a.gpus_per_replica} {a.gpu} {a.split()})"
            if rows[a.workload] > 1
            else ""
        )
        parts.append(f"{a.workload}{where} {what}")
    if not parts:
        return None
    return "p10-p90 (the estimates' cross-validated error): " + "; ".join(parts)


def _assign_head(p: Plan) -> list[str]:
    """The plan's columns: the latency column names a pass only where a row has one."""
    passes = any(a.pass_s is not None for a in p.assignments)
    return [
        "workload",
        "replicas x GPUs",
        "split, weights",
        "served/needed",
        "TTFT or pass (headroom)" if passes else "TTFT (headroom)",
        "tok/s/user (headroom)",
        "limit",
        "bottleneck",
    ]


ORDER_HEAD = ["what", "count", "GPUs", "price", "per year"]


def _order_rows(p: Plan) -> list[list]:
    rows = []
    for tag, items in (("", p.units), ("spare: ", p.spares)):
        for u in items:
            what = u.get("label") or f"{u['cloud']} {u['name']}"
            if u.get("usd_each"):  # bought: the unit's price as quoted
                price = f"{_money(u['usd_each'])} each"
            else:
                price = f"${u['usd_per_hour']:,.2f}/h" if u.get("usd_per_hour") else "-"
            rows.append(
                [
                    tag + what,
                    u["count"],
                    f"{u['count'] * u['gpus_per_unit']}x {u['gpu']}",
                    price,
                    _money(u["usd_per_year"]),
                ]
            )
    return rows


def result_table(r: PlanResult, top: int, explain: bool = False) -> str:
    out = [
        f"Scenario: {r.scenario}  (cost basis: {r.basis}, horizon {_years(r.years)})",
        "",
        "Demand:",
    ]
    out += [
        f"  {n}: {d.arithmetic} -> {d.display_required:,.4g} {d.unit}" for n, d in r.demands.items()
    ]
    out.append("")
    if not r.feasible:
        out.append(f"NO FEASIBLE PLAN: {r.reason}")
        out += [f"note: {n}" for n in r.notes]
        return "\n".join(out) + "\n" + (excluded_text(r) if explain else "")
    p = r.plan
    verb = "buy" if r.basis == "purchase" else "rent"
    out.append(f"Recommendation: {verb} {p.title()}")
    out.append(tabulate(_assign_rows(p), headers=_assign_head(p)))
    if band := _band_line(p):
        out.append(band)
    out.append("")
    if p.units and p.units[0]["kind"] != "gpu":
        out.append("Order:")
        out.append(tabulate(_order_rows(p), headers=ORDER_HEAD))
        out.append("")
    racks = f", {p.rack_units}U of rack space" if p.rack_units else ""
    spares = f" (+{p.spare_gpus} spare)" if p.spare_gpus else ""
    out.append(
        f"Total: {p.total_gpus} GPUs in service{spares}, {p.power_kw:.1f} kW at maximum draw "
        f"x PUE{racks}"
    )
    cost = [
        f"{_money(p.cost_usd)} over {_years(r.years)}",
        f"{_money(p.cost_per_year_usd)} per year",
    ]
    if r.basis == "purchase":
        cost.append(f"capex {_money(p.capex_usd)}")
        if p.break_even_months is not None:
            cost.append(f"pays back against renting in {p.break_even_months:.1f} months")
    if p.usd_per_million_tokens is not None:
        cost.append(f"${p.usd_per_million_tokens:,.2f} per million output tokens")
    out.append(
        "Cost: " + ", ".join(cost) + ("" if p.optimal else " (solver time limit: best found)")
    )
    lines = [(k, v) for k, v in p.cost_breakdown_usd.items() if v]
    if lines:
        out.append(
            "  over the horizon: "
            + ", ".join(f"{k} {_money(v)} ({v / p.cost_usd:.0%})" for k, v in lines)
        )
    out.append("")
    if r.per_gpu_best:
        out.append("Best plan per GPU type:")
        rows = [
            [
                i + 1,
                q.title(),
                q.total_gpus,
                _money(q.cost_usd),
                _money(q.cost_per_year_usd),
                per_mtok(q.usd_per_million_tokens),
                f"{q.power_kw:.1f}",
            ]
            for i, q in enumerate(r.per_gpu_best[:top])
        ]
        out.append(
            tabulate(rows, headers=["#", "fleet", "GPUs", "cost", "per year", "$/M tok", "kW"])
        )
        out.append("")
    if r.fewer_vendors:
        q = r.fewer_vendors
        out.append(
            f"With one vendor fewer: {q.title()}, {_money(q.cost_usd)} "
            f"({100 * (q.cost_usd / p.cost_usd - 1):+.1f}%)"
        )
        out.append("")
    if r.alternatives:
        out.append("Next-best fleets (each a different set of GPU types):")
        rows = [
            [
                i + 2,
                q.title() + ("" if q.optimal else " (not proven optimal)"),
                "; ".join(
                    f"{a.workload}: {a.replicas}x{a.gpus_per_replica} {a.gpu} {a.split()}"
                    for a in q.assignments
                ),
                _money(q.cost_usd),
                f"+{100 * (q.cost_usd / p.cost_usd - 1):.1f}%",
            ]
            for i, q in enumerate(r.alternatives)
        ]
        out.append(tabulate(rows, headers=["rank", "fleet", "split", "cost", "vs best"]))
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out).rstrip() + "\n" + (excluded_text(r) if explain else "")


def excluded_text(r: PlanResult) -> str:
    """The candidates left out for each workload, and why (``--explain``)."""
    out = []
    for w, ex in r.excluded.items():
        out.append(f"\nExcluded candidates for '{w}' ({len(ex)}):")
        out += [f"  {c}: {why}" for c, why in ex]
    return "\n".join(out) + ("\n" if out else "")


def compare_table(c: Comparison) -> str:
    rows = []
    for g in c.groups:
        r = g.result
        if r.feasible:
            p = r.plan
            rows.append(
                [
                    g.group,
                    p.title(),
                    p.total_gpus,
                    _money(p.cost_usd),
                    _money(p.cost_per_year_usd),
                    per_mtok(p.usd_per_million_tokens),
                    f"{p.power_kw:.1f}",
                    "",
                ]
            )
        else:
            rows.append([g.group, "-", "-", "-", "-", "-", "-", r.reason[:100]])
    return tabulate(
        rows, headers=[c.by, "fleet", "GPUs", "cost", "per year", "$/M tok", "kW", "why not"]
    )


def sweep_table(s: Sweep) -> str:
    """One line per point (the recommendation), or with samples the distribution per swept
    combination."""
    if s.samples:
        d = s.distribution()
        swept = s.swept
        body = [
            [
                *(r[k] for k in swept),
                r["samples"],
                f"{100 * r['feasible_share']:.0f}%",
                *(_num(r[f"gpus_p{q}"], "{:,.0f}") for q in (10, 50, 90)),
                *(_num(r[f"cost_usd_p{q}"], "${:,.0f}") for q in (10, 50, 90)),
            ]
            for r in d
        ]
        head = [*swept, "samples", "feasible", "GPUs p10", "p50", "p90", "cost p10", "p50", "p90"]
        return tabulate(body, headers=head)
    rows = []
    for p in s.points:
        r = p.first()
        vals = [p.point[k] for k in s.keys]
        if p.feasible:
            mtok = r.get("usd_per_million_output_tokens")
            rows.append(
                [
                    *vals,
                    "yes",
                    r.get("order") or r.get("fleet"),
                    r.get("plan_total_gpus"),
                    f"${float(r['plan_cost_usd']):,.0f}",
                    per_mtok(float(mtok) if mtok not in (None, "") else None),
                    "",
                ]
            )
        else:
            rows.append([*vals, "no", "-", "-", "-", "-", str(r.get("note") or "")[:90]])
    return tabulate(
        rows, headers=[*s.keys, "feasible", "fleet", "GPUs", "cost", "$/M tok", "why not"]
    )


def _num(v, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def launch_text(launches, engine: str) -> str:
    """``--emit``: one launch command per replica kind, with how many copies to run."""
    out = [f"\nLaunch ({engine}):"]
    for x in launches:
        out.append(
            f"# {x.workload} on {x.gpu}: {x.replicas} replicas x {x.gpus_per_replica} GPUs "
            f"(Kubernetes replicas: {x.replicas})"
        )
        out.append(x.command)
        if x.note:
            out.append(f"# note: {x.note}")
    if len(out) == 1:
        out.append("# no language-model workload in the plan")
    return "\n".join(out) + "\n"
