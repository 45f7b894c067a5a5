"""What a solve returns: the plan (assignments of replicas to workloads), the result with its
alternatives, and comparisons; each as stable JSON (``to_dict()``, the CLI's
``--format json``) and as the ranked rows of the CSV (``to_frame()``, for finance)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .demand import Demand


@dataclass(kw_only=True)  # keyword-only: the LLM-only fields can default in place
class Assignment:
    workload: str
    model: str
    gpu: str
    vendor: str
    gpus_per_replica: int
    tp: int
    pp: int
    ep: int
    attention_dp: bool
    replicas: int
    seats_needed: float
    seats_served: float
    seats_per_replica: float
    load_per_replica: float
    # language-model targets and speeds (None for the other families)
    ttft_s: float | None = None
    ttft_target_s: float | None = None
    ttft_percentile: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_target: float | None = None
    ttft_headroom_pct: float | None = None
    tokens_per_s_headroom_pct: float | None = None
    seats_headroom_pct: float
    binding: str
    bottleneck: str = "-"
    output_tokens_per_year: float = 0.0
    prefill_replicas: int | None = None  # disaggregated: model copies per unit that prefill
    decode_replicas: int | None = None  # ... and that decode
    unit: str = "seats"  # what seats_* count for this workload (docs/s, streams, clips/s)
    metrics: dict = field(default_factory=dict)  # family metrics at the capacity point
    # the other families: a replica's time per batch at its capacity point, the time limit
    # it is held to (the workload's latency limit, a speech window's max_rtf x its length,
    # a robot's chunk period: planner.kinds) and the headroom
    pass_s: float | None = None
    pass_limit_s: float | None = None
    pass_headroom_pct: float | None = None
    weights: str = "bf16"  # the weight format sized with (stated, or implied by the model name)
    # p10-p90 of the row's figures (estimator.bands): a language model's at its operating
    # point (TTFT at its percentile, per-user speed, the replica's output tokens/s; people's
    # arrivals), another family's pass time and rates (its family's band)
    bands: dict = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return self.gpus_per_replica * self.replicas

    def split(self) -> str:
        s = f"TP{self.tp}"
        s += f" PP{self.pp}" if self.pp > 1 else ""
        s += f" EP{self.ep}" if self.ep > 1 else ""
        s += " attn-DP" if self.attention_dp else ""
        if self.prefill_replicas:
            s += f", disagg {self.prefill_replicas}P+{self.decode_replicas}D"
        return s


@dataclass
class Plan:
    assignments: list[Assignment]
    total_gpus: int
    gpus_by_type: dict[str, int]
    cost_usd: float  # over the horizon, on the scenario's basis
    cost_per_year_usd: float
    capex_usd: float
    power_kw: float
    usd_per_million_tokens: float
    optimal: bool
    units: list[dict] = field(default_factory=list)  # what to order: servers or instances
    spares: list[dict] = field(default_factory=list)
    cost_breakdown_per_year: dict[str, float] = field(default_factory=dict)
    cost_breakdown_usd: dict[str, float] = field(default_factory=dict)  # over the horizon
    rack_units: int = 0
    spare_gpus: int = 0
    break_even_months: float | None = None  # purchase against renting the same GPUs

    def label(self) -> str:
        return " + ".join(f"{n}x {g}" for g, n in self.gpus_by_type.items())

    def order_label(self) -> str:
        """What to order, e.g. '2x DGX B200 (16x b200) + 1 spare'."""
        parts = []
        for u in self.units:
            what = u.get("label") or f"{u.get('cloud')} {u['name']}"
            parts.append(f"{u['count']}x {u['gpu'] if u['kind'] == 'gpu' else what}")
        s = " + ".join(parts)
        n = sum(u["count"] for u in self.spares)
        return s + (f" + {n} spare{'s' if n > 1 else ''}" if n else "")

    def title(self) -> str:
        """What to order, or the GPUs by type where a plan has no units."""
        return self.order_label() or self.label()

    def to_dict(self) -> dict:
        return plan_json(self)


@dataclass
class PlanResult:
    scenario: str
    basis: str
    years: float
    feasible: bool
    demands: dict[str, Demand]
    plan: Plan | None
    alternatives: list[Plan] = field(default_factory=list)
    # the best plan per GPU type (None: not asked for, as a sweep's points do not)
    per_gpu_best: list[Plan] | None = field(default_factory=list)
    fewer_vendors: Plan | None = None  # the cheapest fleet with one vendor fewer
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    excluded: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def to_dict(self, explain: bool = False) -> dict:
        """The JSON of ``planner solve --format json`` (``explain``: with ``--explain``)."""
        d = result_json(self)
        if explain:
            d["excluded"] = {
                w: [{"candidate": c, "reason": r} for c, r in ex] for w, ex in self.excluded.items()
            }
        return d

    def rows(self, extra: dict | None = None) -> list[dict]:
        """The ranked CSV rows: one per assignment of the recommendation and each alternative."""
        return ranked_rows(self, extra)

    def to_frame(self) -> Any:
        """The ranked CSV as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows())


