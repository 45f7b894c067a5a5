"""Scenario -> cheapest feasible fleet, ranked alternatives, vendor/GPU comparisons, sweeps.

Functions a notebook user calls directly; the CLI only formats what they return.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

from estimator import (
    Accelerator,
    LanguageModel,
    Parallel,
    UnknownNameError,
    get_gpu,
    get_model,
    gpu_catalog,
)
from estimator.families import get_family_model
from estimator.families.catalog import is_family_model
from estimator.families.perf import ASR_ENGINE_NOTE

from .candidates import Candidate, enumerate_candidates
from .capacity import Capacity, llm_capacity, operating_point, pareto_splits
from .costs import GpuCost, gpu_cost
from .demand import Demand, demand_of
from .family_capacity import FamilyCapacity, family_capacity
from .optimize import Limits, Option, solve
from .scenario import LLMWorkload, Scenario, ScenarioError

SECONDS_PER_YEAR = 365 * 86400


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

    def label(self) -> str:
        return " + ".join(f"{n}x {g}" for g, n in self.gpus_by_type.items())


@dataclass
class PlanResult:
    scenario: str
    basis: str
    years: float
    feasible: bool
    demands: dict[str, Demand]
    plan: Plan | None
    alternatives: list[Plan] = field(default_factory=list)
    per_gpu_best: list[Plan] = field(default_factory=list)
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    excluded: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


@dataclass
class _Option:
    """Internal: an optimiser option with what we need to report it."""

    opt: Option
    cand: Candidate
    cap: Capacity
    workload: LLMWorkload
    ev: object
    split: tuple[int, int] | None = None  # disaggregated unit: (prefill, decode) replicas
    family: FamilyCapacity | None = None  # non-LLM workloads: capacity and its metrics


# Prefill:decode replica ratios tried for disaggregated serving.
DISAGG_SPLITS = ((1, 1), (1, 2), (1, 3), (2, 1), (2, 3), (1, 4))


class Planner:
    """Prepared search space for one scenario (models, GPUs, capacities, costs)."""

    def __init__(self, sc: Scenario, presets: tuple[str, ...] = ()):
        self.sc, self.presets = sc, presets
        self.notes: list[str] = []
        self.models: dict[str, LanguageModel] = {
            w.name: self._language_model(w) for w in sc.workloads if w.kind == "llm"
        }
        self.family_models = {
            w.name: self._family_model(w) for w in sc.workloads if w.kind != "llm"
        }
        self.gpus = self._allowed_gpus()
        self.costs: dict[str, GpuCost] = {}
        for g in list(self.gpus):
            c = gpu_cost(g, sc.cost)
            if c is None:
                self.notes.append(
                    f"{g.name}: no {'rental' if sc.cost.basis == 'rental' else 'purchase'} "
                    "price in its preset, left out"
                )
                self.gpus.remove(g)
            else:
                self.costs[g.name] = c
        self.demands = {w.name: demand_of(w) for w in sc.workloads}
        for w in sc.workloads:
            if w.kind == "llm":
                note = self.models[w.name].context_note(w.input_tokens + w.output_tokens)
                if note:
                    self.notes.append(f"workload '{w.name}': {note}")
        if any(w.kind == "speech" for w in sc.workloads):
            self.notes.append(ASR_ENGINE_NOTE)
        self.options: list[_Option] = []
        self._op_cache: dict[tuple, object] = {}
        self.excluded: dict[str, list[tuple[str, str]]] = {}
        self.best_seen: dict[str, list[tuple[Candidate, Capacity]]] = {}
        for w in sc.workloads:
            self._add_workload(w)

    def _family_model(self, w):
        try:
            return get_family_model(w.model, self.presets)
        except UnknownNameError:
            # a name no preset has fails here, suggesting from every family
            lm = get_model(w.model, self.presets)
        raise ScenarioError(
            f"workload '{w.name}': {lm.name} is a language model, which a "
            f"workload of kind '{w.kind}' cannot use; drop `kind` to plan it as an LLM "
            "workload, or pick a preset of that kind (see `planner models list`)"
        )

    def _language_model(self, w: LLMWorkload) -> LanguageModel:
        """An LLM preset or config, or a vision-language model's language model (its image
        encoder then rides on the workload, see capacity.steps_for)."""
        if is_family_model(w.model, self.presets):
            vlm = get_family_model(w.model, self.presets)
            if getattr(vlm, "family", "") != "vlm":
                raise ScenarioError(
                    f"workload '{w.name}': {w.model} is a {vlm.family} model; "
                    "give the workload the matching `kind`"
                )
            w._vlm = vlm
            return vlm.llm
        if w.images_per_request:
            raise ScenarioError(
                f"workload '{w.name}': images_per_request needs a "
                "vision-language model (see `planner models list`)"
            )
        return get_model(w.model, self.presets)

    def _allowed_gpus(self) -> list[Accelerator]:
        f = self.sc.fleet
        cat = gpu_catalog(self.presets)
        names = [cat.resolve_name(n) for n in f.gpus] if f.gpus else cat.names()
        avail = {cat.resolve_name(k): v for k, v in f.available.items()}
        out = []
        for n in sorted(set(names)):
            g = get_gpu(n, self.presets)
            if f.vendors and g.vendor not in f.vendors:
                continue
            if n in avail and avail[n] == 0:
                continue
            out.append(g)
        self.available = avail
        if not out:
            raise ScenarioError(
                "fleet: no GPU type is allowed by fleet.gpus, fleet.vendors and "
                "fleet.available together"
            )
        return out

    def _add_family_workload(self, w) -> None:
        """Every allowed GPU type x TP size (these families run TP only)."""
        model = self.family_models[w.name]
        self.excluded[w.name] = []
        seen: list[tuple[Candidate, Capacity]] = []
        kept: list[tuple[int, _Option]] = []
        for gpu in self.gpus:
            tp = 1
            while tp <= self.sc.fleet.max_gpus_per_replica:
                cand = Candidate(gpu, Parallel(tp=tp))
                fc = family_capacity(model, w, gpu, cand.parallel)
                cap = Capacity(fc.units, fc.binding, fc.latency_s, float("nan"), fc.batch)
                seen.append((cand, cap))
                if fc.binding.startswith("split"):
                    self.excluded[w.name].append((cand.label(), fc.binding[7:]))
                elif fc.units >= 1:
                    c = self.costs[gpu.name]
                    opt = Option(
                        w.name,
                        gpu.name,
                        gpu.vendor,
                        tp,
                        fc.units,
                        int(math.ceil(c.horizon * tp)),
                        int(math.ceil(c.power_kw * 1000 * tp)),
                        cand.key(),
                    )
                    kept.append((fc.units, _Option(opt, cand, cap, w, None, family=fc)))
                tp *= 2
        self.best_seen[w.name] = seen
        self._keep_undominated(kept)

    def _keep_undominated(self, kept: list[tuple[int, _Option]]) -> None:
        """Drop options dominated within a GPU type: no more units for as many GPUs."""
        for units, o in kept:
            dominated = any(
                u2 >= units
                and o2.opt.gpus <= o.opt.gpus
                and o2 is not o
                and o2.opt.gpu == o.opt.gpu
                and (u2 > units or o2.opt.gpus < o.opt.gpus)
                for u2, o2 in kept
            )
            if not dominated:
                self.options.append(o)

    def _add_workload(self, w) -> None:
        if w.kind != "llm":
            self._add_family_workload(w)
            return
        model = self.models[w.name]
        cands, excluded = enumerate_candidates(
            model, self.gpus, self.sc.fleet.max_gpus_per_replica, w.weights, w.kv_cache, w.engine
        )
        self.excluded[w.name] = excluded
        seen: list[tuple[Candidate, Capacity]] = []
        best: dict[tuple[str, int], tuple[int, _Option]] = {}
        per_gpu: dict[str, dict[int, float]] = {}  # gpu type -> size -> best seats per GPU
        for cand, ev, st in pareto_splits(cands, w):
            sizes = per_gpu.setdefault(cand.gpu.name, {})
            smaller = [v for s, v in sizes.items() if s < cand.gpus]
            if len(smaller) >= 2 and smaller[-1] > 0 and smaller[-1] < smaller[-2]:
                # seats per GPU rise with replica size until the model has the bandwidth it
                # needs, then fall (more collectives, fewer GPUs' worth of work): once they
                # fall, larger replicas of this type are not worth evaluating
                continue
            cap = llm_capacity(ev, w, st)
            sizes[cand.gpus] = max(sizes.get(cand.gpus, 0.0), cap.units / cand.gpus)
            seen.append((cand, cap))
            units = [(cap, None)] if w.disaggregation != "only" else []
            if w.disaggregation != "off" and cap.max_batch_memory >= 1:
                units += [(llm_capacity(ev, w, st, split), split) for split in DISAGG_SPLITS]
            for ucap, split in units:
                if ucap.units < 1:
                    continue
                n = cand.gpus * (sum(split) if split else 1)
                c = self.costs[cand.gpu.name]
                opt = Option(
                    w.name,
                    cand.gpu.name,
                    cand.gpu.vendor,
                    n,
                    ucap.units,
                    int(math.ceil(c.horizon * n)),
                    int(math.ceil(c.power_kw * 1000 * n)),
                    cand.key() + (split or (0, 0)),
                )
                o = _Option(opt, cand, ucap, w, ev, split)
                k = (cand.gpu.name, n)
                if k not in best or ucap.units > best[k][0]:  # per type and size: best split
                    best[k] = (ucap.units, o)
        self.best_seen[w.name] = seen
        self._keep_undominated(sorted(best.values(), key=lambda t: t[1].opt.key))

    # ---- solving --------------------------------------------------------------------
    def limits(self, single_type: bool | None = None) -> Limits:
        b = self.sc.budget
        return Limits(
            single_type=self.sc.fleet.single_type if single_type is None else single_type,
            available=self.available or None,
            max_usd=b.max_usd,
            max_power_kw=b.max_power_kw,
            max_types=self.sc.fleet.max_types,
        )

    def required(self) -> dict[str, int]:
        return {n: d.required for n, d in self.demands.items()}

    def run(self, options: list[_Option], limits: Limits, exclude=None):
        sol = solve([o.opt for o in options], self.required(), limits, exclude)
        return sol

    def to_plan(self, options: list[_Option], sol) -> Plan:
        by_w: dict[str, list[tuple[_Option, int]]] = {}
        for i, n in sorted(sol.replicas.items()):
            by_w.setdefault(options[i].opt.workload, []).append((options[i], n))
        assignments = []
        for w in self.sc.workloads:
            rows = by_w.get(w.name, [])
            served = sum(o.cap.units * n for o, n in rows)
            need = self.demands[w.name].required
            if w.kind != "llm":
                assignments += self._family_assignments(w, rows, served, need)
                continue
            for o, n in rows:
                share = o.cap.units * n / served
                load = max(1, math.ceil(need * share / n))  # spread in proportion to capacity
                op = self._operating_point(o, w, min(load, o.cap.units))
                p = o.cand.parallel
                cycle = w.think_time_s + op.ttft_mean_s + (w.output_tokens - 1) / op.tokens_per_s
                active_sessions = w.users * w.hours_per_person / 24.0 * share
                tokens_year = active_sessions * w.output_tokens / cycle * SECONDS_PER_YEAR
                assignments.append(
                    Assignment(
                        workload=w.name,
                        model=self.models[w.name].name,
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
                    )
                )
        by_type: dict[str, int] = {}
        for a in assignments:
            by_type[a.gpu] = by_type.get(a.gpu, 0) + a.gpus
        by_type = dict(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0])))
        per_year = sum(self.costs[g].per_year * n for g, n in by_type.items())
        capex = sum(self.costs[g].capex * n for g, n in by_type.items())
        power = sum(self.costs[g].power_kw * n for g, n in by_type.items())
        tokens = sum(a.output_tokens_per_year for a in assignments)
        return Plan(
            assignments,
            sum(by_type.values()),
            by_type,
            cost_usd=per_year * self.sc.cost.years,
            cost_per_year_usd=per_year,
            capex_usd=capex,
            power_kw=power,
            usd_per_million_tokens=per_year / (tokens / 1e6) if tokens else None,
            optimal=sol.optimal,
        )

    def _family_assignments(self, w, rows, served: int, need: int) -> list[Assignment]:
        d = self.demands[w.name]
        out = []
        for o, n in rows:
            p = o.cand.parallel
            out.append(
                Assignment(
                    workload=w.name,
                    model=self.family_models[w.name].name,
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
                    metrics=dict(o.family.metrics) if o.family else {},
                )
            )
        return out

    def _operating_point(self, o: _Option, w: LLMWorkload, sessions: int):
        """Metrics at a load, cached: alternatives and per-GPU plans revisit the same points."""
        key = (o.opt.key, w.name, sessions)
        if key not in self._op_cache:
            self._op_cache[key] = operating_point(o.ev, w, sessions, o.split)
        return self._op_cache[key]

    def _diagnose_family(self, w, seen: list[tuple[Candidate, Capacity]]) -> str:
        """Why no candidate serves a non-LLM workload: every split refused, memory, or the
        latency / real-time limit, with the nearest miss."""
        n = self.sc.fleet.max_gpus_per_replica
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
        limit = next(
            (
                (k, getattr(w, k))
                for k in ("max_s_per_image", "max_latency_s", "max_batch_latency_s", "max_rtf")
                if getattr(w, k, None) is not None
            ),
            None,
        )
        timed = [(c, cap) for c, cap in fits if math.isfinite(cap.best_ttft_s)]
        if limit and timed:
            c, cap = min(timed, key=lambda t: t[1].best_ttft_s)
            return (
                f"no candidate meets {limit[0]} {limit[1]:g}: the fastest, {c.label()}, "
                f"takes {cap.best_ttft_s:.3g} s for one item"
            )
        if w.kind == "robot_policy" and timed:
            c, cap = min(timed, key=lambda t: t[1].best_ttft_s)
            return (
                f"no candidate keeps up with control_hz {w.control_hz:g}: the fastest, "
                f"{c.label()}, takes {cap.best_ttft_s * 1e3:.3g} ms per action chunk; lower "
                "control_hz, execute more steps per chunk, or use fewer flow steps"
            )
        if limit:
            return f"no candidate meets {limit[0]} {limit[1]:g} at any batch size"
        return f"no candidate meets the {fits[0][1].binding} limit"

    def diagnose(self) -> str:
        """Why no plan exists: the binding target and the nearest miss, or the limit."""
        for w in self.sc.workloads:
            if any(o.opt.workload == w.name for o in self.options):
                continue
            seen = self.best_seen.get(w.name, [])
            if w.kind != "llm":
                return f"workload '{w.name}': " + self._diagnose_family(w, seen)
            fits = [(c, cap) for c, cap in seen if cap.max_batch_memory >= 1]
            if not fits:
                n = self.sc.fleet.max_gpus_per_replica
                return (
                    f"workload '{w.name}': {self.models[w.name].name} does not fit in memory on "
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
        lim = self.limits()
        b = self.sc.budget
        trials = [
            ("budget", replace(lim, max_usd=None)),
            ("power", replace(lim, max_power_kw=None)),
            ("inventory", replace(lim, available=None)),
            ("single_type", replace(lim, single_type=False, max_types=None)),
        ]
        parts = []
        for name, relaxed_lim in trials:
            sol = self.run(self.options, relaxed_lim)
            if sol is None:
                continue
            plan = self.to_plan(self.options, sol)
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
                    f"{n} {g} needed, {self.available[g]} available"
                    for g, n in plan.gpus_by_type.items()
                    if g in self.available and n > self.available[g]
                ]
                parts.append(
                    "GPU availability binds: "
                    + "; ".join(short)
                    + f" (cheapest plan without it: {plan.label()}, ${plan.cost_usd:,.0f})"
                )
            else:
                parts.append(
                    f"no fleet of so few GPU types (single_type / max_types) serves every workload "
                    "within the limits; a mixed "
                    f"fleet would: {plan.label()}, ${plan.cost_usd:,.0f}"
                )
        if parts:
            return "; or ".join(parts)
        sol = self.run(self.options, Limits())
        if sol is None:
            return "no combination of candidates covers the demand"
        plan = self.to_plan(self.options, sol)
        return (
            "the fleet limits together (budget, power, inventory, single type) exclude every "
            f"plan; with none of them the best is {plan.label()} at ${plan.cost_usd:,.0f}"
        )


def plan_scenario(sc: Scenario, presets: tuple[str, ...] = (), top: int = 5) -> PlanResult:
    """The recommendation, the best plan per GPU type, and the next-best distinct fleets."""
    pl = Planner(sc, presets)
    res = PlanResult(
        sc.name,
        sc.cost.basis,
        sc.cost.years,
        False,
        pl.demands,
        None,
        notes=pl.notes,
        excluded=pl.excluded,
    )
    sol = pl.run(pl.options, pl.limits())
    if sol is None:
        res.reason = pl.diagnose()
        return res
    res.feasible, res.plan = True, pl.to_plan(pl.options, sol)
    # best per GPU type (all workloads on that type), cheapest first
    for g in sorted({o.opt.gpu for o in pl.options}):
        sub = [o for o in pl.options if o.opt.gpu == g]
        s = pl.run(sub, pl.limits(single_type=False))
        if s is not None:
            res.per_gpu_best.append(pl.to_plan(sub, s))
    res.per_gpu_best.sort(key=lambda p: (p.cost_usd, p.total_gpus, p.label()))
    # next-best distinct fleets
    seen = [sol.gpus_by_type]
    for _ in range(max(0, top - 1)):
        s = pl.run(pl.options, pl.limits(), exclude=seen)
        if s is None:
            break
        seen.append(s.gpus_by_type)
        res.alternatives.append(pl.to_plan(pl.options, s))
    return res


@dataclass
class GroupResult:
    group: str
    result: PlanResult


def compare(sc: Scenario, by: str, presets: tuple[str, ...] = ()) -> list[GroupResult]:
    """The best plan for each vendor or each GPU type, side by side."""
    pl_all = Planner(sc, presets)
    if by not in ("vendor", "gpu"):
        raise ScenarioError(f"--by must be 'vendor' or 'gpu', not '{by}'")
    groups = sorted({g.vendor if by == "vendor" else g.name for g in pl_all.gpus})
    key = "vendors" if by == "vendor" else "gpus"

    def make(group: str) -> Scenario:
        return sc.model_copy(update={"fleet": sc.fleet.model_copy(update={key: [group]})})

    out = []
    for g in groups:
        try:
            r = plan_scenario(make(g), presets, top=1)
        except ScenarioError as e:
            r = PlanResult(
                sc.name, sc.cost.basis, sc.cost.years, False, pl_all.demands, None, reason=str(e)
            )
        out.append(GroupResult(g, r))
    out.sort(
        key=lambda gr: (
            not gr.result.feasible,
            gr.result.plan.cost_usd if gr.result.plan else 0.0,
            gr.group,
        )
    )
    return out


def parse_value(text: str):
    t = text.strip()
    low = t.lower()
    if low in ("null", "none", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t


def parse_sets(sets: tuple[str, ...]) -> list[tuple[str, list]]:
    out = []
    for s in sets:
        if "=" not in s:
            raise ScenarioError(f"--set expects KEY=V1,V2,... , got '{s}'")
        k, v = s.split("=", 1)
        vals = [parse_value(x) for x in v.split(",") if x.strip()]
        if not k.strip() or not vals:
            raise ScenarioError(f"--set expects KEY=V1,V2,... , got '{s}'")
        out.append((k.strip(), vals))
    return out


def sweep_combinations(sets: list[tuple[str, list]]) -> list[dict]:
    keys = [k for k, _ in sets]
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*[v for _, v in sets])
    ]
