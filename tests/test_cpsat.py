"""The optimiser's CP-SAT layer (planner/cpsat.py): built on OR-Tools' compiled model builder,
it gives the answers ``cp_model`` gives, model for model, and a solve never loads pandas."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner import cpsat, load_scenario
from planner import optimize as opt
from planner.options import SearchSpace

ROOT = Path(__file__).resolve().parents[1]
needs_helper = pytest.mark.skipif(cpsat._CMH is None, reason="OR-Tools before 9.12: cp_model only")


def _both(monkeypatch, run):
    """``run()`` on the compiled builder, then on ``cp_model``."""
    fast = run()
    monkeypatch.setattr(opt, "_model", lambda: cpsat.new_model(use_helper=False))
    slow = run()
    return fast, slow


@needs_helper
@pytest.mark.parametrize(
    "scenario", ["chat-assistant", "two-workloads", "budget-capped", "coding-agents"]
)
def test_same_fleet_as_cp_model(monkeypatch, scenario):
    pl = SearchSpace(load_scenario(ROOT / "scenarios" / f"{scenario}.yaml"))
    lim = pl.limits()
    opt._cover.cache_clear()

    def run():
        opt._cover.cache_clear()
        main = pl.run(pl.options, lim)
        # an exclusion (bool_or over negated literals), a vendor cap (implications), spares
        other = pl.run(
            pl.options, replace(lim, max_vendors=1, spares=1), exclude=[main.gpus_by_type]
        )
        return main, other

    fast, slow = _both(monkeypatch, run)
    assert fast == slow
    assert fast[0].found


@needs_helper
def test_small_model_all_methods():
    """Every method the optimiser calls, on a model small enough to solve by hand: two items
    (3 and 5 units of capacity, costing 4 and 6), cover 11, an implication and a clause."""
    answers = []
    for helper in (True, False):
        m = cpsat.new_model(use_helper=helper)
        x = m.new_int_var(0, 10, "x")
        y = m.new_int_var(0, 10, "y")
        b = m.new_bool_var("b")
        m.add(3 * x + 5 * y >= 11)
        m.add(y >= 1).only_enforce_if(b)
        m.add(y == 0).only_enforce_if(b.negated())
        c = m.new_bool_var("c")
        m.add_implication(b, c)
        m.add_bool_or([c.negated(), b])
        m.add_hint(x, 4)
        m.minimize(4 * x + 6 * y + c)
        assert m.validate() == ""
        s = cpsat.new_solver(m)
        s.parameters.num_workers = 1
        status = s.solve(m)
        answers.append((status, s.value(x), s.value(y), s.value(b), s.value(c), s.objective_value))
    # 2x + 1y = 11 units for 14, plus c (b forces it): 15
    assert answers[0] == answers[1] == (cpsat.OPTIMAL, 2, 1, 1, 1, 15.0)


def test_infeasible_status():
    m = cpsat.new_model()
    x = m.new_int_var(0, 3, "x")
    m.add(x >= 5)
    m.minimize(x)
    assert cpsat.new_solver(m).solve(m) == cpsat.INFEASIBLE


def test_solve_does_not_import_pandas():
    code = (
        "import sys; import planner; "
        f"planner.solve(planner.load_scenario(r'{ROOT / 'scenarios' / 'chat-assistant.yaml'}')); "
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    expected = "True" if cpsat._CMH is None else "False"
    assert out.stdout.strip() == expected
