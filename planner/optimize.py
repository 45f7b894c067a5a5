"""OR-Tools CP-SAT: integer replicas per candidate, cheapest fleet that covers every workload.

Deterministic: one search worker and a fixed seed, and options arrive in a stable order, so
the same scenario gives byte-identical output.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

TIE_SCALE = 1000  # objective = dollars × 1000 + GPUs: equal cost prefers fewer GPUs
# CP-SAT's deterministic time (its own work units, about seconds on a fast core), not the wall
# clock: a limit that binds does so at the same point however loaded the machine is, so the
# output stays byte-identical; a plan it cuts short is reported as not proven optimal.
WORK_LIMIT = 20.0


@dataclass(frozen=True)
class Option:
    """One way to serve one workload: a candidate replica and what it costs and holds."""

    workload: str
    gpu: str
    vendor: str
    gpus: int  # per replica
    capacity: int  # demand units per replica
    cost: int  # whole USD per replica over the horizon
    power_w: int  # facility watts per replica
    key: tuple  # stable identity for ordering and exclusion


@dataclass(frozen=True)
class Limits:
    single_type: bool = False
    available: dict[str, int] | None = None
    max_usd: float | None = None
    max_power_kw: float | None = None
    max_types: int | None = None  # at most this many GPU types in the fleet


@dataclass(frozen=True)
class Solution:
    """The solver's answer. ``status``: optimal | feasible (the time limit stopped the proof)
    | infeasible (no plan) | unknown (the time limit stopped it before any plan)."""

    status: str
    replicas: dict[int, int]  # option index -> replicas (non-zero only)
    gpus_by_type: dict[str, int]
    cost: int
    gpus: int

    @property
    def found(self) -> bool:
        return self.status in ("optimal", "feasible")

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


def _no_plan(status: str = "infeasible") -> Solution:
    return Solution(status, {}, {}, 0, 0)


def solve(
    options: list[Option],
    required: dict[str, int],
    limits: Limits,
    exclude: list[dict[str, int]] | None = None,
    work_limit: float = WORK_LIMIT,
) -> Solution:
    """Cheapest integer replica counts covering ``required`` units per workload."""
    from ortools.sat.python import cp_model  # imported on first solve: it loads pandas too

    by_workload = {w: [i for i, o in enumerate(options) if o.workload == w] for w in required}
    if not all(by_workload.values()):
        return _no_plan()
    # Every limit only removes fleets, so each workload's own cheapest cover bounds its part
    # of the joint cost from below. If those covers together meet every limit, they are the
    # optimum (proven by the bounds) and no search is needed; else they bound and seed it.
    hint, floors, proven = [0] * len(options), {}, True
    for w, idx in by_workload.items():
        floors[w], reps = _cheapest_cover([options[i] for i in idx], required[w])
        proven &= (
            sum(options[i].capacity * n for i, n in zip(idx, reps, strict=True)) >= required[w]
        )
        for i, n in zip(idx, reps, strict=True):
            hint[i] = n
    covers = _solution(options, {i: n for i, n in enumerate(hint) if n}, "optimal")
    if proven and _meets_limits(options, covers, limits, exclude):
        return covers
    m = cp_model.CpModel()
    x = []
    for i, o in enumerate(options):
        ub = -(-required[o.workload] // o.capacity)
        if limits.available and o.gpu in limits.available:
            ub = min(ub, limits.available[o.gpu] // o.gpus)
        x.append(m.NewIntVar(0, max(ub, 0), f"x{i}"))
        m.AddHint(x[i], hint[i])
    for w, idx in by_workload.items():
        m.Add(sum(options[i].capacity * x[i] for i in idx) >= required[w])
        m.Add(sum(_weight(options[i]) * x[i] for i in idx) >= floors[w])
    types = sorted({o.gpu for o in options})
    if limits.available:
        for g in types:
            if g in limits.available:
                m.Add(
                    sum(o.gpus * x[i] for i, o in enumerate(options) if o.gpu == g)
                    <= limits.available[g]
                )
    max_types = 1 if limits.single_type else limits.max_types
    if max_types is not None:
        use = {g: m.NewBoolVar(f"use_{g}") for g in types}
        for i, o in enumerate(options):
            m.Add(x[i] == 0).OnlyEnforceIf(use[o.gpu].Not())
        m.Add(sum(use.values()) <= max_types)
    if limits.max_usd is not None:
        m.Add(sum(o.cost * x[i] for i, o in enumerate(options)) <= int(limits.max_usd))
    if limits.max_power_kw is not None:
        m.Add(
            sum(o.power_w * x[i] for i, o in enumerate(options)) <= int(limits.max_power_kw * 1000)
        )
    if exclude:
        counts = {g: sum(o.gpus * x[i] for i, o in enumerate(options) if o.gpu == g) for g in types}
        for prev in exclude:
            _forbid(m, counts, prev)
    m.Minimize(sum(_weight(o) * x[i] for i, o in enumerate(options)))
    solver = _solver(work_limit)
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _no_plan("infeasible" if status == cp_model.INFEASIBLE else "unknown")
    reps = {i: int(solver.Value(v)) for i, v in enumerate(x) if solver.Value(v) > 0}
    return _solution(options, reps, "optimal" if status == cp_model.OPTIMAL else "feasible")


def _solver(work_limit: float):
    """One worker, a fixed seed and a deterministic-time limit: byte-identical answers."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = work_limit
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
    """Whether a fleet satisfies every fleet limit and differs from every excluded fleet."""
    by_type = sol.gpus_by_type
    if limits.available and any(n > limits.available.get(g, n) for g, n in by_type.items()):
        return False
    max_types = 1 if limits.single_type else limits.max_types
    if max_types is not None and len(by_type) > max_types:
        return False
    if limits.max_usd is not None and sol.cost > int(limits.max_usd):
        return False
    power = sum(options[i].power_w * n for i, n in sol.replicas.items())
    if limits.max_power_kw is not None and power > int(limits.max_power_kw * 1000):
        return False
    return not any(by_type == {g: n for g, n in prev.items() if n} for prev in exclude or [])


