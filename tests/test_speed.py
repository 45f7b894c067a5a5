"""The fast paths give the numbers of the plain ones: the load model stacked over many
configurations, the capacity search batched over candidates, the binary search for the
decode batch, and capacities remembered between solves (the queue's closed form and window
sums: tests/test_queues.py)."""

import numpy as np
import pytest

from estimator import Evaluator, Parallel, get_gpu, get_model
from estimator.load import decode_batch, load_point
from estimator.steps import ServingOptions, Speculative, Steps, prepare_steps, prepare_steps_many
from planner import capacity
from planner.capacity import llm_capacities, scan_capacity
from planner.workloads import LLMWorkload

CONFIGS = [
    ("llama-3.1-8b", "h100-sxm", 1, "fp8"),
    ("llama-3.1-8b", "l40s", 1, "bf16"),
    ("llama-3.1-70b", "h200", 4, "fp8"),
    ("qwen3-30b-a3b", "mi300x", 1, "bf16"),
    ("llama-3.1-70b", "a100-80gb-sxm", 8, "bf16"),
]


def _chat(**targets) -> LLMWorkload:
    return LLMWorkload(
        name="chat",
        model="llama-3.1-8b",
        users=1000.0,
        hours_per_person=2.0,
        utilisation=0.5,
        input_tokens=1500,
        output_tokens=300,
        **targets,
    )


def _steps(think=0.0):
    out = []
    for model, gpu, tp, w in CONFIGS:
        ev = Evaluator(get_model(model), get_gpu(gpu), Parallel(tp=tp), w, "fp8")
        out.append((ev, prepare_steps(ev, 1500, 300, ServingOptions(think_time_s=think))))
    return out


@pytest.mark.parametrize("think", [0.0, 20.0])
def test_stacked_load_point_equals_one_configuration_at_a_time(think):
    items = _steps(think)
    users = [np.array([1.0, 3, 17, 64, 200, 950]), np.array([2.0, 40]), np.arange(1.0, 30)]
    users += [np.array([5.0, 500, 5000]), np.array([1.0])]
    stacked = Steps.stack([st for _, st in items])
    config = np.concatenate([np.full(len(u), i) for i, u in enumerate(users)])
    together = load_point(stacked, np.concatenate(users), think, 90.0, config=config)
    start = 0
    for (_, st), u in zip(items, users, strict=True):
        alone = load_point(st, u, think, 90.0)
        part = together.take(slice(start, start + len(u)))
        start += len(u)
        for f in ("ttft_s", "ttft_pct_s", "tpot_s", "output_tokens_per_s", "batch", "memory_gb"):
            np.testing.assert_allclose(getattr(part, f), getattr(alone, f), rtol=1e-12)
        assert (part.fits == alone.fits).all() and (part.stable == alone.stable).all()


def test_batched_capacity_search_equals_one_candidate_at_a_time():
    items = _steps()
    bindings = set()
    for ttft, tps in ((1.5, 20.0), (0.25, None), (30.0, None)):
        w = _chat(ttft_s=ttft, tokens_per_s=tps)
        capacity._MEMO.clear()
        batched = llm_capacities([(ev, st, w) for ev, st in items])
        capacity._MEMO.clear()
        alone = [scan_capacity(ev, w, st) for ev, st in items]
        assert batched == alone
        bindings |= {c.binding for c in alone}
    assert len(bindings) >= 2  # the searches ended on different limits


def test_a_search_started_near_its_speed_bound_finds_the_same_seats(monkeypatch):
    """The first counts placed around the users at which the speed target binds
    (capacity.speed_bound_users) close in on the same seats and limit as a geometric grid,
    for targets that bind on speed, on TTFT or on memory, with and without think time."""
    rng = np.random.default_rng(7)
    items = _steps()
    guesses, limits = [], set()
    real = capacity.speed_bound_users

    def seen(*a):
        g = real(*a)
        guesses.append(g)
        return g

    for _ in range(12):
        w = _chat(
            ttft_s=float(rng.choice([0.2, 1.0, 5.0])),
            tokens_per_s=float(rng.choice([10.0, 30.0, 60.0, 120.0])),
            think_time_s=float(rng.choice([0.0, 5.0, 30.0])),
        )
        capacity._MEMO.clear()
        monkeypatch.setattr(capacity, "speed_bound_users", seen)
        guided = llm_capacities([(ev, st, w) for ev, st in items])
        capacity._MEMO.clear()
        monkeypatch.setattr(capacity, "speed_bound_users", _no_guess)
        grid = llm_capacities([(ev, st, w) for ev, st in items])
        assert guided == grid
        limits |= {c.binding for c in grid}
    assert np.isfinite(np.concatenate(guesses)).mean() > 0.3  # the guess was used
    assert {"tokens_per_s", "ttft"} <= limits


