"""Scenario files: YAML validated by pydantic; errors name the file, line and key."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import ScenarioError
from .kinds import KINDS
from .uncertain import find_distributions
from .workloads import STRICT
from .yaml_input import load_yaml, parse_yaml

MAX_ERRORS = 20  # errors listed at most; the count of the rest follows
MAX_WORKLOADS = 32  # workloads in one scenario: each multiplies the search
MAX_AVAILABLE = 10_000_000  # GPUs of one type: beyond any fleet on Earth


def _kind(v: Any) -> str:
    return (v.get("kind") or "llm") if isinstance(v, dict) else getattr(v, "kind", "llm")


# Each family is a `kind` with its own demand unit (the registry in planner.kinds); a
# workload without `kind` is an LLM.
Workload = Annotated[
    Union[tuple(Annotated[k.schema, Tag(name)] for name, k in KINDS.items())],  # noqa: UP007
    Discriminator(_kind),
]


class Fleet(BaseModel):
    model_config = STRICT
    gpus: list[str] | None = None  # allowed GPU types (default: the whole catalogue)
    vendors: list[Literal["nvidia", "amd", "intel"]] | None = None
    single_type: bool = False
    max_types: int | None = Field(None, ge=1, le=64, description="at most this many GPU types")
    max_gpus_per_replica: int = Field(16, ge=1, le=1024)
    available: dict[str, int] = {}  # GPUs obtainable per type
    # what is bought: whole servers (purchase) or cloud instances (rental); `gpu`: loose GPUs
    # at their own price, for owners of servers already
    unit: Literal["server", "gpu"] = "server"
    servers: dict[str, str] = {}  # GPU type -> the server preset to buy it in
    # consumer and workstation cards stay out unless asked for (GeForce's licence excludes
    # data-centre use; they have no server to rack them in)
    segments: list[Literal["datacenter", "workstation", "consumer"]] = ["datacenter"]
    max_vendors: int | None = Field(None, ge=1, le=8, description="at most this many vendors")
    spares: int = Field(0, ge=0, le=64, description="spare units per pool in use (N+k)")
    # only GPUs whose family's bandwidth and compute shares are both fitted on published
    # runs (those the accuracy figures cover), not the defaults fitted on other GPUs
    calibrated_only: bool = False

    @field_validator("available")
    @classmethod
    def _nonneg(cls, v: dict[str, int]) -> dict[str, int]:
        for k, n in v.items():
            if n < 0:
                raise ValueError(f"available[{k}] must be >= 0")
            if n > MAX_AVAILABLE:
                raise ValueError(f"available[{k}] must be at most {MAX_AVAILABLE:,}")
        return v


class Cost(BaseModel):
    model_config = STRICT
    basis: Literal["purchase", "rental"] = "purchase"
    years: float = Field(3, ge=0.1, le=50, description="horizon: purchase is paid off over it")
    electricity_usd_per_kwh: float = Field(0.10, ge=0, le=100)
    pue: float = Field(1.3, ge=1, le=10)
    cost_of_capital: float = Field(0.08, ge=0, le=10, description="annual rate on the capex")
    hosting_usd_per_kw_month: float = Field(
        0.0,
        ge=0,
        le=1e6,
        description="colocation/facility cost per kW of IT load per month (0: not included)",
    )
    # share of the hardware bill spent on the scale-out network (switch ports, optics,
    # cables): ~20% of total cluster cost in BOMs of 16 to 24,576 GPUs
    # (amcompute.com/blog/gpu-cluster-networking, read 2026-12)
    networking_share: float = Field(0.20, ge=0, lt=1)
    # fixed cost per GPU type in the fleet (people, its own stack and spares pool); null: the
    # documented default (planner.costs.PER_TYPE_USD_PER_YEAR)
    per_type_usd_per_year: float | None = Field(None, ge=0, le=1e9)
    clouds: list[str] | None = None  # rental: the clouds whose instances may be rented
    commitment: Literal["on-demand", "1y", "3y"] = "on-demand"  # rental price term


class Budget(BaseModel):
    model_config = STRICT
    max_usd: float | None = Field(
        None, gt=0, le=1e15, description="on the chosen basis, over the horizon"
    )
    max_power_kw: float | None = Field(None, gt=0, le=1e9)
    max_racks: int | None = Field(None, ge=1, le=1_000_000)
    max_kw_per_rack: float | None = Field(None, gt=0, le=1000)


class Scenario(BaseModel):
    model_config = STRICT
    name: str = "scenario"
    workloads: list[Workload] = Field(min_length=1, max_length=MAX_WORKLOADS)
    fleet: Fleet = Fleet()
    cost: Cost = Cost()
    budget: Budget = Budget()
    # size so the latency targets still hold when the estimator errs at this quantile of its
    # cross-validated residuals (null: the point estimate)
    confidence: float | None = Field(None, ge=0.5, le=0.95)
    # size as if the estimator erred at this quantile of its cross-validated residuals, either
    # way (below 0.5 faster than estimated): a Monte-Carlo input, drawn per sample with
    # `sweep --samples` (e.g. {dist: uniform, low: 0.05, high: 0.95}); a plan to buy wants
    # `confidence`, which is never rosier than the estimate
    error_quantile: float | None = Field(None, ge=0.05, le=0.95)

    @model_validator(mode="after")
    def _unique_names(self) -> Scenario:
        names = [w.name for w in self.workloads]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(dup)}")
        if self.confidence is not None and self.error_quantile is not None:
            raise ValueError(
                "give confidence (size a plan to hold at a quantile of the estimator's error) "
                "or error_quantile (where the estimator errs, for a Monte-Carlo sweep), not both"
            )
        return self

    @property
    def error_at(self) -> tuple[float, bool] | None:
        """The quantile of the estimator's error the plan is sized at, and whether it may be
        rosier than the estimate (error_quantile) or not (confidence); None: the estimate."""
        if self.error_quantile is not None:
            return self.error_quantile, True
        return None if self.confidence is None else (self.confidence, False)


def _locate(node: yaml.Node | None, loc: tuple[Any, ...]) -> tuple[int | None, str]:
    """1-based line and dotted key of the YAML node at a pydantic error location. Location
    parts that are not in the file (the union tag 'llm') are skipped."""
    line = node.start_mark.line + 1 if node is not None else None
    keys: list[str] = []
    for key in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        if nxt is None:
            if isinstance(key, str) and key in KINDS:
                continue  # a discriminator tag, not a key of the file
            keys.append(str(key))  # a missing key: report it at its parent's line
            continue
        node = nxt
        keys.append(str(key))
        line = node.start_mark.line + 1
    return line, ".".join(keys)


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> Scenario:
    """Read and validate a scenario file. ``overrides`` applies dotted-key values first."""
    p = Path(path)
    node, data = load_yaml(p)
    return validate_scenario(p, node, data, overrides)


def scenario_from_text(text: str, name: str = "scenario") -> Scenario:
    """A scenario given as YAML or JSON text (the page's solve), checked as a file is;
    errors name ``name`` and the line."""
    p = Path(name)
    node, data = parse_yaml(text, p)
    return validate_scenario(p, node, data)


def validate_scenario(
    p: Path, node: yaml.Node | None, data: Any, overrides: dict[str, Any] | None = None
) -> Scenario:
    """A scenario file's parsed contents (:func:`load_yaml`), with ``overrides``, validated;
    errors name the file, line and key."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{p}: a scenario must be a mapping with at least 'workloads'")
    if overrides:
        data = apply_overrides(data, overrides, p)
    dists = find_distributions(data)
    if dists:
        keys = ", ".join(dists)
        raise ScenarioError(
            f"{p}: {keys} {'is a distribution' if len(dists) == 1 else 'are distributions'}: "
            f"a plan is sized on numbers; `planner sweep {p} --samples K` draws from "
            f"{'it' if len(dists) == 1 else 'them'}"
        )
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
        lines = []
        for err in errors[:MAX_ERRORS]:
            line, key = _locate(node, err["loc"])
            where = f"{p}:{line}" if line else str(p)
            lines.append(f"{where}: {key}: {err['msg']}")
        if len(errors) > MAX_ERRORS:
            lines.append(f"... and {len(errors) - MAX_ERRORS:,} more")
        raise ScenarioError("invalid scenario\n" + "\n".join(lines)) from None


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any], path: Path) -> dict[str, Any]:
    """Set dotted keys (``budget.max_usd``, ``workloads.chat.users``): a list element is
    addressed by its ``name`` or index."""
    import copy

    data = copy.deepcopy(data)
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        cur: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(cur, list):
                idx = next(
                    (
                        j
                        for j, it in enumerate(cur)
                        if isinstance(it, dict) and it.get("name") == part
                    ),
                    None,
                )
                if idx is None and part.isdigit() and int(part) < len(cur):
                    idx = int(part)
                if idx is None:
                    names = [it.get("name") for it in cur if isinstance(it, dict)]
                    raise ScenarioError(
                        f"{path}: --set {dotted}: no list item named '{part}' "
                        f"(have: {', '.join(map(str, names))})"
                    )
                if last:
                    cur[idx] = value
                else:
                    cur = cur[idx]
            elif isinstance(cur, dict):
                if last:
                    cur[part] = value
                else:
                    cur = cur.setdefault(part, {})
            else:
                raise ScenarioError(f"{path}: --set {dotted}: '{part}' is not inside a mapping")
    return data
