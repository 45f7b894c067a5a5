"""Fleets a buyer can order: replicas packed onto whole servers or instances, spares, the
per-GPU-type cost, vendor limits, the cost breakdown, and the launch commands."""

from __future__ import annotations

import itertools
import random
import shlex
from pathlib import Path

import pytest
import yaml

from planner.launch import launch_commands
from planner.optimize import Limits, Option, Purchase, solve
from planner.scenario import load_scenario
from planner.solve import plan_scenario

ROOT = Path(__file__).resolve().parents[1]


def _packs(sizes: list[int], units: list[int], no_span: list[int] = ()) -> bool:
    """Exact check by best-fit decreasing (optimal for sizes that divide each other): every
    replica inside one unit, or over whole units of the largest size (if those may span)."""
    free = sorted(units, reverse=True)
    for s in sorted(sizes, reverse=True):
        fit = [i for i, f in enumerate(free) if f >= s]
        if fit:
            free[fit[-1]] -= s  # the tightest unit that holds it
            continue
        top = max(units, default=0)
        if not top or top in no_span or s < top or s % top:
            return False
        whole = [i for i, f in enumerate(free) if top and f == top and s % top == 0]
        need = s // top if top else 1
        if len(whole) < need:
            return False
        for i in whole[:need]:
            free[i] = 0
    return True