@lru_cache(maxsize=4096)
def _cover(
    caps: tuple[int, ...], weights: tuple[int, ...], need: int
) -> tuple[int, tuple[int, ...]]:
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = [m.NewIntVar(0, -(-need // c), f"x{i}") for i, c in enumerate(caps)]
    m.Add(sum(c * v for c, v in zip(caps, x, strict=True)) >= need)
    m.Minimize(sum(wt * v for wt, v in zip(weights, x, strict=True)))
    solver = _solver(WORK_LIMIT)
    if solver.Solve(m) != cp_model.OPTIMAL:
        return 0, tuple(0 for _ in caps)  # no proven floor: 0 is still a valid bound
    return int(solver.ObjectiveValue()), tuple(int(solver.Value(v)) for v in x)


def _cheapest_cover(options: list[Option], need: int) -> tuple[int, tuple[int, ...]]:
    """One workload alone: the least objective covering ``need``, and its replica counts."""
    caps = tuple(o.capacity for o in options)
    weights = tuple(_weight(o) for o in options)
    return _cover(caps, weights, need)


def _forbid(m: cp_model.CpModel, counts: dict, prev: dict[str, int]) -> None:
    """A distinct fleet: at least one GPU type is bought in a different number than ``prev``."""
    diffs = []
    for g, n in counts.items():
        same = m.NewBoolVar(f"same_{g}")
        m.Add(n == prev.get(g, 0)).OnlyEnforceIf(same)
        m.Add(n != prev.get(g, 0)).OnlyEnforceIf(same.Not())
        diffs.append(same.Not())
    m.AddBoolOr(diffs)
