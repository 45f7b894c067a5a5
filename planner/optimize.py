"""OR-Tools CP-SAT: integer replicas per candidate, cheapest fleet that covers every workload.

Deterministic: one search worker and a fixed seed, and options arrive in a stable order, so
the same scenario gives byte-identical output.
"""

from __future__ import annotations

from functools import lru_cache

from . import cpsat
from .fleet_spec import Limits, Option, Purchase, Solution
from .packing import lin, loose, packable, units

# objective = dollars × 1000 + GPUs owned + GPUs running replicas: at equal cost, fewer GPUs
# and no idle replicas (a dollar outweighs any GPU count below 500, and stays in int64); then
# the most demand served (see solve)
TIE_SCALE = 1000
# CP-SAT's deterministic time (its own work units, about seconds on a fast core), not the wall
# clock: a limit that binds does so at the same point however loaded the machine is, so the
# output stays byte-identical; a plan it cuts short is reported as not proven optimal.
WORK_LIMIT = 20.0


def _no_plan(status: str = "infeasible") -> Solution:
    return Solution(status, {}, {}, 0, 0)


def solve(
    options: list[Option],
    required: dict[str, int],
    limits: Limits,
    exclude: list[dict[str, int]] | None = None,
    work_limit: float = WORK_LIMIT,
    purchases: list[Purchase] | None = None,
    cost_floor: int | None = None,
    start: Solution | None = None,
) -> Solution:
    """Cheapest fleet covering ``required`` units per workload. With ``purchases``, the fleet
    is whole units (servers, instances) with the replicas packed onto them, plus the fixed
    costs of ``limits``; without, each option's own cost per replica (loose GPUs).
    ``cost_floor``: a cost no plan here can be below (a proven earlier optimum of a model
    this one only restricts), given to the search as a bound."""
    model = FleetModel(options, required, limits, work_limit, purchases)
    return model.solve(exclude, cost_floor, start)


