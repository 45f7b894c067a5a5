"""The search space of one scenario: which models, which GPU types at what cost, and every
candidate replica (GPU type x size x split, or a disaggregated unit) with its capacity under
load, as options for the optimiser. Options dominated within a GPU type are dropped."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from estimator import (
    Accelerator,
    LanguageModel,
    Parallel,
    UnknownNameError,
    get_gpu,
    get_model,
    gpu_catalog,
)
from estimator.bands import family_time_factor
from estimator.efficiency import efficiency_key, fitted
from estimator.families import family_of, get_family_model, is_family_model
from estimator.resolve import weights_for

from .candidates import Candidate, enumerate_candidates
from .capacity import (
    Capacity,
    llm_capacities,
    llm_capacity,
    pareto_splits,
    prefetch_steps,
    workload_part,
)
from .costs import PER_TYPE_USD_PER_YEAR, Unit, gpu_unit, instance_unit, server_unit
from .errors import ScenarioError
from .family_capacity import FamilyCapacity
from .kinds import KINDS, demand_of, family_capacity
from .optimize import FleetModel, Limits, Option, Purchase, Solution, solve
from .procurement import check_clouds, instances_for, server_catalog, servers_for
from .scenario import Scenario
from .workloads import LLMWorkload

RACK_UNITS = 42  # usable height of a standard rack (EIA-310 42U)
LARGE_DEMAND = 1e6  # seats (or docs/s, streams...) beyond which a plan says so

# Prefill:decode replica ratios tried for disaggregated serving.
DISAGG_SPLITS = ((1, 1), (1, 2), (1, 3), (2, 1), (2, 3), (1, 4))


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


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


FIRST_STAGE = 4  # replica sizes searched together first: (almost) every type offers them
# a search stage costs about as much as this many candidates' searches (its load-point calls'
# fixed cost): a stage of fewer takes every larger size with it, some of them needlessly
MERGE_BELOW = 32


@dataclass
class _LLMSearch:
    """One language-model workload's candidates, grouped by (GPU type, replica size) in
    enumeration order, and what its search has found so far."""

    w: LLMWorkload
    groups: dict[tuple[str, int], list]
    per_gpu: dict[str, dict[int, float]] = field(default_factory=dict)  # best seats per GPU
    seen: list = field(default_factory=list)  # (enumeration index, candidate, capacity)
    best: dict = field(default_factory=dict)  # (type, GPUs) -> (seats, option)
    order: dict[int, int] = field(init=False)  # candidate (by identity) -> enumeration index
    part: tuple = field(init=False)  # capacity.workload_part of w: its steps' key part

    def __post_init__(self) -> None:
        self.part = workload_part(self.w)
        members = (c for group in self.groups.values() for c, _ in group)
        self.order = {id(c): i for i, c in enumerate(members)}

    def stops(self, gpu: str, n: int) -> bool:
        """Seats per GPU rise with replica size until the model has the bandwidth it needs,
        then fall (more collectives, fewer GPUs' worth of work): once they fall, larger
        replicas of this type are not worth offering."""
        smaller = [v for size, v in self.per_gpu.get(gpu, {}).items() if size < n]
        return len(smaller) >= 2 and smaller[-1] > 0 and smaller[-1] < smaller[-2]


def _stage(searches: list[_LLMSearch], sizes: list[int]) -> list[tuple[_LLMSearch, list]]:
    """The candidates to search for replicas of these sizes, each group's splits that no
    other beats (:func:`~planner.capacity.pareto_splits`), skipping the GPU types that have
    stopped growing."""
    groups = [
        (s, members)
        for s in searches
        for (gpu, n), members in s.groups.items()
        if n in sizes and not s.stops(gpu, n)
    ]
    for s in searches:  # every split's steps on every GPU type at once, per workload
        prefetch_steps([ev for t, members in groups if t is s for _, ev in members], s.w, s.part)
    return [(s, list(pareto_splits(members, s.w, s.part))) for s, members in groups]


def _first(t: tuple):
    return t[0]


def _undominated(kept: list[tuple[int, _Option]]) -> list[_Option]:
    """Drop options dominated within a GPU type: no more units for as many GPUs."""
    by_type: dict[str, list[tuple[int, _Option]]] = {}
    for units, o in kept:
        by_type.setdefault(o.opt.gpu, []).append((units, o))
    return [
        o
        for units, o in kept
        if not any(
            u2 >= units
            and o2.opt.gpus <= o.opt.gpus
            and o2 is not o
            and (u2 > units or o2.opt.gpus < o.opt.gpus)
            for u2, o2 in by_type[o.opt.gpu]
        )
    ]


class SearchSpace:
    """Prepared search space for one scenario: models, allowed GPUs, costs, and every
    candidate's capacity as optimiser options."""

    def __init__(self, sc: Scenario, presets: tuple[str, ...] = ()):
        self.sc, self.presets = sc, presets
        self.notes: list[str] = []
        llm = {w.name for w in sc.workloads if KINDS[w.kind].language_model}
        for w in sc.workloads:
            if w.name in llm:
                w._error_at = sc.error_at
        if sc.confidence is not None:
            self.notes.append(
                f"sized at confidence {sc.confidence:g}: each latency target holds when the "
                "estimate errs at that quantile of its cross-validated residuals (see `bands` "
                "in `planner estimate --format json`; the other families' passes by their "
                "family's band)"
            )
        if sc.error_quantile is not None:
            self.notes.append(
                f"sized as if every estimate erred at quantile {sc.error_quantile:g} of its "
                "cross-validated residuals (below 0.5: faster than estimated); a plan to "
                "buy is sized with confidence instead"
            )
        self.models: dict[str, LanguageModel] = {
            w.name: self._language_model(w) for w in sc.workloads if w.name in llm
        }
        self.family_models = {
            w.name: self._family_model(w) for w in sc.workloads if w.name not in llm
        }
        self.gpus = self._allowed_gpus()
        if sc.cost.basis == "rental" and sc.fleet.unit != "gpu":  # what _units_for rents
            check_clouds(sc.cost.clouds or [], self.presets)
        self.units: dict[str, list[Unit]] = {}
        left_out: dict[str, list[str]] = {}
        for g in list(self.gpus):
            units, why = self._units_for(g)
            if units:
                self.units[g.name] = units
            else:
                left_out.setdefault(why, []).append(g.name)
                self.gpus.remove(g)
        why_out = [f"left out {', '.join(gs)}: {why}" for why, gs in left_out.items()]
        self.notes += why_out
        if not self.gpus:
            raise ScenarioError(
                "fleet: no allowed GPU type can be bought or rented as asked ("
                + "; ".join(why_out)
                + ")"
            )
        # the optimiser's purchases, index for index with the units they price
        self.unit_list = [u for g in sorted(self.units) for u in self.units[g]]
        self.purchases = [
            Purchase(
                u.gpu,
                u.vendor,
                u.gpus,
                u.cost(sc.cost.years),
                int(math.ceil(u.power_kw * 1000)),
                u.rack_units,
                spans=u.spans,
            )
            for u in self.unit_list
        ]
        c = sc.cost
        self.per_type_usd_per_year = float(
            PER_TYPE_USD_PER_YEAR if c.per_type_usd_per_year is None else c.per_type_usd_per_year
        )
        self.demands = {w.name: demand_of(w) for w in sc.workloads}
        for d in self.demands.values():
            if d.amount > LARGE_DEMAND:
                self.notes.append(
                    f"workload '{d.workload}': {d.amount:,.0f} {d.unit} is an unusually large "
                    f"demand ({d.arithmetic}); check the inputs before trusting the scale"
                )
        for w in sc.workloads:
            if w.name in llm:
                note = self.models[w.name].context_note(w.input_tokens + w.output_tokens)
                if note:
                    self.notes.append(f"workload '{w.name}': {note}")
        for w in sc.workloads:
            if KINDS[w.kind].note and (said := KINDS[w.kind].note(w, self.family_models[w.name])):
                self.notes.append(said)
        self.excluded: dict[str, list[tuple[str, str]]] = {}
        self.best_seen: dict[str, list[tuple[Candidate, Capacity]]] = {}
        by_workload: dict[str, list[_Option]] = {}
        searches = []
        for w in sc.workloads:
            if w.name in llm:
                searches.append(self._llm_search(w))
            else:
                by_workload[w.name] = self._family_options(w)
        by_workload |= self._llm_options(searches)
        self.options: list[_Option] = [o for w in sc.workloads for o in by_workload[w.name]]

    def _units_for(self, gpu: Accelerator) -> tuple[list[Unit], str]:
        """What this GPU type is bought or rented as, or why it cannot be."""
        sc, basis = self.sc, self.sc.cost.basis
        if sc.fleet.unit == "gpu":
            u = gpu_unit(gpu, sc.cost)
            return ([u], "") if u else ([], f"no {basis} price in its preset")
        if basis == "rental":
            found = instances_for(gpu.name, sc.cost.clouds, sc.cost.commitment, self.presets)
            units = [u for i in found if (u := instance_unit(i, gpu, sc.cost))]
            where = f" on {', '.join(sc.cost.clouds)}" if sc.cost.clouds else ""
            term = "" if sc.cost.commitment == "on-demand" else f" at a {sc.cost.commitment} term"
            return units, f"no cloud instance preset rents it{where}{term}"
        chosen = sc.fleet.servers.get(gpu.name)
        if chosen:
            servers = [server_catalog(self.presets).get(chosen)]
            if servers[0].gpu != gpu.name:
                raise ScenarioError(
                    f"fleet.servers: {servers[0].name} holds {servers[0].gpu}, not {gpu.name}"
                )
        else:
            servers = servers_for(gpu, self.presets)
        units = [u for s in servers if (u := server_unit(s, gpu, sc.cost))]
        rack_kw = sc.budget.max_kw_per_rack
        if rack_kw is not None:  # a server that draws more than a rack takes cannot be racked
            units = [u for u in units if u.power_kw / sc.cost.pue <= rack_kw]
            if not units and servers:
                return [], f"every server of it draws more than {rack_kw:g} kW (max_kw_per_rack)"
        if units:
            return units, ""
        if not gpu.price_usd:
            return [], "no purchase price in its preset"
        if not servers:
            return [], "no server preset holds it (fleet.unit: gpu plans loose GPUs)"
        return [], "its server presets have no host price (fleet.unit: gpu plans loose GPUs)"

    def per_gpu(self, gpu: str) -> Unit:
        """The unit of a GPU type with the least cost per GPU: the options' cost floor."""
        return min(self.units[gpu], key=lambda u: (u.per_year / u.gpus, u.name))

    def _family_model(self, w):
        try:
            model = get_family_model(w.model, self.presets)
        except UnknownNameError:
            # a name no preset has fails here, suggesting from every family
            lm = get_model(w.model, self.presets)
            raise ScenarioError(
                f"workload '{w.name}': {lm.name} is a language model, which a "
                f"workload of kind '{w.kind}' cannot use; drop `kind` to plan it as an LLM "
                "workload, or pick a preset of that kind (see `planner models list`)"
            ) from None
        if model.family not in KINDS[w.kind].families:
            raise ScenarioError(
                f"workload '{w.name}': model {model.name} is {_a(model.family)} model, "
                f"which a workload of kind '{w.kind}' cannot use"
            )
        return model

    def _language_model(self, w: LLMWorkload) -> LanguageModel:
        """An LLM preset or config, or a vision-language model's language model (its image
        encoder then rides on the workload, see capacity.steps_for)."""
        if is_family_model(w.model, self.presets):
            vlm = get_family_model(w.model, self.presets)
            if not family_of(vlm).language_model:
                raise ScenarioError(
                    f"workload '{w.name}': {w.model} is a {vlm.family} model; "
                    "give the workload the matching `kind`"
                )
            w._vlm = vlm
            w.weights = w.weights or "bf16"
            return vlm.llm
        if w.images_per_request:
            raise ScenarioError(
                f"workload '{w.name}': images_per_request needs a "
                "vision-language model (see `planner models list`)"
            )
        model = get_model(w.model, self.presets)
        w.weights = weights_for(w.model, w.weights, self.presets)
        return model

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
            if g.segment not in f.segments:
                if not f.gpus:
                    continue  # outside the segments asked for (default: data-centre cards)
                self.notes.append(
                    f"{n}: a {g.segment} card, planned because fleet.gpus names it "
                    f"(fleet.segments: {', '.join(f.segments)})"
                )
            if n in avail and avail[n] == 0:
                continue
            out.append(g)
        self.available = avail
        if f.calibrated_only:
            guessed = [g.name for g in out if not all(fitted(efficiency_key(g)))]
            out = [g for g in out if g.name not in guessed]
            if guessed:
                self.notes.append(
                    f"left out {', '.join(guessed)}: fleet.calibrated_only, and no published "
                    "run calibrates both their families' bandwidth and compute"
                )
        if not out:
            raise ScenarioError(
                "fleet: no GPU type is allowed by fleet.gpus, fleet.vendors, "
                "fleet.segments, fleet.available and fleet.calibrated_only together"
            )
        return out

    def _family_options(self, w) -> list[_Option]:
        """Every allowed GPU type x TP size (these families run TP only)."""
        model = self.family_models[w.name]
        factor = family_time_factor(model.family, *(self.sc.error_at or (None, False)))
        self.excluded[w.name] = []
        seen: list[tuple[Candidate, Capacity]] = []
        kept: list[tuple[int, _Option]] = []
        for gpu in self.gpus:
            tp = 1
            while tp <= self.sc.fleet.max_gpus_per_replica:
                cand = Candidate(gpu, Parallel(tp=tp))
                fc = family_capacity(model, w, gpu, cand.parallel, factor)
                cap = Capacity(fc.units, fc.binding, fc.latency_s, float("nan"), fc.batch)
                seen.append((cand, cap))
                if fc.binding.startswith("split"):
                    self.excluded[w.name].append((cand.label(), fc.binding[7:]))
                elif fc.units >= 1:
                    opt = self._option(w.name, gpu, tp, fc.units, cand.key())
                    kept.append((fc.units, _Option(opt, cand, cap, w, None, family=fc)))
                tp *= 2
        self.best_seen[w.name] = seen
        return _undominated(kept)

    def _option(self, workload: str, gpu: Accelerator, n: int, units: int, key: tuple) -> Option:
        """A replica option at its GPUs' share of the type's cheapest unit per GPU (a lower
        bound on what it costs once packed onto whole units)."""
        u = self.per_gpu(gpu.name)
        return Option(
            workload,
            gpu.name,
            gpu.vendor,
            n,
            units,
            int(math.ceil(u.per_year * self.sc.cost.years * n / u.gpus)),
            int(math.ceil(u.power_kw * 1000 * n / u.gpus)),
            key,
        )

    def _llm_search(self, w: LLMWorkload) -> _LLMSearch:
        """A language-model workload's candidates, checked and enumerated (capacities come
        later, for every workload together: :meth:`_llm_options`)."""
        model = self.models[w.name]
        if w.max_model_len and w.input_tokens + w.output_tokens > w.max_model_len:
            raise ScenarioError(
                f"workload '{w.name}': {w.input_tokens + w.output_tokens} tokens per request "
                f"exceed its max_model_len {w.max_model_len}"
            )
        engine = w.engine_config()
        cands, excluded = enumerate_candidates(
            model, self.gpus, self.sc.fleet.max_gpus_per_replica, w.weights, w.kv_cache, engine
        )
        self.excluded[w.name] = excluded
        groups: dict[tuple[str, int], list] = {}
        for cand, ev in cands:  # in order: by GPU type, then replica size
            groups.setdefault((cand.gpu.name, cand.gpus), []).append((cand, ev))
        return _LLMSearch(w, groups)

    def _llm_options(self, searches: list[_LLMSearch]) -> dict[str, list[_Option]]:
        """Every language-model workload's options. Replica sizes are searched in stages
        (up to 4 GPUs, then 8, 16 ...), each stage's load curves solved together for every
        workload: a GPU type whose seats per GPU have begun to fall offers no larger replica
        (:meth:`_LLMSearch.stops`), so its larger candidates are never searched."""
        sizes = sorted({n for s in searches for _, n in s.groups})
        stage = [n for n in sizes if n <= FIRST_STAGE] or sizes[:1]
        while stage:
            todo = _stage(searches, stage)
            if stage[0] > FIRST_STAGE and sum(len(kept) for _, kept in todo) < MERGE_BELOW:
                # too few searches for a stage of their own to pay for its calls: every
                # size left at once (the larger ones' stop rule then applies as offered)
                stage = [n for n in sizes if n >= stage[0]]
                todo = _stage(searches, stage)
            caps = iter(llm_capacities([(ev, st, s.w) for s, kept in todo for _, ev, st in kept]))
            for s, kept in todo:
                for cand, ev, st in kept:
                    self._offer(s, cand, ev, st, next(caps))
            stage = [n for n in sizes if n > stage[-1]][:1]
        out = {}
        for s in searches:
            self.best_seen[s.w.name] = [(c, cap) for _, c, cap in sorted(s.seen, key=_first)]
            out[s.w.name] = _undominated(sorted(s.best.values(), key=lambda t: t[1].opt.key))
        return out

    def _offer(self, s: _LLMSearch, cand: Candidate, ev, st, cap: Capacity) -> None:
        """One searched candidate: its replica (and disaggregated units) as options, unless
        its type's seats per GPU have already begun to fall at smaller sizes."""
        w = s.w
        if s.stops(cand.gpu.name, cand.gpus):
            return
        sizes = s.per_gpu.setdefault(cand.gpu.name, {})
        sizes[cand.gpus] = max(sizes.get(cand.gpus, 0.0), cap.units / cand.gpus)
        s.seen.append((s.order[id(cand)], cand, cap))
        units = [(cap, None)] if w.disaggregation != "only" else []
        if w.disaggregation != "off" and cap.max_batch_memory >= 1:
            units += [(llm_capacity(ev, w, st, split), split) for split in DISAGG_SPLITS]
        for ucap, split in units:
            if ucap.units < 1:
                continue
            n = cand.gpus * (sum(split) if split else 1)
            opt = self._option(w.name, cand.gpu, n, ucap.units, cand.key() + (split or (0, 0)))
            o = _Option(opt, cand, ucap, w, ev, split)
            k = (cand.gpu.name, n)
            if k not in s.best or ucap.units > s.best[k][0]:  # per type and size: best split
                s.best[k] = (ucap.units, o)

    def limits(self, single_type: bool | None = None) -> Limits:
        b, f, c = self.sc.budget, self.sc.fleet, self.sc.cost
        return Limits(
            single_type=f.single_type if single_type is None else single_type,
            available=self.available or None,
            max_usd=b.max_usd,
            max_power_kw=b.max_power_kw,
            max_types=f.max_types,
            max_vendors=f.max_vendors,
            type_cost=int(math.ceil(self.per_type_usd_per_year * c.years)),
            spares=f.spares,
            max_rack_units=b.max_racks * RACK_UNITS if b.max_racks else None,
            max_rack_power_kw=(
                b.max_racks * b.max_kw_per_rack if b.max_racks and b.max_kw_per_rack else None
            ),
        )

    def required(self) -> dict[str, int]:
        return {n: d.required for n, d in self.demands.items()}

    def model(self, options: list[_Option], limits: Limits) -> FleetModel:
        """The fleet model over ``options``, to solve again as fleets are excluded."""
        return FleetModel(
            [o.opt for o in options], self.required(), limits, purchases=self.purchases
        )

    def run(
        self,
        options: list[_Option],
        limits: Limits,
        exclude=None,
        cost_floor: int | None = None,
        start: Solution | None = None,
    ) -> Solution:
        return solve(
            [o.opt for o in options],
            self.required(),
            limits,
            exclude,
            purchases=self.purchases,
            cost_floor=cost_floor,
            start=start,
        )