def _no_guess(st, think, tokens_per_s, n_hi):
    return np.full(len(n_hi), np.nan)


def test_several_workloads_searched_together_equal_each_alone():
    """Replicas of workloads with other think times, percentiles and targets share every
    search round (their load points stacked, one think time and percentile per row): each
    capacity is the one its workload's own search finds."""
    quick = _chat(ttft_s=0.8, tokens_per_s=30.0)
    people = _chat(ttft_s=3.0, think_time_s=30.0, ttft_percentile=99.0)
    slow = _chat(tokens_per_s=12.0, ttft_percentile=50.0)
    jobs = []
    for w in (quick, people, slow):
        for ev, _ in _steps():
            jobs.append((ev, prepare_steps(ev, 1500, 300, w.serving()), w))
    capacity._MEMO.clear()
    together = llm_capacities(jobs)
    for w in (quick, people, slow):
        capacity._MEMO.clear()
        mine = [(ev, st, x) for ev, st, x in jobs if x is w]
        assert llm_capacities(mine) == [
            c for c, (_, _, x) in zip(together, jobs, strict=True) if x is w
        ]
    assert len({c.units for c in together}) > 5


def _least_root(table: np.ndarray, slots: int, k: float) -> float:
    """The plain search: the first whole batch j with k·t(j) <= j, then the segment's root."""
    h = k * table - np.arange(len(table))
    below = np.flatnonzero(h <= 0)
    if not below.size:
        return float(slots)
    j = below[0]
    return 0.0 if j == 0 else j - 1 + h[j - 1] / (h[j - 1] - h[j])


@pytest.mark.parametrize(
    ("model", "weights", "tokens", "opts"),
    [
        ("llama-3.3-70b", "fp8", (2000, 400), None),  # dense GQA, every split to 64 GPUs
        ("deepseek-r1", "fp8", (2000, 4000), None),  # MLA + MoE: EP, attention-DP, the NIC
        ("qwen3-30b-a3b", "int4", (16000, 800), ServingOptions(prefix_hit_rate=0.3)),
        ("jamba-1.5-mini", "bf16", (3000, 300), ServingOptions(speculative=Speculative())),
    ],
)
def test_steps_prepared_across_gpu_types_equal_each_alone(model, weights, tokens, opts):
    """One evaluator per split whose GPU numbers are columns gives every candidate's steps
    bit for bit (the same arithmetic element by element), whatever the GPU, its links and
    the split's regime; an encoder's seconds apply per candidate."""
    from estimator import gpu_catalog
    from estimator.engines import configure
    from planner.candidates import enumerate_candidates

    gpus = list(gpu_catalog().items.values())
    cands, _ = enumerate_candidates(get_model(model), gpus, 64, weights, "fp8", configure("vllm"))
    evs = [ev for _, ev in cands]
    assert len({ev.gpu.name for ev in evs}) > 10 and len({ev.par for ev in evs}) > 5
    enc = np.linspace(0.0, 0.01, len(evs))
    together = prepare_steps_many(evs, *tokens, opts, enc)
    for ev, st, e in zip(evs, together, enc, strict=True):
        alone = prepare_steps(ev, *tokens, opts, e)
        for f in Steps.__dataclass_fields__:
            a, b = getattr(alone, f), getattr(st, f)
            assert np.shape(a) == np.shape(b) and np.array_equal(a, b), (ev.gpu.name, ev.par, f)


def test_only_evaluators_alike_but_for_their_gpu_stack():
    """A split whose group fits one GPU's scale-up domain and not another's takes other
    branches: those evaluators are never stacked (prepare_steps_many keeps them apart)."""
    from estimator.across_gpus import stack, stack_key

    m = get_model("llama-3.1-70b")
    nvl = Evaluator(m, get_gpu("gb200"), Parallel(tp=16), "fp8", "fp8")  # NVL72: inside
    h100 = Evaluator(m, get_gpu("h100-sxm"), Parallel(tp=16), "fp8", "fp8")  # 8: the NIC
    assert stack_key(nvl) != stack_key(h100)
    with pytest.raises(ValueError, match="differ"):
        stack([nvl, h100])
    alone = [prepare_steps(ev, 1000, 200) for ev in (nvl, h100)]
    assert [st.iter_table.tolist() for st in prepare_steps_many([nvl, h100], 1000, 200)] == [
        st.iter_table.tolist() for st in alone
    ]