@dataclass
class GroupResult:
    group: str
    result: PlanResult


@dataclass
class Comparison:
    """The best plan for each vendor or each GPU type (``planner compare``)."""

    by: str
    groups: list[GroupResult]

    def to_dict(self) -> dict:
        return {
            "by": self.by,
            "groups": [{"group": g.group, **result_json(g.result)} for g in self.groups],
        }

    def rows(self) -> list[dict]:
        rows = []
        for i, g in enumerate(self.groups):
            rows += ranked_rows(g.result, {self.by: g.group, "group_rank": i + 1})
        return rows

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows())

    @property
    def feasible(self) -> bool:
        return any(g.result.feasible for g in self.groups)


@dataclass
class SweepPoint:
    """One point of a sweep: its overrides (and draws), its ranked CSV rows, and the solve's
    JSON (None for a point read back from a resumed CSV)."""

    index: int
    point: dict
    rows: list[dict]
    result: dict | None

    @property
    def feasible(self) -> bool:
        return any(r.get("rank") not in (None, "") for r in self.rows)

    def first(self) -> dict:
        return self.rows[0] if self.rows else {}


@dataclass
class Sweep:
    """One solve per point of a sweep (``planner sweep``): per combination of the swept
    values, and with ``samples`` per draw of the uncertain inputs."""

    keys: list[str]
    points: list[SweepPoint]
    fields: list[str] = field(default_factory=list)
    samples: int = 0

    @property
    def swept(self) -> list[str]:
        """The swept keys (the drawn ones follow "sample" in :attr:`keys`)."""
        return self.keys[: self.keys.index("sample")] if "sample" in self.keys else self.keys

    def to_dict(self) -> list[dict] | dict:
        pts = [p.result or {"set": p.point, "resumed": True, "rows": p.rows} for p in self.points]
        return {"points": pts, "distribution": self.distribution()} if self.samples else pts

    def rows(self) -> list[dict]:
        return [r for p in self.points for r in p.rows]

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=self.fields or None)

    @property
    def feasible(self) -> bool:
        return any(p.feasible for p in self.points)

    def distribution(self) -> list[dict]:
        """Per combination of the swept values, over its samples: the share with a feasible
        plan and the p10/p50/p90 of the recommended fleet's GPUs and cost."""
        import numpy as np

        swept = self.swept
        groups: dict[tuple, list[SweepPoint]] = {}
        for p in self.points:
            groups.setdefault(tuple(p.point.get(k) for k in swept), []).append(p)
        out = []
        for combo, pts in groups.items():
            ok = [p.first() for p in pts if p.feasible]
            row = dict(zip(swept, combo, strict=True))
            row |= {"samples": len(pts), "feasible_share": len(ok) / len(pts)}
            for key, name in (("plan_total_gpus", "gpus"), ("plan_cost_usd", "cost_usd")):
                v = np.array([float(r[key]) for r in ok], float)
                for q in (10, 50, 90):
                    row[f"{name}_p{q}"] = float(np.percentile(v, q)) if v.size else None
            out.append(row)
        return out


