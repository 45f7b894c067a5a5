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

The names load their module on first use (``planner --help`` does not import the solver).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

_WHERE = {
    "ScenarioError": ".errors",
    "SweepStopped": ".errors",
    "Comparison": ".results",
    "Plan": ".results",
    "PlanResult": ".results",
    "Sweep": ".results",
    "Scenario": ".scenario",
    "load_scenario": ".scenario",
    "compare": ".solve",
    "plan_scenario": ".solve",
    "sweep": ".sweep",
}
__all__ = sorted([*_WHERE, "solve"])


def solve(scenario: Scenario | str, top: int = 5, presets: tuple[str, ...] = ()) -> PlanResult:
    """The cheapest feasible fleet and ``top - 1`` next-best distinct fleets (a scenario, or
    the path of a scenario file)."""
    from .scenario import Scenario, load_scenario
    from .solve import plan_scenario

    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    return plan_scenario(sc, presets, top=top)


class _Package(types.ModuleType):
    """The functions ``planner.solve`` and ``planner.sweep`` share their names with modules
    of this package; loading those modules would set the module objects as the package's
    attributes (the import system does that), so such a setting is ignored here."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("solve", "sweep") and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'planner' has no attribute '{name}'")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


if TYPE_CHECKING:
    from .errors import ScenarioError, SweepStopped
    from .results import Comparison, Plan, PlanResult, Sweep
    from .scenario import Scenario, load_scenario
    from .solve import compare, plan_scenario
    from .sweep import sweep