def test_decode_batch_binary_search_finds_the_least_root():
    rng = np.random.default_rng(1)
    for _ in range(300):
        slots = int(rng.integers(1, 400))
        # rising, with kinks and flat stretches: compute- and memory-bound regimes
        table = 0.01 + np.cumsum(rng.choice([0.0, 1e-5, 1e-4, 1e-3], size=slots + 1))
        st = Steps(slots, 100, 100, 8192, 1e-5, 0.01, 1.0, table, table, 1.0, 1.0)
        k = 10 ** rng.uniform(0, 5, size=20)
        got = decode_batch(st, k)
        want = [_least_root(table, slots, x) for x in k]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_a_second_solve_reuses_capacities_and_a_new_target_does_not(tmp_path, monkeypatch):
    import planner

    calls = []
    real = capacity.scan_capacity
    monkeypatch.setattr(capacity, "scan_capacity", lambda *a, **k: calls.append(1) or real(*a, **k))
    text = """
workloads:
  - name: chat
    model: llama-3.1-8b
    users: {users}
    hours_per_person: 2
    utilisation: 0.5
    input_tokens: 1000
    output_tokens: 200
    ttft_s: {ttft}
    tokens_per_s: 20
    disaggregation: auto
fleet:
  gpus: [h100-sxm, l40s]
  max_gpus_per_replica: 2
"""
    p = tmp_path / "s.yaml"
    capacity._MEMO.clear()
    p.write_text(text.format(users=400, ttft=2.0))
    first = planner.solve(planner.load_scenario(p))
    n_first = len(calls)
    p.write_text(text.format(users=4000, ttft=2.0))  # demand only: the same replicas
    planner.solve(planner.load_scenario(p))
    assert len(calls) == n_first and n_first > 0
    p.write_text(text.format(users=400, ttft=1.0))  # a new target: new capacities
    planner.solve(planner.load_scenario(p))
    assert len(calls) > n_first
    p.write_text(text.format(users=400, ttft=2.0))
    again = planner.solve(planner.load_scenario(p))
    assert again.to_dict() == first.to_dict()