def _brute(opts, required, buys, limits) -> int | None:
    best = None
    ranges = [range(0, -(-required[o.workload] // o.capacity) + 1) for o in opts]
    for reps in itertools.product(*ranges):
        if any(
            sum(o.capacity * n for o, n in zip(opts, reps, strict=True) if o.workload == w) < r
            for w, r in required.items()
        ):
            continue
        total = sum(o.gpus * n for o, n in zip(opts, reps, strict=True))
        for ys in itertools.product(*(range(0, total // b.gpus + 2) for b in buys)):
            types = {b.gpu for b, y in zip(buys, ys, strict=True) if y}
            if not all(
                _packs(
                    [
                        o.gpus
                        for o, n in zip(opts, reps, strict=True)
                        if o.gpu == g
                        for _ in range(n)
                    ],
                    [b.gpus for b, y in zip(buys, ys, strict=True) if b.gpu == g for _ in range(y)],
                    [b.gpus for b in buys if b.gpu == g and not b.spans],
                )
                for g in {o.gpu for o in opts}
            ):
                continue
            spares = sum(limits.spares * b.cost for b, y in zip(buys, ys, strict=True) if y)
            cost = sum(b.cost * y for b, y in zip(buys, ys, strict=True)) + spares
            cost += limits.type_cost * len(types)
            if best is None or cost < best:
                best = cost
    return best


@pytest.mark.parametrize("seed", range(10))
def test_packing_matches_brute_force(seed):
    """Whole units, packed: CP-SAT's cheapest fleet equals exhaustive search, with spares and
    a per-type cost."""
    rng = random.Random(seed)
    opts = []
    for w in ("w1", "w2"):
        for g in ("a", "b"):
            n = rng.choice([1, 2, 4])
            opts.append(Option(w, g, "v", n, rng.randint(3, 12), 0, 0, (w, g, n)))
    required = {"w1": rng.randint(5, 20), "w2": rng.randint(3, 12)}
    buys = [
        Purchase("a", "v", 4, rng.randint(300, 500), 0),
        Purchase("b", "v", 2, rng.randint(100, 300), 0),
        Purchase("b", "v", 1, rng.randint(60, 160), 0, spans=False),
    ]
    limits = Limits(type_cost=rng.choice([0, 50, 400]), spares=rng.choice([0, 0, 1]))
    sol = solve(opts, required, limits, purchases=buys)
    assert sol.found and sol.cost == _brute(opts, required, buys, limits)
    # what was bought holds the replicas
    for g in ("a", "b"):
        sizes = [
            opts[i].gpus for i, n in sol.replicas.items() if opts[i].gpu == g for _ in range(n)
        ]
        units = [buys[j].gpus for j, n in sol.units.items() if buys[j].gpu == g for _ in range(n)]
        assert _packs(sizes, units)


def test_replicas_stay_inside_a_unit_that_cannot_span():
    """Single-GPU cloud instances cannot host a 2-GPU replica (no fast link between them)."""
    opts = [Option("w", "a", "v", 2, 10, 0, 0, ("w", 2))]
    one_gpu = [Purchase("a", "v", 1, 100, 0, spans=False)]
    assert not solve(opts, {"w": 10}, Limits(), purchases=one_gpu).found
    two_gpu = [Purchase("a", "v", 2, 150, 0)]
    assert solve(opts, {"w": 10}, Limits(), purchases=two_gpu).cost == 150


def test_nvl_rack_packs_one_replica_size_per_rack():
    """A 72-GPU rack holds four 16-GPU replicas (64 GPUs), not four and a half."""
    opts = [Option("w", "g", "v", 16, 1, 0, 0, ("w", 16))]
    rack = [Purchase("g", "v", 72, 1000, 0)]
    assert solve(opts, {"w": 4}, Limits(), purchases=rack).units == {0: 1}
    assert solve(opts, {"w": 5}, Limits(), purchases=rack).units == {0: 2}


def test_per_type_cost_removes_top_ups():
    """A small top-up of a second type pays its way only when a type costs nothing to run."""
    opts = [
        Option("w", "big", "v", 8, 100, 0, 0, ("big",)),
        Option("w", "small", "v", 1, 10, 0, 0, ("small",)),
    ]
    buys = [Purchase("big", "v", 8, 1000, 0), Purchase("small", "v", 1, 200, 0)]
    free = solve(opts, {"w": 110}, Limits(), purchases=buys)
    assert set(free.gpus_by_type) == {"big", "small"}
    costed = solve(opts, {"w": 110}, Limits(type_cost=900), purchases=buys)
    assert set(costed.gpus_by_type) == {"big"}


def test_max_vendors_limits_the_mix():
    opts = [
        Option("w1", "n", "nvidia", 1, 10, 0, 0, (1,)),
        Option("w1", "m", "amd", 1, 10, 0, 0, (2,)),
        Option("w2", "m", "amd", 1, 10, 0, 0, (3,)),
        Option("w2", "n", "nvidia", 1, 5, 0, 0, (4,)),
    ]
    buys = [Purchase("n", "nvidia", 1, 100, 0), Purchase("m", "amd", 1, 120, 0)]
    free = solve(opts, {"w1": 30, "w2": 30}, Limits(), purchases=buys)
    assert set(free.gpus_by_type) == {"n", "m"}
    one = solve(opts, {"w1": 30, "w2": 30}, Limits(max_vendors=1), purchases=buys)
    assert len(one.gpus_by_type) == 1 and one.cost >= free.cost


# ---- scenarios ---------------------------------------------------------------------------
def _scenario(tmp_path, **over) -> Path:
    data = yaml.safe_load((ROOT / "scenarios" / "chat-assistant.yaml").read_text())
    for dotted, v in over.items():
        cur = data
        *head, last = dotted.split(".")
        for k in head:
            cur = cur.setdefault(k, {})
        cur[last] = v
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_purchase_plan_is_whole_servers_and_breakdown_sums(tmp_path):
    res = plan_scenario(load_scenario(_scenario(tmp_path)))
    p = res.plan
    d = res.to_dict()
    assert d["servers"] and not d["instances"]
    for s in d["servers"]:
        assert s["count"] >= 1 and s["gpus_per_server"] >= 1
    bought = sum(s["count"] * s["gpus_per_server"] for s in d["servers"])
    assert bought == p.total_gpus >= sum(a.gpus for a in p.assignments)
    assert sum(p.cost_breakdown_usd.values()) == pytest.approx(p.cost_usd, rel=1e-9)
    assert {"gpus", "hosts", "networking", "capital", "energy"} <= set(p.cost_breakdown_usd)


def test_an_order_prices_each_server_as_quoted(tmp_path):
    """A bought server's price is its GPUs at their preset price plus its host (the network is
    its own cost line), in the JSON and on the order table."""
    from estimator import get_gpu
    from planner.procurement import servers_for
    from planner.render.plans import result_table

    res = plan_scenario(load_scenario(_scenario(tmp_path)))
    for s in res.to_dict()["servers"]:
        gpu = get_gpu(s["gpu"])
        server = next(x for x in servers_for(gpu) if x.name == s["server"])
        want = gpu.price_usd * s["gpus_per_server"] + server.host_usd
        assert s["usd_each"] == pytest.approx(want)
    table = result_table(res, top=3)
    assert f"${want:,.0f} each" in table


def test_rental_plan_is_instances(tmp_path):
    res = plan_scenario(load_scenario(_scenario(tmp_path, **{"cost.basis": "rental"})))
    d = res.to_dict()
    assert d["instances"] and not d["servers"]
    for i in d["instances"]:
        assert i["gpus_per_instance"] in (1, 2, 4, 8) and i["usd_per_hour"] > 0
    p = res.plan
    assert sum(p.cost_breakdown_usd.values()) == pytest.approx(p.cost_usd, rel=1e-9)
    aws = plan_scenario(
        load_scenario(_scenario(tmp_path, **{"cost.basis": "rental", "cost.clouds": ["aws"]}))
    )
    assert all(i["cloud"] == "aws" for i in aws.to_dict()["instances"])
    assert aws.plan.cost_usd >= p.cost_usd - 1e-6  # fewer clouds never cost less


def test_spares_add_a_server_per_pool(tmp_path):
    base = plan_scenario(load_scenario(_scenario(tmp_path)))
    spared = plan_scenario(load_scenario(_scenario(tmp_path, **{"fleet.spares": 1})))
    pools = {(s["gpu"], s["server"]) for s in spared.to_dict()["servers"]}
    assert len(spared.plan.spares) == len(pools)
    assert all(s["count"] == 1 for s in spared.plan.spares)
    # with a server down the pool still holds every replica: the spare is a whole server
    assert spared.plan.cost_usd > base.plan.cost_usd
    assert spared.plan.cost_breakdown_usd["spares"] > 0


def test_consumer_cards_only_when_asked(tmp_path):
    gpus = ["rtx-4090", "l40s"]
    res = plan_scenario(
        load_scenario(_scenario(tmp_path, **{"fleet.gpus": gpus, "fleet.unit": "gpu"}))
    )
    assert any("consumer card, planned because fleet.gpus names it" in n for n in res.notes)
    whole = plan_scenario(load_scenario(_scenario(tmp_path, **{"fleet.gpus": None})))
    used = {a.gpu for a in whole.plan.assignments} | {
        g for q in whole.per_gpu_best for g in q.gpus_by_type
    }
    assert not used & {"rtx-4090", "rtx-5090", "rtx-3090"}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_emit_flags_match_the_plan(tmp_path, engine):
    sc = load_scenario(_scenario(tmp_path))
    res = plan_scenario(sc, top=1)
    launches = launch_commands(sc, res, engine)
    assert len(launches) == len(res.plan.assignments)
    for x, a in zip(launches, res.plan.assignments, strict=True):
        args = shlex.split(x.command)
        flag = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size", "trtllm": "--tp_size"}
        assert args[args.index(flag[engine]) + 1] == str(a.tp)
        assert x.replicas == a.replicas and x.gpus_per_replica == a.gpus_per_replica
        if engine == "vllm":
            assert args[args.index("--max-model-len") + 1] == str(2000 + 400)
            assert args[args.index("--kv-cache-dtype") + 1] == "fp8"


def test_bad_procurement_input_is_a_clear_error(tmp_path):
    from click.testing import CliRunner

    from planner.cli import main

    p = _scenario(tmp_path, **{"cost.basis": "rental", "cost.clouds": ["azur"]})
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 2 and "did you mean azure" in r.output
    p = _scenario(tmp_path, **{"fleet.gpus": ["h200"], "fleet.servers": {"h200": "dgx-h20"}})
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 2 and "dgx-h200" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["servers", "list", "--gpu", "h100-sxm", "--format", "json"])
    assert r.exit_code == 0 and {s["gpu"] for s in __import__("json").loads(r.output)} == {
        "h100-sxm"
    }
    r = CliRunner().invoke(main, ["instances", "list", "--cloud", "aws"])
    assert r.exit_code == 0 and "p5.48xlarge" in r.output


def test_chosen_server_is_the_one_bought(tmp_path):
    p = _scenario(
        tmp_path, **{"fleet.gpus": ["h100-sxm"], "fleet.servers": {"h100-sxm": "dgx-h100"}}
    )
    res = plan_scenario(load_scenario(p), top=1)
    assert {s["server"] for s in res.to_dict()["servers"]} == {"dgx-h100"}
    assert res.plan.power_kw == pytest.approx(
        sum(s["count"] for s in res.to_dict()["servers"]) * 10.2 * 1.3
    )


def test_break_even_against_renting_the_same_gpus(tmp_path):
    from planner.procurement import instances_for

    # on a GPU type the clouds rent out on demand
    res = plan_scenario(load_scenario(_scenario(tmp_path, **{"fleet.gpus": ["h100"]})), top=1)
    p = res.plan
    rent = 0.0
    for s in res.to_dict()["servers"]:
        per_gpu_h = min(i.usd_per_hour / i.gpus for i in instances_for(s["gpu"], None, "on-demand"))
        rent += per_gpu_h * s["count"] * s["gpus_per_server"] * 8760
    run = sum(p.cost_breakdown_per_year.get(k, 0) for k in ("energy", "hosting", "operations"))
    assert p.break_even_months == pytest.approx(p.capex_usd / ((rent - run) / 12))
    rental = plan_scenario(load_scenario(_scenario(tmp_path, **{"cost.basis": "rental"})), top=1)
    assert rental.plan.break_even_months is None


def test_loose_gpus_hold_replicas_of_any_size(tmp_path):
    """fleet.unit: gpu (servers owned already): a 70B FP8 model needs TP2 on 48 GB cards."""
    p = _scenario(tmp_path, **{"fleet.unit": "gpu", "fleet.gpus": ["l40s"]})
    res = plan_scenario(load_scenario(p), top=1)
    assert res.feasible and min(a.tp for a in res.plan.assignments) >= 2


def test_a_binding_rack_limit_is_named(tmp_path):
    data = yaml.safe_load(_scenario(tmp_path, **{"budget.max_racks": 1}).read_text())
    data["workloads"][0]["users"] = 40000  # 72 B200s: more than one 42U rack holds
    p = tmp_path / "racks.yaml"
    p.write_text(yaml.safe_dump(data))
    res = plan_scenario(load_scenario(p), top=1)
    assert not res.feasible and "rack(s)" in res.reason and "U and" in res.reason


def test_equal_cost_plans_break_ties_by_demand_served():
    """At equal cost, GPUs owned and GPUs used, the plan serving the most demand wins: one
    server holds either 2 x TP2 (2 x 45 seats) or 1 x TP4 (80 seats); both cover 80."""
    opts = [
        Option("w", "g", "v", 4, 80, 0, 0, ("w", 4)),
        Option("w", "g", "v", 2, 45, 0, 0, ("w", 2)),
    ]
    buys = [Purchase("g", "v", 4, 1000, 0)]
    sol = solve(opts, {"w": 80}, Limits(), purchases=buys)
    assert sol.replicas == {1: 2}  # 90 seats, not 80
    flipped = solve(list(reversed(opts)), {"w": 80}, Limits(), purchases=buys)
    assert flipped.replicas == {0: 2}  # the same choice whatever the order


def test_emitted_sglang_command_carries_the_state_pool_ratio(tmp_path):
    """A hybrid workload served on SGLang with --mamba-full-memory-ratio: the plan is sized
    with it and SGLang's command sets it; another engine's command leaves it out (it keeps
    the states in its KV pool)."""
    data = yaml.safe_load(_scenario(tmp_path, **{"fleet.gpus": ["h100-sxm"]}).read_text())
    data["workloads"][0] |= {"model": "qwen3.5-9b", "engine": "sglang", "weights": "bf16"}
    data["workloads"][0] |= {"kv_cache": "bf16", "mamba_full_memory_ratio": 0.5}
    p = tmp_path / "hybrid.yaml"
    p.write_text(yaml.safe_dump(data))
    sc = load_scenario(p)
    res = plan_scenario(sc, top=1)
    (x,) = launch_commands(sc, res, "sglang")
    args = shlex.split(x.command)
    assert args[args.index("--mamba-full-memory-ratio") + 1] == "0.5"
    assert "--mamba-full-memory-ratio" not in launch_commands(sc, res, "vllm")[0].command
