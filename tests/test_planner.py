"""The inverse planner: seats, the optimiser against brute force, limits, infeasibility,
scenario errors, every shipped scenario, CSV safety and determinism."""

import csv
import itertools
import json
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from estimator.files import csv_safe as escape_cell
from estimator.files import write_csv
from planner.cli import main
from planner.demand import seats
from planner.optimize import Limits, Option, solve
from planner.options import SearchSpace
from planner.scenario import ScenarioError, load_scenario
from planner.solve import plan_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


CHAT = """
name: t
workloads:
  - name: chat
    model: llama-3.1-8b
    weights: fp8
    users: {users}
    hours_per_person: 2
    utilisation: 0.5
    input_tokens: 1000
    output_tokens: 200
    ttft_s: {ttft}
    tokens_per_s: {tps}
fleet:
  gpus: [h100-sxm, l40s, mi300x]
  max_gpus_per_replica: 4
{extra}
"""


def chat(tmp_path, users=400, ttft=2.0, tps=20, extra=""):
    return write(tmp_path, CHAT.format(users=users, ttft=ttft, tps=tps, extra=extra))


# ---- seats -------------------------------------------------------------------------
def test_seats_arithmetic():
    assert seats(2000, 3, 0.5) == pytest.approx(500)
    assert seats(300, 24, 0.8) == pytest.approx(375)
    assert seats(1, 24, 1.0) == 1


def test_seats_shown_with_arithmetic(tmp_path):
    r = invoke("solve", chat(tmp_path, users=1000))
    assert r.exit_code == 0, r.output
    assert "1000 users × 2 h ÷ (24 h × 0.5) = 166.7 seats -> 167 seats" in r.output


