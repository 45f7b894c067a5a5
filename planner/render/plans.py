"""Tables for ``planner solve``, ``compare`` and ``sweep``: plans as finance reads them."""

from __future__ import annotations

from tabulate import tabulate

from ..results import Comparison, Plan, PlanResult, Sweep


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


def _assign_rows(p: Plan) -> list[list]:
    rows = []
    for a in p.assignments:
        rows.append(
            [
                a.workload,
                f"{a.replicas} x {a.gpus_per_replica} {a.gpu}",
                f"{a.split()} {a.weights}",
                f"{a.seats_served:,.4g} / {a.seats_needed:,.4g} {a.unit}",
                "-"
                if a.ttft_s is None
                else f"{a.ttft_s:.2f} s p{a.ttft_percentile:g}"
                + (f" ({_pct(a.ttft_headroom_pct)})" if a.ttft_target_s else ""),
                "-"
                if a.tokens_per_s is None
                else f"{a.tokens_per_s:.1f}"
                + (f" ({_pct(a.tokens_per_s_headroom_pct)})" if a.tokens_per_s_target else ""),
                a.binding,
                a.bottleneck,
            ]
        )
    return rows


ASSIGN_HEAD = [
    "workload",
    "replicas x GPUs",
    "split, weights",
    "served/needed",
    "TTFT (headroom)",
    "tok/s/user (headroom)",
    "limit",
    "bottleneck",
]


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
    out.append(
        f"Recommendation: buy {p.label()}"
        if r.basis == "purchase"
        else f"Recommendation: rent {p.label()}"
    )
    out.append(tabulate(_assign_rows(p), headers=ASSIGN_HEAD))
    out.append("")
    out.append(f"Total: {p.total_gpus} GPUs, {p.power_kw:.1f} kW at TDP x PUE")
    cost = [
        f"{_money(p.cost_usd)} over {_years(r.years)}",
        f"{_money(p.cost_per_year_usd)} per year",
    ]
    if r.basis == "purchase":
        cost.append(f"capex {_money(p.capex_usd)}")
    if p.usd_per_million_tokens is not None:
        cost.append(f"${p.usd_per_million_tokens:,.2f} per million output tokens")
    out.append(
        "Cost: " + ", ".join(cost) + ("" if p.optimal else " (solver time limit: best found)")
    )
    out.append("")
    if r.per_gpu_best:
        out.append("Best plan per GPU type:")
        rows = [
            [
                i + 1,
                q.label(),
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
    if r.alternatives:
        out.append("Next-best distinct fleets:")
        rows = [
            [
                i + 2,
                q.label() + ("" if q.optimal else " (not proven optimal)"),
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
                    p.label(),
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
    rows = []
    for c, r in s.results:
        if r.feasible:
            p = r.plan
            rows.append(
                [
                    *(c[k] for k in s.keys),
                    "yes",
                    p.label(),
                    p.total_gpus,
                    f"${p.cost_usd:,.0f}",
                    per_mtok(p.usd_per_million_tokens),
                    "",
                ]
            )
        else:
            rows.append([*(c[k] for k in s.keys), "no", "-", "-", "-", "-", r.reason[:90]])
    return tabulate(
        rows, headers=[*s.keys, "feasible", "fleet", "GPUs", "cost", "$/M tok", "why not"]
    )
