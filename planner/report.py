"""Plans as a finance-readable table, stable JSON, and a ranked spreadsheet-safe CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from tabulate import tabulate

from .files import atomic_write
from .solve import GroupResult, Plan, PlanResult


def _money(x: float) -> str:
    if x >= 1e6:
        return f"${x / 1e6:,.2f}M"
    return f"${x:,.0f}"


def per_mtok(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0f}%"


def plan_json(p: Plan) -> dict:
    return {
        "plan": [
            {
                "workload": a.workload,
                "gpu": a.gpu,
                "gpus_per_replica": a.gpus_per_replica,
                "tp": a.tp,
                "pp": a.pp,
                "ep": a.ep,
                "attention_dp": a.attention_dp,
                "replicas": a.replicas,
                "gpus": a.gpus,
                "seats_needed": a.seats_needed,
                "seats_served": a.seats_served,
                "seats_per_replica": a.seats_per_replica,
                "load_per_replica": a.load_per_replica,
                "ttft_s": a.ttft_s,
                "ttft_target_s": a.ttft_target_s,
                "ttft_percentile": a.ttft_percentile,
                "tokens_per_s": a.tokens_per_s,
                "tokens_per_s_target": a.tokens_per_s_target,
                "headroom_pct": {
                    "ttft": a.ttft_headroom_pct,
                    "tokens_per_s": a.tokens_per_s_headroom_pct,
                    "seats": a.seats_headroom_pct,
                },
                "binding": a.binding,
                "bottleneck": a.bottleneck,
                "unit": a.unit,
                "metrics": a.metrics,
                "disaggregated": (
                    {"prefill_replicas": a.prefill_replicas, "decode_replicas": a.decode_replicas}
                    if a.prefill_replicas
                    else None
                ),
            }
            for a in p.assignments
        ],
        "total_gpus": p.total_gpus,
        "gpus_by_type": p.gpus_by_type,
        "cost_usd": p.cost_usd,
        "cost_per_year_usd": p.cost_per_year_usd,
        "capex_usd": p.capex_usd,
        "power_kw": p.power_kw,
        "usd_per_million_output_tokens": p.usd_per_million_tokens,
        "optimal": p.optimal,
    }


def result_json(r: PlanResult) -> dict:
    d = {
        "scenario": r.scenario,
        "feasible": r.feasible,
        "basis": r.basis,
        "years": r.years,
        "seats": {n: d.amount for n, d in r.demands.items()},
        "seats_required": {n: d.display_required for n, d in r.demands.items()},
        "units": {n: d.unit for n, d in r.demands.items()},
        "seats_arithmetic": {n: d.arithmetic for n, d in r.demands.items()},
    }
    if r.plan:
        p = plan_json(r.plan)
        d.update(p)
    else:
        d.update({"plan": [], "total_gpus": 0, "cost_usd": None, "reason": r.reason})
    d["alternatives"] = [plan_json(p) for p in r.alternatives]
    d["best_per_gpu"] = [plan_json(p) for p in r.per_gpu_best]
    d["notes"] = r.notes
    return d


def _assign_rows(p: Plan) -> list[list]:
    rows = []
    for a in p.assignments:
        rows.append(
            [
                a.workload,
                f"{a.replicas} x {a.gpus_per_replica} {a.gpu}",
                a.split(),
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
    "split",
    "served/needed",
    "TTFT (headroom)",
    "tok/s/user (headroom)",
    "limit",
    "bottleneck",
]


def result_table(r: PlanResult, top: int) -> str:
    out = [
        f"Scenario: {r.scenario}  (cost basis: {r.basis}, horizon {r.years:g} years)",
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
        return "\n".join(out) + "\n"
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
        f"{_money(p.cost_usd)} over {r.years:g} years",
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
                q.label(),
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
    return "\n".join(out).rstrip() + "\n"


def compare_table(groups: list[GroupResult], by: str) -> str:
    rows = []
    for g in groups:
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
        rows, headers=[by, "fleet", "GPUs", "cost", "per year", "$/M tok", "kW", "why not"]
    )


def compare_json(groups: list[GroupResult], by: str) -> dict:
    return {"by": by, "groups": [{"group": g.group, **result_json(g.result)} for g in groups]}


# ---- CSV ----------------------------------------------------------------------------
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(v):
    """Spreadsheets run cells that start with = + - @ as formulas: prefix text with '."""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v


def plan_rows(p: Plan, rank: int, extra: dict | None = None) -> list[dict]:
    rows = []
    for a in p.assignments:
        rows.append(
            {
                **(extra or {}),
                "rank": rank,
                "fleet": p.label(),
                "workload": a.workload,
                "model": a.model,
                "gpu": a.gpu,
                "vendor": a.vendor,
                "replicas": a.replicas,
                "gpus_per_replica": a.gpus_per_replica,
                "gpus": a.gpus,
                "tp": a.tp,
                "pp": a.pp,
                "ep": a.ep,
                "attention_dp": a.attention_dp,
                "seats_needed": a.seats_needed,
                "seats_served": a.seats_served,
                "plan_total_gpus": p.total_gpus,
                "plan_cost_usd": round(p.cost_usd, 2),
                "plan_cost_per_year_usd": round(p.cost_per_year_usd, 2),
                "usd_per_million_output_tokens": _r(p.usd_per_million_tokens, 4),
                "ttft_s": _r(a.ttft_s, 4),
                "ttft_target_s": a.ttft_target_s,
                "ttft_headroom_pct": _r(a.ttft_headroom_pct),
                "tokens_per_s": _r(a.tokens_per_s, 3),
                "tokens_per_s_target": a.tokens_per_s_target,
                "tokens_per_s_headroom_pct": _r(a.tokens_per_s_headroom_pct),
                "seats_headroom_pct": _r(a.seats_headroom_pct),
                "unit": a.unit,
                "bottleneck": a.bottleneck,
            }
        )
    return rows


def _r(x, digits: int = 2):
    return None if x is None else round(x, digits)


def ranked_rows(r: PlanResult, extra: dict | None = None) -> list[dict]:
    if not r.feasible:
        return [{**(extra or {}), "rank": None, "fleet": None, "note": r.reason}]
    rows = plan_rows(r.plan, 1, extra)
    for i, p in enumerate(r.alternatives):
        rows += plan_rows(p, i + 2, extra)
    return rows


def write_csv(rows: list[dict], path: str | Path) -> None:
    """Atomically write rows as CSV: a temp file beside the target, then rename."""
    df = pd.DataFrame(rows)
    df = df.map(escape_cell) if hasattr(df, "map") else df.applymap(escape_cell)
    atomic_write(path, lambda f: df.to_csv(f, index=False))
