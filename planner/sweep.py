"""What-if sweeps: rerun the solve for every combination of overridden scenario values."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from .errors import ScenarioError
from .results import Sweep
from .scenario import load_scenario
from .solve import plan_scenario


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


MAX_COMBINATIONS = 1000  # solves in one sweep (each is a full solve)


def sweep_combinations(sets: list[tuple[str, list]]) -> list[dict]:
    keys = [k for k, _ in sets]
    total = math.prod(len(v) for _, v in sets)
    if total > MAX_COMBINATIONS:
        raise ScenarioError(
            f"--set gives {total:,} combinations; a sweep may have at most {MAX_COMBINATIONS:,}"
        )
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*[v for _, v in sets])
    ]


def sweep(
    scenario: str | Path,
    sets: dict[str, list] | list[tuple[str, list]],
    presets: tuple[str, ...] = (),
) -> Sweep:
    """One solve (the recommendation only) per combination of ``sets`` values, e.g.
    ``{"workloads.chat.users": [1000, 2000], "budget.max_usd": [2e6, 4e6]}``; keys are the
    scenario's dotted keys, list items addressed by name."""
    pairs = list(sets.items()) if isinstance(sets, dict) else list(sets)
    combos = sweep_combinations(pairs)
    results = []
    for combo in combos:
        sc = load_scenario(scenario, overrides=combo)
        results.append((combo, plan_scenario(sc, presets, top=1)))
    return Sweep([k for k, _ in pairs], results)
