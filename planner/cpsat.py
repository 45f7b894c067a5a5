"""The part of OR-Tools CP-SAT the optimiser uses: a model of integer and Boolean variables
with linear constraints, a hint and an objective, and a solver returning their values.

``ortools.sat.python.cp_model`` imports pandas when it loads (for its ``*_series`` helpers,
which the planner never calls): about 0.4 s of CPU, a third of a cold ``planner solve``.
Since OR-Tools 9.12 that module is a thin layer over the compiled model builder
``ortools.sat.python.cp_model_helper`` (the variables, expressions, constraints and the
solver are its C++ objects); where that builder is present this module calls it directly,
the same calls ``cp_model`` makes for these methods; on older OR-Tools it is ``cp_model``
itself. ``tests/test_cpsat.py`` solves the same models both ways.
"""

from __future__ import annotations

from typing import Any

OPTIMAL, FEASIBLE, INFEASIBLE = "optimal", "feasible", "infeasible"


def _helper() -> Any:
    """The compiled builder, if it carries every piece this module calls (None if not)."""
    try:
        from ortools.sat.python import cp_model_helper as cmh
        from ortools.util.python import sorted_interval_list  # noqa: F401 (the Domain type)
    except ImportError:
        return None
    needed = ("CpBaseModel", "SolveWrapper", "ResponseHelper", "SatParameters", "IntVar")
    base = getattr(cmh, "CpBaseModel", None)
    if not all(hasattr(cmh, n) for n in needed) or not all(
        hasattr(base, m)
        for m in ("_add_bounded_linear_expression", "_add_bool_argument_constraint")
    ):
        return None
    return cmh


_CMH = _helper()


class _HelperModel:
    """A CP-SAT model built on the compiled builder (see the module's docstring)."""

    def __init__(self) -> None:
        from ortools.util.python.sorted_interval_list import Domain

        self._m = _CMH.CpBaseModel(None)
        self._domain = Domain

    def new_int_var(self, lb: int, ub: int, name: str):
        return _CMH.IntVar(self._m.model_proto).with_name(name).with_domain(self._domain(lb, ub))

    def new_bool_var(self, name: str):
        return self.new_int_var(0, 1, name)

    def add(self, ct):
        if isinstance(ct, _CMH.BoundedLinearExpression):
            return self._m._add_bounded_linear_expression(ct)
        if isinstance(ct, bool):  # an expression folded to a constant by Python
            return self.add_bool_or([True] if ct else [])
        raise TypeError(f"not a linear constraint: {type(ct).__name__}")

    def add_bool_or(self, literals):
        return self._m._add_bool_argument_constraint(
            _CMH.BoolArgumentConstraint.bool_or, list(literals)
        )

    def add_implication(self, a, b):
        """``a`` implies ``b``."""
        return self._m._add_bool_argument_constraint(
            _CMH.BoolArgumentConstraint.bool_and, [b]
        ).only_enforce_if(a)

    def clear_hints(self) -> None:
        self._m.model_proto.clear_solution_hint()

    def add_hint(self, var, value: int) -> None:
        hint = self._m.model_proto.solution_hint
        hint.vars.append(var.index)
        hint.values.append(int(value))

    def minimize(self, obj) -> None:
        """An integer linear objective (a constant or an expression)."""
        proto = self._m.model_proto
        proto.clear_objective()
        if isinstance(obj, int):
            proto.objective.offset = obj
        else:
            flat = _CMH.FlatIntExpr(obj)
            for var in flat.vars:
                proto.objective.vars.append(var.index)
            proto.objective.coeffs.extend(flat.coeffs)
            proto.objective.offset = flat.offset
        proto.objective.scaling_factor = 1.0

    def validate(self) -> str:
        """Why the model is invalid ('' when it is valid)."""
        return _CMH.CpSatHelper.validate_model(self._m.model_proto)


class _HelperSolver:
    def __init__(self) -> None:
        self.parameters = _CMH.SatParameters()
        self._response = None

    def solve(self, model: _HelperModel) -> str:
        wrapper = _CMH.SolveWrapper()
        wrapper.set_parameters(self.parameters)
        self._response = wrapper.solve(model._m.model_proto)
        return _STATUS.get(self._response.status, "unknown")

    def value(self, expr) -> int:
        return _CMH.ResponseHelper.value(self._response, expr)

    @property
    def objective_value(self) -> float:
        return self._response.objective_value


class _CpModelSolver:
    """Older OR-Tools: ``cp_model``'s own solver, answering with this module's statuses."""

    def __init__(self) -> None:
        from ortools.sat.python import cp_model

        self._s = cp_model.CpSolver()
        self.parameters = self._s.parameters
        self._status = {
            cp_model.OPTIMAL: OPTIMAL,
            cp_model.FEASIBLE: FEASIBLE,
            cp_model.INFEASIBLE: INFEASIBLE,
        }

    def solve(self, model) -> str:
        return self._status.get(self._s.solve(model), "unknown")

    def value(self, expr) -> int:
        return self._s.value(expr)

    @property
    def objective_value(self) -> float:
        return self._s.objective_value


if _CMH is not None:
    _STATUS = {
        _CMH.CpSolverStatus.OPTIMAL: OPTIMAL,
        _CMH.CpSolverStatus.FEASIBLE: FEASIBLE,
        _CMH.CpSolverStatus.INFEASIBLE: INFEASIBLE,
    }


def new_model(use_helper: bool = True):
    """An empty model (``use_helper=False``: through ``cp_model``, as older OR-Tools has it)."""
    if use_helper and _CMH is not None:
        return _HelperModel()
    from ortools.sat.python import cp_model

    return cp_model.CpModel()


def new_solver(model) -> Any:
    """A solver for ``model`` (its ``parameters`` are CP-SAT's SatParameters)."""
    return _HelperSolver() if isinstance(model, _HelperModel) else _CpModelSolver()


def weighted_sum(exprs, coeffs):
    """``Σ coeffs[i]·exprs[i]`` as one expression node. A Python ``sum`` of products builds
    a node per term: about five times slower on a catalogue-wide model's 250 options."""
    if _CMH is not None:
        return _CMH.LinearExpr.weighted_sum(list(exprs), list(coeffs))
    from ortools.sat.python import cp_model

    return cp_model.LinearExpr.weighted_sum(list(exprs), list(coeffs))


def search_branching(name: str):
    """A SatParameters.SearchBranching value by name (e.g. 'LP_SEARCH')."""
    if _CMH is not None:
        return getattr(_CMH.SatParameters.SearchBranching, name)
    from ortools.sat.python import cp_model

    return getattr(cp_model, name)
