"""The inverse planner: people, targets, budgets and vendors in a scenario -> the cheapest
feasible fleet, from the forward estimator's numbers.

The Python API is what the CLI calls; every result's ``to_dict()`` is the CLI's
``--format json`` and ``to_frame()`` the ranked CSV::

    import planner
    sc = planner.load_scenario("scenarios/chat-assistant.yaml")   # or planner.Scenario(...)
    result = planner.solve(sc)                 # = planner solve
    result.to_dict(); result.to_frame()
    planner.compare(sc, by="vendor")           # = planner compare
    planner.sweep("scenarios/chat-assistant.yaml", {"workloads.chat.users": [1000, 2000]})
"""

from __future__ import annotations

from .errors import ScenarioError
from .results import Comparison, Plan, PlanResult, Sweep
from .scenario import Scenario, load_scenario
from .solve import compare, plan_scenario
from .sweep import sweep


def solve(scenario: Scenario | str, top: int = 5, presets: tuple[str, ...] = ()) -> PlanResult:
    """The cheapest feasible fleet and ``top - 1`` next-best distinct fleets (a scenario, or
    the path of a scenario file)."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    return plan_scenario(sc, presets, top=top)


__all__ = [
    "Comparison",
    "Plan",
    "PlanResult",
    "Scenario",
    "ScenarioError",
    "Sweep",
    "compare",
    "load_scenario",
    "plan_scenario",
    "solve",
    "sweep",
]
