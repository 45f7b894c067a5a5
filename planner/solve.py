"""Scenario -> cheapest feasible fleet with ranked alternatives, and the vendor/GPU
comparison. Functions a notebook user calls directly; the CLI only formats what they return.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from estimator.efficiency import calibration_note, efficiency_key

from .assembly import prefetch_points, to_plan
from .diagnose import diagnose
from .optimize import Solution, allowed
from .options import SearchSpace
from .results import Comparison, GroupResult, Plan, PlanResult
from .scenario import Scenario, ScenarioError


def plan_scenario(
    sc: Scenario, presets: tuple[str, ...] = (), top: int = 5, per_gpu: bool = True
) -> PlanResult:
    """The recommendation, the best plan per GPU type (``per_gpu``: one more solve per type
    in the search; without it ``per_gpu_best`` is None), and the next-best distinct fleets
    (``top`` plans in all)."""
    pl = SearchSpace(sc, presets)
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
    # the best fleet of each GPU type is solved on two pool threads while the main thread
    # solves the recommendation and the first next-best fleet (with one workload, all of
    # them) (CP-SAT releases the GIL while it searches; every solve is deterministic, so the
    # answers do not depend on which thread runs first)
    with ThreadPoolExecutor(max_workers=2) as pool:
        types = sorted({o.opt.gpu for o in pl.options}) if per_gpu else []
        by_type = [pool.submit(_one_type, pl, g) for g in types]
        limits = pl.limits()
        # the recommendation and the next-best fleets: one model, each fleet's exclusion
        # added to it in turn (warm one-workload solve: ~2 ms less per fleet)
        chain = pl.model(pl.options, limits)
        sol = chain.solve()
        if not sol.found:
            for f in by_type:  # no plan: the per-type fleets are not wanted
                f.cancel()
            res.reason = diagnose(pl)
            return res
        # the first next-best fleet while those run, from the covers of single workloads
        floor = sol.cost if sol.optimal else None
        first = None
        if top > 1:
            first = chain.solve([sol.gpus_by_type], cost_floor=floor)
        # one workload's alternatives start from its own cheapest cover, which is what a
        # one-type fleet would seed: they need not wait for the per-type solves
        coupled = len(pl.demands) > 1
        per_type = [r for f in by_type if (r := f.result()) is not None] if coupled else []
        # each one-type fleet is a plan every later model admits unless it excludes that
        # type set: the cheapest such one seeds each later search (a hint, not a
        # constraint), which then starts near its optimum rather than from the covers of
        # single workloads (three_workloads.yaml's alternatives: 0.41 -> 0.24 s)
        index = {id(o): i for i, o in enumerate(pl.options)}
        starts = sorted(
            (_as_full(index, sub, s) for sub, s in per_type), key=lambda s: (s.cost, s.gpus)
        )
        # the cheapest fleet with one vendor fewer: what a second software stack saves
        fewer = None
        vendors = {pl.options[i].opt.vendor for i in sol.replicas}
        if len(vendors) > 1:
            lim = replace(limits, max_vendors=len(vendors) - 1)
            fewer = pool.submit(pl.run, pl.options, lim, start=starts[0] if starts else None)
        # next-best fleets, each with a different set of GPU types
        alternatives, seen, last = [], [sol.gpus_by_type], sol
        for _ in range(max(0, top - 1)):
            if first is not None:
                s, first = first, None
            else:
                floor = last.cost if last.optimal else None
                start = next((f for f in starts if allowed(f.gpus_by_type, seen)), None)
                s = chain.solve(seen, cost_floor=floor, start=start)
            if not s.found:
                break
            seen.append(s.gpus_by_type)
            alternatives.append(s)
            last = s
        if fewer is not None:
            fewer = got if (got := fewer.result()).found else None
        if not coupled:
            per_type = [r for f in by_type if (r := f.result()) is not None]
    solved = [(pl.options, sol), *per_type, *((pl.options, s) for s in alternatives)]
    prefetch_points(pl, solved + ([(pl.options, fewer)] if fewer else []))
    plans: dict[tuple, Plan] = {}

    def plan_of(options: list, s: Solution) -> Plan:
        """The plan of a fleet; a fleet solved twice (the same GPUs by type at the same
        cost, e.g. a type's best that is also a next-best fleet) reads the same each time."""
        key = (tuple(sorted(s.gpus_by_type.items())), s.cost)
        if key not in plans:
            plans[key] = to_plan(pl, options, s)
        return plans[key]

    res.feasible, res.plan = True, plan_of(pl.options, sol)
    res.per_gpu_best = [plan_of(sub, s) for sub, s in per_type] if per_gpu else None
    if res.per_gpu_best:
        res.per_gpu_best.sort(key=lambda p: (p.cost_usd, p.total_gpus, p.label()))
    if fewer is not None:
        res.fewer_vendors = plan_of(pl.options, fewer)
    res.alternatives = [plan_of(pl.options, s) for s in alternatives]
    # proven optimal, each is no cheaper than the one before; unproven ones may be: sort
    res.alternatives.sort(key=lambda p: (p.cost_usd, p.total_gpus, p.label()))
    res.notes += _calibration_notes(pl, [res.plan, *res.alternatives])
    res.notes += _link_notes(pl, res.plan)
    res.notes += _caveat_notes(pl, res.plan)
    if sc.confidence is not None:
        res.notes.append(_at_point_estimate(sc, presets, res.plan.cost_per_year_usd))
    return res


def _calibration_notes(pl: SearchSpace, plans: list[Plan]) -> list[str]:
    """For each GPU type the recommendation or a next-best fleet runs on, what of its
    family's efficiency no published run measured (estimator.efficiency.calibration_note)."""
    gpus = {g.name: g for g in pl.gpus}
    names = sorted({t for p in plans for t in p.gpus_by_type})
    return [f"{n}: {note}" for n in names if (note := calibration_note(efficiency_key(gpus[n])))]


def _link_notes(pl: SearchSpace, plan: Plan) -> list[str]:
    """What the recommendation's tensor-parallel rings over PCIe are priced at (PCIe
    servers' all-reduce differs 10x by build: estimator.comm.pcie_ring_note), once each."""
    from estimator.comm import pcie_ring_note
    from estimator.parallel import Parallel

    gpus = {g.name: g for g in pl.gpus}
    notes = {
        f"{a.gpu}: {note}"
        for a in plan.assignments
        if a.gpu in gpus
        and (note := pcie_ring_note(gpus[a.gpu], Parallel(tp=a.tp, attention_dp=a.attention_dp)))
    }
    return sorted(notes)


def _caveat_notes(pl: SearchSpace, plan: Plan) -> list[str]:
    """What published runs measured of the recommendation's stacks where the estimate is
    known to be off (estimator.caveats: model class, GPU family, engine, weight
    format, and the workload's prompt and answer lengths), once each."""
    from estimator.caveats import measured_caveats, shape_caveats

    gpus = {g.name: g for g in pl.gpus}
    loads = {w.name: w for w in pl.sc.workloads if w.name in pl.models}
    where: dict[str, set[str]] = {}  # a caveat once, with the workloads on GPUs it applies to
    for a in plan.assignments:
        if a.workload in pl.models and a.gpu in gpus:
            model, w = pl.models[a.workload], loads[a.workload]
            g = gpus[a.gpu]
            notes = measured_caveats(model, g, w.engine, a.weights) + shape_caveats(
                model, g, w.engine, a.weights, w.input_tokens, w.output_tokens
            )
            for note in notes:
                where.setdefault(note, set()).add(f"{a.workload} on {a.gpu}")
    return sorted(f"{', '.join(sorted(w))}: {note}" for note, w in where.items())


def _as_full(index: dict[int, int], sub: list, s: Solution) -> Solution:
    """A solution over a subset of the options, its replicas indexed as the full list
    (``index``: each option's position in it, by identity)."""
    return replace(s, replicas={index[id(sub[i])]: n for i, n in s.replicas.items()})


def _one_type(pl: SearchSpace, gpu: str):
    """The best fleet of one GPU type alone (all workloads on it), as (its options, the
    solution); None where there is none."""
    sub = [o for o in pl.options if o.opt.gpu == gpu]
    s = pl.run(sub, pl.limits(single_type=False))
    return (sub, s) if s.found else None


def compare(sc: Scenario, by: str = "vendor", presets: tuple[str, ...] = ()) -> Comparison:
    """The best plan for each vendor or each GPU type, side by side."""
    pl_all = SearchSpace(sc, presets)
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
    return Comparison(by, out)


def _at_point_estimate(sc: Scenario, presets: tuple[str, ...], cost_per_year: float) -> str:
    """What the cheapest fleet costs when sized on the point estimates instead."""
    # a deep copy: the planner marks each workload with the scenario's confidence
    base = SearchSpace(sc.model_copy(update={"confidence": None}, deep=True), presets)
    sol = base.run(base.options, base.limits())
    if not sol.found:
        return "sized on the point estimates, no plan meets the targets"
    plan = to_plan(base, base.options, sol)
    extra = cost_per_year / plan.cost_per_year_usd - 1 if plan.cost_per_year_usd else 0.0
    return (
        f"on the point estimates the cheapest plan is {plan.label()} at "
        f"${plan.cost_per_year_usd:,.0f} per year; confidence {sc.confidence:g} costs "
        f"{extra:+.1%}"
    )