# ---- JSON ---------------------------------------------------------------------------
def plan_json(p: Plan) -> dict:
    return {
        "plan": [
            {
                "workload": a.workload,
                "gpu": a.gpu,
                "weights": a.weights,
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
                "pass_s": a.pass_s,
                "pass_limit_s": a.pass_limit_s,
                "headroom_pct": {
                    "ttft": a.ttft_headroom_pct,
                    "tokens_per_s": a.tokens_per_s_headroom_pct,
                    "seats": a.seats_headroom_pct,
                    "pass": a.pass_headroom_pct,
                },
                "binding": a.binding,
                "bottleneck": a.bottleneck,
                "unit": a.unit,
                "metrics": a.metrics,
                "bands": a.bands,
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
        "order": p.order_label(),
        "servers": [_server(u) for u in p.units if u["kind"] == "server"],
        "instances": [_instance(u) for u in p.units if u["kind"] == "instance"],
        "spares": [_server(u) if u["kind"] != "instance" else _instance(u) for u in p.spares],
        "spare_gpus": p.spare_gpus,
        "rack_units": p.rack_units,
        "cost_usd": p.cost_usd,
        "cost_per_year_usd": p.cost_per_year_usd,
        "cost_breakdown_usd": p.cost_breakdown_usd,
        "cost_breakdown_per_year_usd": p.cost_breakdown_per_year,
        "break_even_months_vs_rental": p.break_even_months,
        "capex_usd": p.capex_usd,
        "power_kw": p.power_kw,
        "usd_per_million_output_tokens": p.usd_per_million_tokens,
        "optimal": p.optimal,
    }


def _server(u: dict) -> dict:
    return {
        "gpu": u["gpu"],
        "server": u["name"],
        "count": u["count"],
        "gpus_per_server": u["gpus_per_unit"],
        "usd_each": u.get("usd_each"),
        "usd_per_year": u["usd_per_year"],
    }


def _instance(u: dict) -> dict:
    return {
        "cloud": u["cloud"],
        "name": u["name"],
        "gpu": u["gpu"],
        "count": u["count"],
        "gpus_per_instance": u["gpus_per_unit"],
        "usd_per_hour": u["usd_per_hour"],
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
    if r.per_gpu_best is not None:
        d["best_per_gpu"] = [plan_json(p) for p in r.per_gpu_best]
    d["one_vendor_fewer"] = plan_json(r.fewer_vendors) if r.fewer_vendors else None
    d["notes"] = r.notes
    return d


# ---- CSV ----------------------------------------------------------------------------
def plan_rows(p: Plan, rank: int, extra: dict | None = None) -> list[dict]:
    rows = []
    for a in p.assignments:
        rows.append(
            {
                **(extra or {}),
                "rank": rank,
                "fleet": p.label(),
                "order": p.order_label(),
                "workload": a.workload,
                "model": a.model,
                "weights": a.weights,
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
                "pass_s": _r(a.pass_s, 4),
                "pass_limit_s": a.pass_limit_s,
                "pass_headroom_pct": _r(a.pass_headroom_pct),
                "unit": a.unit,
                "bottleneck": a.bottleneck,
            }
        )
    return rows


def _r(x, digits: int = 2):
    return None if x is None else round(x, digits)


# the columns of a ranked CSV row, in order (an infeasible solve fills rank, fleet and note)
PLAN_ROW_FIELDS = [
    "rank",
    "fleet",
    "order",
    "workload",
    "model",
    "weights",
    "gpu",
    "vendor",
    "replicas",
    "gpus_per_replica",
    "gpus",
    "tp",
    "pp",
    "ep",
    "attention_dp",
    "seats_needed",
    "seats_served",
    "plan_total_gpus",
    "plan_cost_usd",
    "plan_cost_per_year_usd",
    "usd_per_million_output_tokens",
    "ttft_s",
    "ttft_target_s",
    "ttft_headroom_pct",
    "tokens_per_s",
    "tokens_per_s_target",
    "tokens_per_s_headroom_pct",
    "seats_headroom_pct",
    "pass_s",
    "pass_limit_s",
    "pass_headroom_pct",
    "unit",
    "bottleneck",
    "note",
]


def ranked_rows(r: PlanResult, extra: dict | None = None) -> list[dict]:
    if not r.feasible:
        return [{**(extra or {}), "rank": None, "fleet": None, "note": r.reason}]
    rows = plan_rows(r.plan, 1, extra)
    for i, p in enumerate(r.alternatives):
        rows += plan_rows(p, i + 2, extra)
    return rows