# ---- optimiser vs brute force --------------------------------------------------------
def _brute(options, required, limits):
    best = None
    ubs = [range(0, -(-required[o.workload] // o.capacity) + 1) for o in options]
    for xs in itertools.product(*ubs):
        cover = {w: 0 for w in required}
        for o, n in zip(options, xs, strict=True):
            cover[o.workload] += o.capacity * n
        if any(cover[w] < r for w, r in required.items()):
            continue
        by_type = {}
        for o, n in zip(options, xs, strict=True):
            by_type[o.gpu] = by_type.get(o.gpu, 0) + o.gpus * n
        used = [g for g, n in by_type.items() if n]
        if limits.single_type and len(used) > 1:
            continue
        if limits.max_types is not None and len(used) > limits.max_types:
            continue
        if limits.available and any(by_type.get(g, 0) > a for g, a in limits.available.items()):
            continue
        cost = sum(o.cost * n for o, n in zip(options, xs, strict=True))
        if limits.max_usd is not None and cost > limits.max_usd:
            continue
        power = sum(o.power_w * n for o, n in zip(options, xs, strict=True))
        if limits.max_power_kw is not None and power > limits.max_power_kw * 1000:
            continue
        if best is None or cost < best:
            best = cost
    return best


@pytest.mark.parametrize("seed", range(12))
def test_cp_sat_matches_brute_force(seed):
    rng = random.Random(seed)
    gpus = ["a", "b", "c"]
    opts = []
    for w in ("w1", "w2"):
        for g in rng.sample(gpus, 2):
            n = rng.choice([1, 2, 4])
            opts.append(
                Option(
                    w,
                    g,
                    "v",
                    n,
                    rng.randint(3, 40),
                    n * rng.randint(10, 60),
                    n * rng.randint(300, 900),
                    (w, g, n),
                )
            )
    required = {"w1": rng.randint(10, 60), "w2": rng.randint(5, 40)}
    limits = Limits(
        single_type=rng.random() < 0.3,
        available={"a": rng.randint(4, 30)} if rng.random() < 0.5 else None,
        max_usd=rng.randint(200, 2000) if rng.random() < 0.4 else None,
        max_power_kw=rng.randint(10, 60) if rng.random() < 0.3 else None,
    )
    sol = solve(opts, required, limits)
    brute = _brute(opts, required, limits)
    if brute is None:
        assert not sol.found and sol.status == "infeasible"
    else:
        assert sol.found and sol.cost == brute


def test_plan_never_costlier_than_any_single_type_plan(tmp_path):
    sc = load_scenario(ROOT / "scenarios" / "chat-assistant.yaml")
    res = plan_scenario(sc)
    assert res.feasible and res.per_gpu_best
    for p in res.per_gpu_best:
        assert res.plan.cost_usd <= p.cost_usd + 1e-6
    for p in res.alternatives:
        assert res.plan.cost_usd <= p.cost_usd + 1e-6


@pytest.mark.parametrize("name", ["chat-assistant", "rag-service", "robot-fleet"])
def test_alternatives_are_not_an_earlier_fleet_with_servers_added(name):
    """Each next-best fleet has its own set of GPU types and is not an earlier fleet's GPUs
    with another type added (the earlier fleet serves everything alone: the rest would idle)."""
    res = plan_scenario(load_scenario(ROOT / "scenarios" / f"{name}.yaml"))
    earlier = [res.plan.gpus_by_type]
    for p in res.alternatives:
        for prev in earlier:
            assert set(p.gpus_by_type) != set(prev)
            assert not all(p.gpus_by_type.get(g, 0) >= n for g, n in prev.items()), (
                p.label(),
                prev,
            )
        earlier.append(p.gpus_by_type)


@pytest.mark.parametrize("name", ["two-workloads", "robot-fleet", "rag-service"])
def test_a_cost_floor_changes_no_alternative(name):
    """Each next-best fleet is searched with the one before's proven cost as a floor (it
    excludes more, so it cannot be cheaper): the same costs as searched without one, and a
    floor above the optimum is obeyed."""
    space = SearchSpace(load_scenario(ROOT / "scenarios" / f"{name}.yaml"))
    limits = space.limits()
    first = space.run(space.options, limits)
    assert first.optimal
    seen, with_floor, without = [first.gpus_by_type], [], []
    last = first
    for _ in range(3):
        free = space.run(space.options, limits, exclude=seen)
        floored = space.run(space.options, limits, exclude=seen, cost_floor=last.cost)
        if not free.found:
            assert not floored.found
            break
        without.append(free.cost)
        with_floor.append(floored.cost)
        seen.append(free.gpus_by_type)
        last = free
    assert with_floor == without and without == sorted(without)
    if len(space.required()) > 1:  # the floor is given to the search only where it helps
        above = space.run(space.options, limits, cost_floor=first.cost + 1)
        assert not above.found or above.cost >= first.cost + 1


@pytest.mark.parametrize("name", ["two-workloads", "robot-fleet", "chat-assistant"])
def test_one_fleet_model_solved_again_gives_every_fresh_answer(name):
    """The next-best fleets are searched on one model that gains each exclusion in turn
    (:class:`planner.optimize.FleetModel`): every fleet, with the cost floors and a start
    as plan_scenario gives them, is the very solution a model built afresh returns; and a
    model's exclusions only grow."""
    space = SearchSpace(load_scenario(ROOT / "scenarios" / f"{name}.yaml"))
    limits = space.limits()
    chain = space.model(space.options, limits)
    first = chain.solve()
    assert first == space.run(space.options, limits)
    seen, last = [first.gpus_by_type], first
    start = replace(first, replicas=dict(first.replicas))  # any known fleet as a hint
    for k in range(4):
        kw = {"cost_floor": last.cost if last.optimal else None, "start": start if k else None}
        again = chain.solve(seen, **kw)
        assert again == space.run(space.options, limits, exclude=seen, **kw)
        if not again.found:
            break
        seen.append(again.gpus_by_type)
        last = again
    with pytest.raises(ValueError, match="only grow"):
        chain.solve(seen[1:])


@pytest.mark.parametrize("name", ["two-workloads", "robot-fleet", "chat-assistant"])
def test_a_start_fleet_changes_no_optimum(name):
    """A known fleet given as the search's start (a hint, not a constraint) changes no
    answer: with each one-type fleet as the start, the cheapest fleet and the next-best one
    cost what they cost without it."""
    space = SearchSpace(load_scenario(ROOT / "scenarios" / f"{name}.yaml"))
    limits = space.limits()
    first = space.run(space.options, limits)
    second = space.run(space.options, limits, exclude=[first.gpus_by_type])
    index = {id(o): i for i, o in enumerate(space.options)}
    for gpu in sorted({o.opt.gpu for o in space.options}):
        sub = [o for o in space.options if o.opt.gpu == gpu]
        one = space.run(sub, space.limits(single_type=False))
        if not one.found:
            continue
        start = replace(one, replicas={index[id(sub[i])]: n for i, n in one.replicas.items()})
        assert space.run(space.options, limits, start=start).cost == first.cost
        again = space.run(space.options, limits, exclude=[first.gpus_by_type], start=start)
        assert again.found == second.found and again.cost == second.cost


def test_a_next_best_fleet_of_one_type_reads_as_that_types_best_plan():
    """Where a next-best fleet is a GPU type's best fleet, both tables show the same
    replicas (one fleet solved twice reads as one plan, whichever of its equal-cost splits
    each search found): robot-fleet's L4 and H100 alternatives."""
    res = plan_scenario(load_scenario(ROOT / "scenarios" / "robot-fleet.yaml"))
    best = {tuple(p.gpus_by_type.items()): p for p in res.per_gpu_best}
    matched = 0
    for p in res.alternatives:
        twin = best.get(tuple(p.gpus_by_type.items()))
        if twin is not None and twin.cost_usd == p.cost_usd:
            assert [(a.workload, a.replicas, a.gpus_per_replica) for a in p.assignments] == [
                (a.workload, a.replicas, a.gpus_per_replica) for a in twin.assignments
            ]
            matched += 1
    assert matched >= 2


def test_more_users_never_cost_less(tmp_path):
    costs = [
        plan_scenario(load_scenario(chat(tmp_path, users=u))).plan.cost_usd
        for u in (100, 400, 1600)
    ]
    assert costs == sorted(costs)


# ---- limits ------------------------------------------------------------------------
def test_single_type_limit_holds(tmp_path):
    sc = load_scenario(ROOT / "scenarios" / "two-workloads.yaml")
    res = plan_scenario(sc)
    assert res.feasible and len({a.gpu for a in res.plan.assignments}) == 1


def test_inventory_limit_holds(tmp_path):
    free = plan_scenario(load_scenario(chat(tmp_path, users=2000)))
    g = free.plan.assignments[0].gpu
    n = free.plan.gpus_by_type[g]
    capped = plan_scenario(
        load_scenario(chat(tmp_path, users=2000, extra=f"  available: {{{g}: {n - 1}}}"))
    )
    assert capped.feasible
    assert capped.plan.gpus_by_type.get(g, 0) <= n - 1
    assert capped.plan.cost_usd >= free.plan.cost_usd


def test_budget_limit_holds_and_shortfall_is_named(tmp_path):
    free = plan_scenario(load_scenario(chat(tmp_path, users=2000)))
    cost = free.plan.cost_usd
    ok = plan_scenario(
        load_scenario(chat(tmp_path, users=2000, extra=f"budget: {{max_usd: {cost + 1}}}"))
    )
    assert ok.feasible and ok.plan.cost_usd <= cost + 1
    p = chat(tmp_path, users=2000, extra=f"budget: {{max_usd: {cost * 0.9:.0f}}}")
    r = invoke("solve", p)
    assert r.exit_code == 1
    assert "budget" in r.output and "short by" in r.output


def test_power_limit_holds(tmp_path):
    free = plan_scenario(load_scenario(chat(tmp_path, users=2000)))
    cap = free.plan.power_kw * 0.8
    res = plan_scenario(
        load_scenario(chat(tmp_path, users=2000, extra=f"budget: {{max_power_kw: {cap}}}"))
    )
    if res.feasible:
        assert res.plan.power_kw <= cap + 1e-6
    else:
        assert "power cap" in res.reason


def test_max_types_limit_holds():
    sc = load_scenario(ROOT / "benchmarks" / "three_workloads.yaml")
    res = plan_scenario(sc, top=1)
    assert res.feasible and len(res.plan.gpus_by_type) <= 2


def test_vendor_filter(tmp_path):
    res = plan_scenario(load_scenario(chat(tmp_path, extra="  vendors: [amd]")))
    assert res.feasible and {a.vendor for a in res.plan.assignments} == {"amd"}


# ---- infeasible --------------------------------------------------------------------
def test_unreachable_ttft_names_target_and_nearest_miss(tmp_path):
    r = invoke("solve", chat(tmp_path, ttft=0.001))
    assert r.exit_code == 1
    assert "no plan meets TTFT 0.001 s" in r.output and "fastest candidate" in r.output
    assert "reaches" in r.output


def test_unreachable_speed_names_target_and_nearest_miss(tmp_path):
    r = invoke("solve", chat(tmp_path, tps=5000))
    assert r.exit_code == 1
    assert "no plan meets 5000 tokens/s per user" in r.output and "short" in r.output


def test_model_too_big_for_any_replica(tmp_path):
    p = write(
        tmp_path,
        CHAT.format(users=10, ttft=5, tps=5, extra="")
        .replace("llama-3.1-8b", "llama-3.1-405b")
        .replace("max_gpus_per_replica: 4", "max_gpus_per_replica: 1"),
    )
    r = invoke("solve", p)
    assert r.exit_code == 1 and "does not fit in memory" in r.output


def test_infeasible_json_has_reason(tmp_path):
    r = invoke("solve", chat(tmp_path, ttft=0.001), "--format", "json")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert d["feasible"] is False and "TTFT" in d["reason"]


# ---- bad input ---------------------------------------------------------------------
def test_malformed_yaml_names_file_and_line(tmp_path):
    p = write(tmp_path, "name: x\nworkloads:\n  - name: a\n    users: [1, 2\n")
    r = invoke("solve", p)
    assert r.exit_code == 2 and f"{p}:" in r.output and "malformed YAML" in r.output
    assert "Traceback" not in r.output


def test_bad_key_names_line_and_key(tmp_path):
    p = chat(tmp_path)
    text = p.read_text().replace("    utilisation: 0.5", "    utilisation: 1.5")
    p.write_text(text)
    r = invoke("solve", p)
    assert r.exit_code == 2
    line = text.splitlines().index("    utilisation: 1.5") + 1
    assert f"{p}:{line}: workloads.0.utilisation:" in r.output


def test_unknown_key_is_rejected(tmp_path):
    p = write(tmp_path, chat(tmp_path).read_text().replace("fleet:", "fleeet:"))
    r = invoke("solve", p)
    assert r.exit_code == 2 and "fleeet" in r.output


def test_unknown_model_in_scenario_suggests(tmp_path):
    p = write(tmp_path, chat(tmp_path).read_text().replace("llama-3.1-8b", "llama-3.1-8"))
    r = invoke("solve", p)
    assert r.exit_code == 2 and "llama-3.1-8b" in r.output


def test_unknown_gpu_in_fleet(tmp_path):
    p = write(tmp_path, chat(tmp_path).read_text().replace("l40s", "l40q"))
    r = invoke("solve", p)
    assert r.exit_code == 2 and "unknown gpu 'l40q'" in r.output and "l40s" in r.output


def test_missing_file():
    r = invoke("solve", "no-such-file.yaml")
    assert r.exit_code == 2 and "cannot read" in r.output


def test_duplicate_workload_names(tmp_path):
    text = chat(tmp_path).read_text()
    block = text[text.index("  - name: chat") : text.index("fleet:")]
    p = write(tmp_path, text.replace(block, block + block))
    with pytest.raises(ScenarioError, match="unique"):
        load_scenario(p)


# ---- shipped scenarios, commands, outputs ------------------------------------------
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_shipped_scenario_solves(path, tmp_path):
    out = tmp_path / "plans.csv"
    r = invoke("solve", path, "--format", "json", "--out", out)
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for k in ("feasible", "seats", "plan", "total_gpus", "cost_usd", "alternatives"):
        assert k in d
    assert d["feasible"] and d["total_gpus"] > 0 and d["cost_usd"] > 0
    for a in d["plan"]:
        for k in ("workload", "gpu", "gpus_per_replica", "tp", "pp", "ep", "replicas"):
            assert k in a
    rows = list(csv.DictReader(out.open()))
    assert rows and rows[0]["rank"] == "1"
    t = invoke("solve", path)
    assert t.exit_code == 0 and "Recommendation" in t.output


def test_same_file_gives_byte_identical_output():
    p = ROOT / "scenarios" / "two-workloads.yaml"
    a = invoke("solve", p, "--format", "json").output
    b = invoke("solve", p, "--format", "json").output
    assert a == b


def test_compare_by_vendor_and_gpu(tmp_path):
    out = tmp_path / "cmp.csv"
    r = invoke(
        "compare", ROOT / "scenarios" / "chat-assistant.yaml", "--by", "vendor", "--out", out
    )
    assert r.exit_code == 0 and "nvidia" in r.output and "amd" in r.output
    assert {row["vendor"] for row in csv.DictReader(out.open())} == {"nvidia", "amd"}
    d = json.loads(
        invoke(
            "compare", ROOT / "scenarios" / "chat-assistant.yaml", "--by", "gpu", "--format", "json"
        ).output
    )
    names = [g["group"] for g in d["groups"]]
    assert "h200" in names and "mi300x" in names


def test_sweep_rows_per_combination(tmp_path):
    out = tmp_path / "sweep.csv"
    r = invoke(
        "sweep",
        chat(tmp_path),
        "--set",
        "workloads.chat.users=100,400",
        "--set",
        "budget.max_usd=1e3,null",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    lines = [
        ln for ln in r.output.splitlines() if ln.strip() and not ln.startswith(("-", " workloads"))
    ]
    assert len([ln for ln in lines if ln.split()[0] in ("100", "400")]) == 4
    rows = list(csv.DictReader(out.open()))
    assert {r_["workloads.chat.users"] for r_ in rows} == {"100", "400"}


def test_sweep_bad_set_is_bad_input(tmp_path):
    r = invoke("sweep", chat(tmp_path), "--set", "users")
    assert r.exit_code == 2 and "KEY=V1,V2" in r.output
    r = invoke("sweep", chat(tmp_path), "--set", "workloads.nope.users=1")
    assert r.exit_code == 2 and "no list item named 'nope'" in r.output


def test_csv_cells_that_would_run_as_formulas_are_escaped(tmp_path):
    assert escape_cell("=SUM(A1)") == "'=SUM(A1)"
    assert escape_cell("+1") == "'+1" and escape_cell("@x") == "'@x" and escape_cell("-x") == "'-x"
    assert escape_cell(-3.5) == -3.5 and escape_cell("ok") == "ok"
    p = tmp_path / "x.csv"
    write_csv([{"workload": "=cmd|'/c calc'!A1", "n": -1}], p)
    row = next(csv.DictReader(p.open()))
    assert row["workload"].startswith("'=") and row["n"] == "-1"


def test_csv_write_is_atomic(tmp_path):
    p = tmp_path / "plans.csv"
    p.write_text("old")

    class Boom:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_csv([{"a": Boom()}], p)
    assert p.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["plans.csv"]


def test_planner_capacity_respects_targets(tmp_path):
    pl = SearchSpace(load_scenario(chat(tmp_path, tps=30)))
    for o in pl.options:
        from planner.capacity import operating_point

        op = operating_point(o.ev, o.workload, o.cap.units)
        assert op.tokens_per_s >= 30 - 1e-9 and op.ttft_s <= 2.0 + 1e-9


def test_sizing_follows_think_time_and_targets(tmp_path):
    """Longer think time: fewer GPUs for the same people; tighter speed: more."""

    def gpus(extra_workload: str = "", tps: int = 20) -> int:
        text = (
            chat(tmp_path, users=3000, tps=tps)
            .read_text()
            .replace("    tokens_per_s:", extra_workload + "    tokens_per_s:")
        )
        p = write(tmp_path, text, "w.yaml")
        plan = plan_scenario(load_scenario(p)).plan
        types = {a.gpu for a in plan.assignments}
        return plan.cost_usd, sum(a.gpus for a in plan.assignments), types

    busy = gpus()
    relaxed = gpus("    think_time_s: 30\n")
    assert relaxed[0] <= busy[0] and relaxed[1] < busy[1]
    tight = gpus(tps=60)  # whole servers: the cost steps
    assert tight[0] >= busy[0] and tight != busy
    if tight[2] == busy[2]:  # on the same GPU types the GPUs running replicas do not fall
        assert tight[1] >= busy[1]  # (a faster, dearer type may need fewer)


def test_serving_options_in_scenario(tmp_path):
    text = (
        chat(tmp_path, users=3000)
        .read_text()
        .replace(
            "    tokens_per_s:",
            "    prefix_hit_rate: 0.5\n    speculative: {tokens: 3, acceptance: 0.7}\n"
            "    tokens_per_s:",
        )
    )
    p = write(tmp_path, text, "opts.yaml")
    sc = load_scenario(p)
    assert sc.workloads[0].serving().speculative.tokens == 3
    assert plan_scenario(sc).feasible


def test_disaggregation_auto_is_never_costlier_and_only_is_honoured(tmp_path):
    base = (
        chat(tmp_path, users=3000, ttft=3.0, tps=40)
        .read_text()
        .replace("input_tokens: 1000", "input_tokens: 12000")
        .replace("llama-3.1-8b", "llama-3.3-70b")
    )
    costs = {}
    for mode in ("off", "auto", "only"):
        p = write(
            tmp_path,
            base.replace(
                "    tokens_per_s:",
                f"    disaggregation: {mode}\n    think_time_s: 20\n    tokens_per_s:",
            ),
            f"{mode}.yaml",
        )
        res = plan_scenario(load_scenario(p), top=1)
        assert res.feasible, mode
        costs[mode] = res.plan.cost_usd
        if mode == "only":
            assert all(a.prefill_replicas for a in res.plan.assignments)
        if mode == "off":
            assert not any(a.prefill_replicas for a in res.plan.assignments)
    assert costs["auto"] <= min(costs["off"], costs["only"]) + 1e-6


def test_infeasible_family_workload_names_the_limit_and_nearest_miss(tmp_path):
    text = (ROOT / "scenarios" / "image-generation.yaml").read_text()
    p = write(tmp_path, text.replace("max_s_per_image: 4 ", "max_s_per_image: 0.01 "))
    r = invoke("solve", p)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "workload 'drafts'" in r.output and "max_s_per_image 0.01" in r.output
    assert "the fastest" in r.output


def test_embedding_input_beyond_model_maximum_is_named(tmp_path):
    text = (ROOT / "scenarios" / "rag-service.yaml").read_text()
    p = write(tmp_path, text.replace("input_tokens: 512", "input_tokens: 10000", 1))
    r = invoke("solve", p)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "bge-m3 reads at most 8,192 tokens" in r.output


def test_llm_prompt_beyond_declared_context_is_noted(tmp_path):
    p = chat(tmp_path)
    text = p.read_text()
    assert "input_tokens" in text
    p2 = write(tmp_path, re.sub(r"input_tokens: \d+", "input_tokens: 140000", text), "long.yaml")
    r = invoke("solve", p2, "--format", "json")
    assert "131,072" in r.output  # llama-3.1-8b's max_position_embeddings, as a plan note


def test_language_model_under_a_family_kind_is_named(tmp_path):
    p = write(
        tmp_path,
        "workloads:\n  - name: w\n    kind: embedding\n    model: llama-3.1-8b\n"
        "    docs_per_s: 10\n",
    )
    r = invoke("solve", p)
    assert r.exit_code == 2 and "is a language model" in r.output and "kind" in r.output


def test_unwritable_csv_is_a_clear_error_and_leaves_nothing(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    r = invoke(
        "solve", str(ROOT / "scenarios" / "chat-assistant.yaml"), "--out", str(blocker / "x.csv")
    )
    assert r.exit_code == 2 and "cannot write" in r.output and "Traceback" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_robot_policy_too_fast_a_control_rate_names_the_fastest(tmp_path):
    text = (ROOT / "scenarios" / "robot-fleet.yaml").read_text()
    p = write(tmp_path, re.sub(r"control_hz: [0-9.]+", "control_hz: 10000", text, count=1))
    r = invoke("solve", p)
    assert r.exit_code == 1 and "control_hz 10000" in r.output and "ms per action chunk" in r.output


@pytest.mark.parametrize("gpu,tp", [("h100-sxm", 2), ("mi300x", 4), ("b200", 4)])
def test_capacity_is_the_exact_largest_passing_user_count(gpu, tp):
    """The bracketing search must land on the user count an exhaustive scan finds: one
    user short over-buys GPUs, one over misses the target; and the limit it names is the
    one the next user count breaks first."""
    import numpy as np

    from estimator import Evaluator, Parallel, get_gpu, get_model
    from planner.capacity import _curve, llm_capacity, steps_for, targets
    from planner.scenario import load_scenario

    w = load_scenario(ROOT / "benchmarks" / "three_workloads.yaml").workloads[0]
    ev = Evaluator(get_model(w.model), get_gpu(gpu), Parallel(tp=tp), w.weights, w.kv_cache)
    cap = llm_capacity(ev, w)
    curve, _ = _curve(ev, w, steps_for(ev, w), None)
    n = np.arange(1, int(cap.units * 1.3) + 3)
    lp = curve(n)
    ttft, tps = targets(w, ev)
    fast = lp.per_user_tokens_per_s >= tps
    ok = np.cumprod(np.asarray(lp.fits) & (lp.ttft_pct_s <= ttft) & fast).astype(bool)
    assert cap.units >= 2 and cap.units == int(n[ok.sum() - 1])
    k = cap.units  # the index of one user more
    want = "memory" if not lp.fits[k] else "tokens_per_s" if not fast[k] else "ttft"
    assert cap.binding == want


@pytest.mark.parametrize(
    "kind, body, key",
    [
        ("robot_policy", "model: pi0\n  robots: -1", "robots"),
        ("speech", "model: whisper-large-v3\n  streams: 0", "streams"),
        ("embedding", "model: bge-m3\n  docs_per_s: -5", "docs_per_s"),
        ("image_generation", "model: sdxl\n  images_per_s: 1\n  steps: 0", "steps"),
    ],
)
def test_every_kind_names_the_bad_key_with_its_line(tmp_path, kind, body, key):
    """Errors point at workloads.N.key of the file, whatever the kind (the kind's tag is
    not a key of the file: the registry of kinds says which tags to skip)."""
    p = tmp_path / "s.yaml"
    p.write_text(f"workloads:\n- name: w\n  kind: {kind}\n  {body}\n")
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    assert f"workloads.0.{key}:" in str(e.value)
    assert f"{kind}." not in str(e.value)


def test_the_same_fleet_shows_the_same_numbers_in_every_table():
    """A single-type recommendation reappears in the best-per-GPU table with its own
    assignment, cost and $/M tokens, not a re-spread of the same GPUs."""
    res = plan_scenario(load_scenario(ROOT / "scenarios" / "two-workloads.yaml"))
    same = [p for p in res.per_gpu_best if p.gpus_by_type == res.plan.gpus_by_type]
    assert same and all(p.usd_per_million_tokens == res.plan.usd_per_million_tokens for p in same)


def test_plans_note_the_gpu_types_no_published_run_calibrates(tmp_path):
    """A plan on a GPU whose family the calibration set never measured (Gaudi 3) says it runs
    at the default factors; one on a calibrated family (H100: Hopper) carries no such note."""
    for gpu, noted in (("gaudi3", True), ("h100-sxm", False)):
        text = CHAT.format(users=400, ttft=2.0, tps=20, extra="")
        p = write(tmp_path, text.replace("[h100-sxm, l40s, mi300x]", f"[{gpu}]"), f"{gpu}.yaml")
        res = plan_scenario(load_scenario(p), top=1)
        assert res.feasible and set(res.plan.gpus_by_type) == {gpu}
        flagged = [n for n in res.notes if "the calibration has no factor" in n]
        assert bool(flagged) == noted, res.notes
        if noted:
            assert flagged[0].startswith("gaudi3: ") and "gaudi3 family" in flagged[0]


def test_plans_say_what_published_runs_measured_of_their_stack(tmp_path):
    """A plan whose recommendation runs a stack published runs measured slower than the
    estimate (DeepSeek-R1 under SGLang on MI300X: estimator.caveats) says so beside it; the
    same model under vLLM carries no such note, only vLLM's own (its unfitted front end)."""
    ds = """name: ds
workloads:
  - {name: chat, model: deepseek-r1, weights: fp8, kv_cache: fp8, engine: ENGINE, users: 300,
     hours_per_person: 3, utilisation: 0.5, input_tokens: 2000, output_tokens: 400,
     ttft_s: 2.0, tokens_per_s: 20, think_time_s: 20}
fleet: {gpus: [mi300x], max_gpus_per_replica: 8}
"""
    for engine, noted in (("sglang", True), ("vllm", False)):
        p = write(tmp_path, ds.replace("ENGINE", engine), f"{engine}.yaml")
        res = plan_scenario(load_scenario(p), top=1)
        assert res.feasible and set(res.plan.gpus_by_type) == {"mi300x"}
        said = [n for n in res.notes if n.startswith("chat on mi300x: measured:")]
        cdna3 = [n for n in said if "MI300X/MI325X" in n]
        assert bool(cdna3) == noted, res.notes
        if noted:
            assert "1.3-2.6x" in cdna3[0]
        else:
            assert len(said) == 1 and "vLLM's own time to a first token" in said[0]


def test_plans_of_prompt_heavy_moe_workloads_say_their_published_shortfall(tmp_path):
    """A plan whose MoE workload sends prompts ten times its answers or more says what such
    published runs measured (estimator.caveats, by the workload's shape); the same model
    answering at length does not."""
    moe = """name: rag
workloads:
  - {name: rag, model: qwen3-30b-a3b, weights: fp8, users: 200, hours_per_person: 3,
     utilisation: 0.5, input_tokens: IN, output_tokens: OUT, ttft_s: 3.0, tokens_per_s: 20,
     think_time_s: 30}
fleet: {gpus: [h100-sxm], max_gpus_per_replica: 2}
"""
    for (isl, osl), noted in (((6000, 300), True), ((1000, 1000), False)):
        text = moe.replace("IN", str(isl)).replace("OUT", str(osl))
        res = plan_scenario(load_scenario(write(tmp_path, text, f"rag{isl}.yaml")), top=1)
        assert res.feasible
        said = [n for n in res.notes if "where prompts dwarf answers" in n]
        assert bool(said) == noted, res.notes
        if noted:
            assert said[0].startswith("rag on h100-sxm: measured:")


def test_calibrated_only_keeps_the_gpus_the_accuracy_figures_cover(tmp_path):
    """fleet.calibrated_only plans only on GPUs whose family's bandwidth and compute shares
    are both fitted (H100, MI300X here), says which it left out (L40S: its compute share is
    the default), and names the rule when it leaves nothing."""
    text = CHAT.format(users=400, ttft=2.0, tps=20, extra="")
    p = write(
        tmp_path,
        text.replace(
            "  max_gpus_per_replica: 4", "  max_gpus_per_replica: 4\n  calibrated_only: true"
        ),
    )
    res = plan_scenario(load_scenario(p), top=1)
    assert res.feasible and set(res.plan.gpus_by_type) <= {"h100-sxm", "mi300x"}
    assert any(n.startswith("left out l40s: fleet.calibrated_only") for n in res.notes)
    assert not any("the calibration has no factor" in n for n in res.notes)
    only = write(
        tmp_path,
        text.replace("[h100-sxm, l40s, mi300x]", "[l40s]").replace(
            "  max_gpus_per_replica: 4", "  max_gpus_per_replica: 4\n  calibrated_only: true"
        ),
        "l40s.yaml",
    )
    r = invoke("solve", only)
    assert r.exit_code == 2 and "fleet.calibrated_only" in r.output and "Traceback" not in r.output


def test_a_plan_row_carries_the_bands_of_its_figures():
    """Each language-model row of a plan carries the p10-p90 of its TTFT, per-user speed and
    replica output tokens/s at its operating point: the bands estimate and curve carry for
    that model class and GPU (people's arrivals); a row of another family, those of its
    pass time and rates (its family's band)."""
    from estimator.bands import band_factors
    from estimator.catalog import get_gpu
    from estimator.resolve import get_model

    res = plan_scenario(load_scenario(ROOT / "scenarios" / "chat-assistant.yaml"))
    a = res.plan.assignments[0]
    f = band_factors("ttft", get_gpu(a.gpu), get_model(a.model))
    assert a.bands["ttft_s"]["p90"] == pytest.approx(a.ttft_s * f["p90"])
    assert a.bands["ttft_s"]["p10"] < a.ttft_s < a.bands["ttft_s"]["p90"]
    assert a.bands["tokens_per_s"]["p10"] < a.tokens_per_s < a.bands["tokens_per_s"]["p90"]
    assert "ttft:" in a.bands["basis"]
    img = plan_scenario(load_scenario(ROOT / "scenarios" / "image-generation.yaml"))
    for r in img.plan.assignments:
        t = r.bands["s_per_batch"]
        assert t["p10"] < r.metrics["s_per_batch"] < t["p90"]
        assert "measured/predicted time" in r.bands["basis"]


def test_solve_table_says_each_rows_band():
    """solve's table gives each row's p10-p90 under the plan: a language model's TTFT and
    per-user speed, another family's pass, from the rows' own bands."""
    out = CliRunner().invoke(main, ["solve", str(ROOT / "scenarios" / "chat-assistant.yaml")])
    a = plan_scenario(load_scenario(ROOT / "scenarios" / "chat-assistant.yaml")).plan.assignments[0]
    t = a.bands["ttft_s"]
    # its workload has rows of several splits: each is named
    where = f"({a.replicas}x{a.gpus_per_replica} {a.gpu} {a.split()})"
    assert f"{a.workload} {where} TTFT {t['p10']:.2f}-{t['p90']:.2f} s" in out.output
    img = CliRunner().invoke(main, ["solve", str(ROOT / "scenarios" / "image-generation.yaml")])
    assert "p10-p90 (the estimates' cross-validated error): drafts pass " in img.output