def test_the_command_line_loads_only_what_a_command_uses():
    """`planner --help` and the option tables import neither numpy, the estimator's models
    nor the solver; the lazy package names stay the functions their modules are named for."""
    import subprocess
    import sys

    code = (
        "import sys, planner.cli; "
        "print(sorted(m for m in ('numpy', 'ortools', 'scipy', 'pandas', 'estimator.llm', "
        "'planner.solve') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = (
        "import planner, estimator; import planner.solve, planner.sweep, estimator.curves; "
        "print(callable(planner.solve), callable(planner.sweep), callable(estimator.curve))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True True True"


def test_a_solve_from_the_command_line_loads_neither_scipy_nor_pandas():
    """Each costs a cold `planner solve` a third of a second or more: the queue's special
    functions are numpy (estimator/special.py) and the tables are tabulate."""
    import subprocess
    import sys
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "two-workloads.yaml"
    code = (
        "import sys; from planner.cli import run; sys.argv = ['planner', 'solve', sys.argv[1]]\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('scipy', 'pandas') if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(scenario)], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("Scenario: Chat + autocomplete")
    assert out.stderr.strip().splitlines()[-1] == "[]"


def test_the_command_line_tunes_its_own_collector_and_the_library_does_not():
    """The script raises the young-generation trigger for its own process and freezes what is
    alive when its command ends; a notebook that imports the planner (its command line
    included) and solves keeps Python's collector settings."""
    import subprocess
    import sys
    from pathlib import Path

    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "two-workloads.yaml"
    code = (
        "import gc, sys; before = gc.get_threshold(); import planner\n"
        "planner.solve(planner.load_scenario(sys.argv[1]), top=1)\n"
        "from planner.cli import GC_THRESHOLD, run\n"
        "print(gc.get_threshold() == before and gc.get_freeze_count() == 0)\n"
        "sys.argv = ['planner', '--version']\n"
        "try:\n    run()\nexcept SystemExit as e:\n    code = e.code\n"
        "print(gc.get_threshold()[0] == GC_THRESHOLD and gc.get_freeze_count() > 0, code)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(scenario)], capture_output=True, text=True, check=True
    )
    lines = out.stdout.strip().splitlines()
    assert (lines[0], lines[-1]) == ("True", "True 0")


def test_operating_points_computed_together_equal_one_at_a_time():
    from planner.capacity import _operating_point, operating_points

    w = _chat()
    items = [(ev, n) for (ev, _), n in zip(_steps(), (1, 7, 40, 3, 120), strict=True)]
    capacity._MEMO.clear()
    operating_points(items, w)
    for ev, n in items:
        key = ("point", n, *capacity.config_key(ev, w, None))
        assert capacity._MEMO[key] == _operating_point(ev, w, n, None)


def test_wide_tables_on_batch_knots_match_every_whole_batch():
    """Past DENSE_KNOTS sequences the iteration time is tabulated every 1/128 of the batch:
    at every whole batch up to the slots, the table's interpolation is within 0.3% of the
    decode step itself (DeepSeek-R1, attention-DP over 8 H200s: thousands of slots)."""
    from estimator import Evaluator, Parallel, get_gpu, get_model
    from estimator.knots import DENSE_KNOTS
    from estimator.steps import prepare_steps

    ev = Evaluator(
        get_model("deepseek-r1"), get_gpu("h200"), Parallel(tp=8, attention_dp=True), "fp8", "fp8"
    )
    st = prepare_steps(ev, 1000, 1000)
    assert st.slots > 2 * DENSE_KNOTS and len(st.iter_table) < st.slots / 3
    b = np.arange(1, st.slots + 1, dtype=float)
    exact = ev.decode_step(b, 1000 + 1000 / 2).total
    np.testing.assert_allclose(st.t_iter(b), exact, rtol=3e-3)
    np.testing.assert_array_equal(st.t_iter(b[:DENSE_KNOTS]), exact[:DENSE_KNOTS])


def test_decode_batch_on_sparse_knots_finds_the_least_root():
    """The least root of k·t(b) = b on the piecewise-linear table over sparse knots, against
    a dense scan of the same interpolant."""
    from estimator.knots import BATCH_KNOTS

    rng = np.random.default_rng(4)
    for _ in range(100):
        slots = int(rng.integers(1100, 20000))
        x = BATCH_KNOTS[: int(np.searchsorted(BATCH_KNOTS, slots)) + 1]
        table = 0.01 + 1e-5 * x + np.maximum(0, x - rng.uniform(0, slots)) * 3e-5
        st = Steps(slots, 100, 100, 8192, 1e-5, 0.01, 1.0, table, table, 1.0, 1.0)
        fine = np.linspace(0, slots, 200_001)
        for k in 10 ** rng.uniform(1, 5, size=5):
            got = float(decode_batch(st, k)[0])
            below = np.flatnonzero(k * np.interp(fine, x, table) - fine <= 0)
            want = fine[below[0]] if below.size else float(slots)
            assert abs(got - want) <= fine[1] + 1e-9 * slots, (slots, k, got, want)


@pytest.mark.parametrize("think", [0.0, 20.0])
def test_a_rate_bracket_changes_no_load_point(think):
    """The fixed point started from the rates of fewer and more users (as the capacity
    search does) settles on the same load points, and a bracket that does not hold the
    root (too high, too low, unknown) falls back to the whole range."""
    for _, st in _steps(think):
        users = np.array([1.0, 5, 40, 300, 900, 2500])
        plain = load_point(st, users, think, 90.0)
        rate = np.asarray(plain.rate)
        brackets = [
            (rate * 0.97, rate * 1.05),  # holds it
            (rate * 1.5, rate * 2.0),  # above it
            (rate * 0.2, rate * 0.5),  # below it
            (np.full(6, np.nan), np.full(6, np.nan)),  # nothing known
        ]
        for bracket in brackets:
            got = load_point(st, users, think, 90.0, rate_bracket=bracket)
            for f in ("ttft_s", "ttft_pct_s", "tpot_s", "rate", "batch"):
                np.testing.assert_allclose(getattr(got, f), getattr(plain, f), rtol=1e-7)
            assert (got.fits == plain.fits).all() and (got.stable == plain.stable).all()


@pytest.mark.parametrize("think", [0.0, 20.0])
def test_narrowing_to_the_settling_rows_changes_no_rate(think):
    """Once most user counts have settled, the fixed point's steps evaluate only those still
    settling (each count's model on its own): bit for bit the rates of evaluating them all."""
    from estimator.fixed_point import rate_fixed_point
    from estimator.load import _closed_loop, saturation_rate

    n = np.unique(np.round(np.geomspace(1, 5000, 60)))
    for _, st in _steps(think):
        at_rate, (aligned, *_) = _closed_loop(st, n, think, None)
        x_max = np.broadcast_to(saturation_rate(aligned), n.shape)
        plain = rate_fixed_point(at_rate, x_max, n)
        calls = []

        def narrow(rows, st=st, calls=calls):
            calls.append(rows.size)
            return _closed_loop(st, n[rows], think, None)[0]

        narrowed = rate_fixed_point(at_rate, x_max, n, narrow=narrow)
        assert calls and min(calls) < n.size  # it did narrow
        np.testing.assert_array_equal(narrowed[0], plain[0])
        np.testing.assert_array_equal(narrowed[1], plain[1])