class FleetModel:
    """One fleet model, solved again as fleets are excluded: the next-best fleets add their
    exclusions (and cost floors) to the model already built instead of building it afresh
    each time (tests/test_planner.py checks each answer equals a fresh model's)."""

    def __init__(
        self,
        options: list[Option],
        required: dict[str, int],
        limits: Limits,
        work_limit: float = WORK_LIMIT,
        purchases: list[Purchase] | None = None,
    ):
        self.options, self.required, self.limits = options, required, limits
        self.work_limit, self.purchases = work_limit, purchases
        self.buys = purchases or []
        self.by_type_buys: dict[str, list[int]] = {}
        for j, p in enumerate(self.buys):
            self.by_type_buys.setdefault(p.gpu, []).append(j)
        self.live = [
            i
            for i, o in enumerate(options)
            if purchases is None
            or (
                o.gpu in self.by_type_buys
                and packable([self.buys[j] for j in self.by_type_buys[o.gpu]], o.gpus)
            )
        ]
        by_workload = {w: [i for i in self.live if options[i].workload == w] for w in required}
        self.by_workload = by_workload
        self.empty = not all(by_workload.values())
        if self.empty:
            return
        # Each workload's own cheapest cover (at each option's cost) bounds its part of the
        # joint cost from below and seeds the search. With loose GPUs, covers that meet every
        # limit are the optimum (proven by the bounds): no search is needed.
        self.hint, self.floors, proven = [0] * len(options), {}, True
        for w, idx in by_workload.items():
            self.floors[w], reps = _cheapest_cover([options[i] for i in idx], required[w])
            proven &= (
                sum(options[i].capacity * n for i, n in zip(idx, reps, strict=True)) >= required[w]
            )
            for i, n in zip(idx, reps, strict=True):
                self.hint[i] = n
        self.covers = None
        if purchases is None and proven:
            self.covers = _solution(
                options, {i: n for i, n in enumerate(self.hint) if n}, "optimal"
            )
        self.m = None  # built when first searched
        self.one_type = len({options[i].gpu for i in self.live}) == 1
        self.excluded: list[dict[str, int]] = []

    def _build(self) -> None:
        options, required, limits = self.options, self.required, self.limits
        m = self.m = _model()
        ubx = self.ubx = [0] * len(options)  # options that cannot be placed stay at 0
        for i in self.live:
            o = options[i]
            ub = -(-required[o.workload] // o.capacity)
            if limits.available and o.gpu in limits.available:
                ub = min(ub, limits.available[o.gpu] // o.gpus)
            ubx[i] = max(ub, 0)
        x = self.x = [m.new_int_var(0, ub, f"x{i}") for i, ub in enumerate(ubx)]
        for w, idx in self.by_workload.items():
            m.add(lin((options[i].capacity, x[i]) for i in idx) >= required[w])
            m.add(lin((_weight(options[i]), x[i]) for i in idx) >= self.floors[w])
        if self.purchases is None:
            fleet = loose(m, options, x, limits)
        else:
            fleet = units(m, options, self.live, x, ubx, self.buys, self.by_type_buys, limits)
        self.fleet = fleet
        max_types = 1 if limits.single_type else limits.max_types
        if max_types is not None:
            m.add(sum(fleet.use.values()) <= max_types)
        if limits.max_vendors is not None:
            vendor = {o.gpu: o.vendor for o in options}
            vuse = {v: m.new_bool_var(f"vendor_{v}") for v in sorted(set(vendor.values()))}
            for g, u in fleet.use.items():
                if g in vendor:
                    m.add_implication(u, vuse[vendor[g]])
                else:  # a type none of these options runs on: it serves nothing
                    m.add(u == 0)
            m.add(sum(vuse.values()) <= limits.max_vendors)
        if limits.max_usd is not None:
            m.add(fleet.cost <= int(limits.max_usd))
        if limits.power_cap_w is not None:
            m.add(fleet.power <= limits.power_cap_w)
        # cost first, then GPUs owned, then GPUs the replicas use (no idle replicas in the
        # plan), then the most demand served (headroom). Fleets equal on all four (the same
        # cost and GPUs, serving as much: e.g. 15 one-GPU replicas or 1 + 7 two-GPU ones) are
        # left to the search, which is deterministic. The last term is scaled past the
        # largest service possible; where that could overflow 64 bits (CP-SAT refuses such a
        # model) the plan is left to the first three.
        used = lin((o.gpus, x[i]) for i, o in enumerate(options))
        primary = fleet.cost * TIE_SCALE + fleet.gpus + used
        served = lin((o.capacity, x[i]) for i, o in enumerate(options))
        most = sum(o.capacity * ub for o, ub in zip(options, ubx, strict=True)) + 1
        m.minimize(primary * most - served)
        if m.validate():
            m.minimize(primary)

    def solve(
        self,
        exclude: list[dict[str, int]] | None = None,
        cost_floor: int | None = None,
        start: Solution | None = None,
    ) -> Solution:
        """The cheapest fleet that differs from each of ``exclude``, which extends the
        exclusions of this model's earlier solves (a list that only grows)."""
        if self.empty:
            return _no_plan()
        exclude = exclude or []
        if exclude[: len(self.excluded)] != self.excluded:
            raise ValueError("a fleet model's exclusions only grow")
        if self.covers is not None and _meets_limits(
            self.options, self.covers, self.limits, exclude
        ):
            return self.covers
        if self.m is None:
            self._build()
        m, x, fleet, options = self.m, self.x, self.fleet, self.options
        m.clear_hints()
        # a known fleet (its replicas indexed as ``options``) seeds it, else the covers
        hint = self.hint if start is None else [start.replicas.get(i, 0) for i in range(len(x))]
        for i in self.live:
            m.add_hint(x[i], hint[i])
        if start is not None and self.purchases is not None:
            for j, v in enumerate(fleet.y):
                if not isinstance(v, int):
                    m.add_hint(v, start.units.get(j, 0))
                    m.add_hint(fleet.spare[j], start.spares.get(j, 0))
        for prev in exclude[len(self.excluded) :]:
            _forbid(m, fleet.use, fleet.counts, prev)
        self.excluded = list(exclude)
        # a floor on the cost (the previous alternative's proven optimum: each excludes more,
        # so none is cheaper) gives the LP the bound the packing's coupling of several
        # workloads hides: three_workloads.yaml's four alternatives 350-450 -> 230-260 ms.
        # Alone, one workload's LP is tight already and the extra row slows it (57-69 ->
        # 73-83 ms). Floors only rise, so each new row makes the earlier ones redundant
        if cost_floor and len(self.required) > 1:
            m.add(fleet.cost >= cost_floor)
        solver = _solver(m, self.work_limit, len(self.required), self.one_type)
        state = solver.solve(m)
        if state not in (cpsat.OPTIMAL, cpsat.FEASIBLE):
            return _no_plan(state)
        reps = {i: int(solver.value(v)) for i, v in enumerate(x) if solver.value(v) > 0}
        if self.purchases is None:
            return _solution(options, reps, state)
        y, spare = fleet.y, fleet.spare
        return Solution(
            state,
            reps,
            {g: int(solver.value(n)) for g, n in fleet.counts.items() if solver.value(n) > 0},
            int(solver.value(fleet.cost)),
            int(solver.value(fleet.gpus)),
            {j: int(solver.value(v)) for j, v in enumerate(y) if _bought(solver, v)},
            {j: int(solver.value(v)) for j, v in enumerate(spare) if _bought(solver, v)},
        )


def _bought(solver, v) -> bool:
    return not isinstance(v, int) and solver.value(v) > 0


def _model():
    return cpsat.new_model()


def _solver(model, work_limit: float, workloads: int = 1, one_type: bool = False):
    """One worker, a fixed seed and a deterministic-time limit: byte-identical answers."""
    solver = cpsat.new_solver(model)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = work_limit
    # Ctrl-C stops the command, not just the search: CP-SAT would otherwise take it, stop
    # early and hand back a plan that is not the cheapest (a sweep would write it as a row)
    solver.parameters.catch_sigint_signal = False
    # these models are small (tens of options, a few unit kinds): presolve, symmetry detection
    # and probing cost more than they find (a catalogue-wide model solves about 2.5x faster)
    solver.parameters.cp_model_presolve = False
    solver.parameters.symmetry_level = 0
    solver.parameters.cp_model_probing_level = 0
    # the generic cuts (Gomory, MIR, zero-half, clique) cost more than they cut on these
    # models. Branching only on the LP's solution (LP_SEARCH) was faster on most of them but
    # fragile: after a recalibration one 14-variable per-type model took 2.4 s (5.4 units of
    # deterministic work) under it. Over every model the shipped scenarios and benchmarks
    # solve (251): LP branching 3.26 s, slowest 2.4 s; the automatic search 0.89 s, slowest
    # 0.11 s; the same optimum for each
    solver.parameters.search_branching = cpsat.search_branching("AUTOMATIC_SEARCH")
    solver.parameters.add_cg_cuts = False
    solver.parameters.add_mir_cuts = False
    solver.parameters.add_zero_half_cuts = False
    solver.parameters.add_clique_cuts = False
    # workloads sharing units couple through the packing, which the full LP relaxation
    # bounds far better (three-workload catalogue warm solve 2.1 -> 1.7 s); alone, one
    # workload's model solves faster without it (0.54 vs 0.83 s)
    if workloads > 1:
        solver.parameters.linearization_level = 2
    # one GPU type (each type's best fleet, a one-type scenario): what is left is covering
    # the demand with replicas and packing them into whole units, integer knapsack rows that
    # MIR and zero-half cuts close. Over the 223 such models the shipped scenarios and
    # benchmarks solve: 0.17 -> 0.010 units of deterministic work (slowest 0.049 -> 0.003),
    # the same optimum for each; on models of several types they cost more (0.11 -> 0.46)
    if one_type:
        solver.parameters.add_mir_cuts = True
        solver.parameters.add_zero_half_cuts = True
    return solver


def _weight(o: Option) -> int:
    return o.cost * TIE_SCALE + o.gpus


def _solution(options: list[Option], reps: dict[int, int], status: str) -> Solution:
    by_type: dict[str, int] = {}
    for i, n in reps.items():
        by_type[options[i].gpu] = by_type.get(options[i].gpu, 0) + options[i].gpus * n
    return Solution(
        status,
        reps,
        by_type,
        sum(options[i].cost * n for i, n in reps.items()),
        sum(options[i].gpus * n for i, n in reps.items()),
    )


def _meets_limits(options: list[Option], sol: Solution, limits: Limits, exclude) -> bool:
    """Whether a loose-GPU fleet satisfies every fleet limit and differs from every excluded
    fleet (the shortcut applies only without fixed costs)."""
    if limits.type_cost or limits.spares or limits.max_vendors is not None:
        return False
    by_type = sol.gpus_by_type
    if limits.available and any(n > limits.available.get(g, n) for g, n in by_type.items()):
        return False
    max_types = 1 if limits.single_type else limits.max_types
    if max_types is not None and len(by_type) > max_types:
        return False
    if limits.max_usd is not None and sol.cost > int(limits.max_usd):
        return False
    power = sum(options[i].power_w * n for i, n in sol.replicas.items())
    if limits.power_cap_w is not None and power > limits.power_cap_w:
        return False
    return allowed(by_type, exclude or [])


def allowed(by_type: dict[str, int], exclude: list[dict[str, int]]) -> bool:
    """Whether a fleet (GPUs per type) is an alternative to every fleet in ``exclude``."""
    return all(_differs(by_type, prev) for prev in exclude)


def _differs(by_type: dict[str, int], prev: dict[str, int]) -> bool:
    """Whether a fleet (GPUs per type) is an alternative to ``prev`` (see :func:`_forbid`)."""
    kinds = {g for g, n in prev.items() if n}
    if set(by_type) == kinds:
        return False
    return not all(by_type.get(g, 0) >= n for g, n in prev.items() if n)


@lru_cache(maxsize=4096)
def _cover(
    caps: tuple[int, ...], weights: tuple[int, ...], need: int
) -> tuple[int, tuple[int, ...]]:
    m = _model()
    x = [m.new_int_var(0, -(-need // c), f"x{i}") for i, c in enumerate(caps)]
    m.add(cpsat.weighted_sum(x, caps) >= need)
    m.minimize(cpsat.weighted_sum(x, weights))
    solver = _solver(m, WORK_LIMIT)
    if solver.solve(m) != cpsat.OPTIMAL:
        return 0, tuple(0 for _ in caps)  # no proven floor: 0 is still a valid bound
    return int(solver.objective_value), tuple(int(solver.value(v)) for v in x)


def _cheapest_cover(options: list[Option], need: int) -> tuple[int, tuple[int, ...]]:
    """One workload alone: the least objective covering ``need``, and its replica counts."""
    caps = tuple(o.capacity for o in options)
    weights = tuple(_weight(o) for o in options)
    return _cover(caps, weights, need)


def _forbid(m, use: dict, counts: dict, prev: dict[str, int]) -> None:
    """A distinct fleet: a different set of GPU types than ``prev`` (one more idle server of
    the same types is not an alternative a buyer needs to see), and not ``prev``'s GPUs with
    other types added (``prev`` alone serves every workload: what is added would idle)."""
    if any(n and g not in use for g, n in prev.items()):
        return  # ``prev`` runs on a type this model cannot buy: every plan here differs
    m.add_bool_or([use[g].negated() if prev.get(g) else use[g] for g in use])
    fewer = []
    for g, n in sorted(prev.items()):
        if n:
            b = m.new_bool_var(f"fewer_{g}")
            m.add(counts[g] <= n - 1).only_enforce_if(b)
            fewer.append(b)
    m.add_bool_or(fewer)
