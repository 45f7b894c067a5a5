"""The fleet as CP-SAT expressions: loose GPUs, or whole units (servers, instances) with the
replicas packed onto them (the buddy rule for power-of-two units), and the rows that tie
what is bought to what it costs, draws and holds. :mod:`planner.optimize` builds its model on
these."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import cpsat
from .fleet_spec import Limits, Option, Purchase


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def packable(purchases: list[Purchase], size: int) -> bool:
    """Whether a replica of ``size`` GPUs can be placed on these units: inside one unit, or
    over whole units of the largest kind."""
    return any(size <= p.gpus or (p.spans and size % p.gpus == 0) for p in purchases)


def lin(terms):
    """``Σ coefficient·expression`` over ``(coefficient, expression)`` pairs, as one node."""
    pairs = list(terms)
    return cpsat.weighted_sum([e for _, e in pairs], [c for c, _ in pairs])


@dataclass
class Fleet:
    """The fleet's model expressions: GPU types in use, cost, power, GPUs owned, GPUs in
    service per type, and (whole units) the unit counts in service and spare per purchase."""

    use: dict
    cost: object
    power: object
    gpus: object
    counts: dict
    y: list = field(default_factory=list)
    spare: list = field(default_factory=list)


def loose(m, options: list[Option], x, limits: Limits) -> Fleet:
    """Loose GPUs: each replica costs its option's price; the fleet is the replicas' GPUs."""
    types = sorted({o.gpu for o in options})
    counts = {g: lin((o.gpus, x[i]) for i, o in enumerate(options) if o.gpu == g) for g in types}
    use = {g: m.new_bool_var(f"use_{g}") for g in types}
    for i, o in enumerate(options):
        m.add(x[i] == 0).only_enforce_if(use[o.gpu].negated())
    for g in types:
        m.add(counts[g] >= 1).only_enforce_if(use[g])
    if limits.available:
        for g in types:
            if g in limits.available:
                m.add(counts[g] <= limits.available[g])
    cost = lin((o.cost, x[i]) for i, o in enumerate(options)) + limits.type_cost * sum(use.values())
    power = lin((o.power_w, x[i]) for i, o in enumerate(options))
    return Fleet(use, cost, power, sum(counts.values()), counts)


def units(m, options, live, x, ubx, buys, by_type_buys, limits: Limits) -> Fleet:
    """Whole units in service ``y`` and ``spare`` per purchase, the replicas packed onto them.

    Power-of-two units (8-GPU boards, 1/2/4/8-GPU instances) hold any mix of power-of-two
    replicas whose GPUs, counted from each size up, fit the units of at least that size (the
    buddy rule, exact for sizes that divide each other). Other units (a 72-GPU NVL rack) hold
    replicas of one size each, ``gpus // size`` of them: conservative, never overfull. Spares:
    ``limits.spares`` more units of every pool (GPU type x unit kind) in use."""
    y: list = [None] * len(buys)  # every purchase belongs to one GPU type: set below
    spare: list = [None] * len(buys)
    use, counts = {}, {}
    for g, js in sorted(by_type_buys.items()):
        opts = [i for i in live if options[i].gpu == g]
        if not opts:  # no replica runs on this type here: none of its units is bought
            for j in js:
                y[j] = spare[j] = 0
            continue
        most = sum(options[i].gpus * ubx[i] for i in opts)  # GPUs the replicas could want
        for j in js:
            ub = -(-most // buys[j].gpus)
            if limits.available and g in limits.available:
                ub = min(ub, limits.available[g] // buys[j].gpus)
            y[j] = m.new_int_var(0, max(ub, 0), f"y{j}")
            spare[j] = m.new_int_var(0, limits.spares, f"s{j}")
            if limits.spares:
                used = m.new_bool_var(f"used{j}")
                m.add(y[j] >= 1).only_enforce_if(used)
                m.add(y[j] == 0).only_enforce_if(used.negated())
                m.add(spare[j] == limits.spares).only_enforce_if(used)
                m.add(spare[j] == 0).only_enforce_if(used.negated())
        sizes = sorted({buys[j].gpus for j in js})
        if all(_pow2(s) for s in sizes):
            # the level t = 1 always; a larger t only where some unit is smaller than t (else
            # its units are the level-1 units and its replicas a subset: the row is implied)
            t = 1
            while t <= sizes[-1]:
                if t == 1 or sizes[0] < t:
                    m.add(
                        lin((options[i].gpus, x[i]) for i in opts if options[i].gpus >= t)
                        <= lin((buys[j].gpus, y[j]) for j in js if buys[j].gpus >= t)
                    )
                t *= 2
        else:
            bins = {j: [] for j in js}
            for s in sorted({options[i].gpus for i in opts}):
                same = lin((1, x[i]) for i in opts if options[i].gpus == s)
                for j in js:
                    z = m.new_int_var(0, max(ubx[i] for i in opts) * (s // buys[j].gpus + 1), "z")
                    bins[j].append(z)
                    per = buys[j].gpus // s
                    if per >= 1:
                        m.add(same <= per * z)
                    else:  # a replica spans whole units
                        m.add(same * -(-s // buys[j].gpus) <= z)
            for j in js:
                m.add(sum(bins[j]) <= y[j])
        use[g] = m.new_bool_var(f"use_{g}")
        for j in js:
            m.add(y[j] == 0).only_enforce_if(use[g].negated())
        m.add(sum(y[j] for j in js) >= 1).only_enforce_if(use[g])
        counts[g] = lin((buys[j].gpus, y[j]) for j in js)
        if limits.available and g in limits.available:
            owned = lin((buys[j].gpus, y[j] + spare[j]) for j in js)
            m.add(owned <= limits.available[g])
    owned = [y[j] + spare[j] for j in range(len(buys))]
    cost = lin((b.cost, owned[j]) for j, b in enumerate(buys)) + limits.type_cost * sum(
        use.values()
    )
    power = lin((b.power_w, owned[j]) for j, b in enumerate(buys))
    if limits.max_rack_units is not None:
        m.add(lin((b.rack_units, owned[j]) for j, b in enumerate(buys)) <= limits.max_rack_units)
    gpus = lin((b.gpus, owned[j]) for j, b in enumerate(buys))
    return Fleet(use, cost, power, gpus, counts, y, spare)
