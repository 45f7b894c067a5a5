"""Sweeps: the same rows whatever runs them (this process, local processes, a Dask cluster),
resuming an interrupted sweep, Monte-Carlo draws of uncertain inputs, and their errors."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.progress import Progress
from planner.results import PLAN_ROW_FIELDS, plan_rows
from planner.sweep import sweep
from planner.uncertain import Distribution, draw_all

SCENARIO = """
name: sweep test
workloads:
  - name: chat
    model: llama-3.1-8b
    weights: fp8
    users: {users}
    hours_per_person: 2
    utilisation: 0.5
    input_tokens: 1000
    output_tokens: 200
    ttft_s: 2.0
    tokens_per_s: 20
fleet:
  gpus: [h100-sxm, l40s]
  max_gpus_per_replica: 2
"""
SETS = [("workloads.chat.users", [100, 400, 1600]), ("budget.max_usd", [3e5, None])]


@pytest.fixture
def scenario(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO.format(users=400))
    return p


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_rows_are_identical_whatever_the_backend(scenario, tmp_path, monkeypatch):
    import planner.workers

    texts = {}
    can_fork = planner.workers.forks()
    for name, kw in {
        "serial": {},
        "forks": {"jobs": 2},
        "loky": {"jobs": 2},
        "dask": {"cluster": "local", "jobs": 2},
    }.items():
        # the local workers: forks of this process on Linux, loky's processes elsewhere
        forks = name == "forks" and can_fork
        monkeypatch.setattr(planner.workers, "forks", lambda f=forks: f)
        out = tmp_path / f"{name}.csv"
        s = sweep(scenario, SETS, out=out, **kw)
        planner.workers.release()
        texts[name] = out.read_text()
        assert not (tmp_path / f"{name}.csv.partial").exists()
        assert [p.index for p in s.points] == list(range(6))
    assert texts["serial"] == texts["forks"] == texts["loky"] == texts["dask"]
    rows = list(csv.DictReader(io.StringIO(texts["serial"])))
    assert [int(r["point"]) for r in rows] == sorted(int(r["point"]) for r in rows)
    assert {r["workloads.chat.users"] for r in rows} == {"100", "400", "1600"}


def test_an_interrupted_sweep_resumes_to_the_same_csv(scenario, tmp_path):
    from planner.results import PLAN_ROW_FIELDS
    from planner.sweep import fingerprint

    ref = tmp_path / "ref.csv"
    sweep(scenario, SETS, out=ref)
    text = ref.read_text()
    lines = text.splitlines(keepends=True)
    out = tmp_path / "s.csv"
    fields = ["point", *(k for k, _ in SETS), *PLAN_ROW_FIELDS]
    stamp = fingerprint(str(scenario), SETS, 0, 0, (), fields)
    # points 0 and 1 written whole; point 2's rows cut mid-line, its journal entry too
    rows = {p: [ln for ln in lines[1:] if ln.split(",")[0] == p] for p in ("0", "1", "2")}
    (tmp_path / "s.csv.partial").write_text(
        lines[0] + "".join(rows["0"] + rows["1"]) + rows["2"][0][:12]
    )
    journal = tmp_path / "s.csv.partial.done"
    journal.write_text(f"{stamp}\n0 {len(rows['0'])}\n1 {len(rows['1'])}\n2 ")
    s = sweep(scenario, SETS, out=out, resume=True)
    assert out.read_text() == text
    assert not journal.exists() and not (tmp_path / "s.csv.partial").exists()
    assert sum(p.result is None for p in s.points) == 2  # read back, not solved again

    def cells(sw):  # resumed rows come back with the types of a fresh run's
        return [[{k: r.get(k) for k in fields} for r in p.rows] for p in sw.points]

    assert cells(s) == cells(sweep(scenario, SETS))
    # a partial file of another sweep (other values) is refused, not mixed in
    (tmp_path / "s.csv.partial").write_text(lines[0] + "".join(rows["0"]))
    journal.write_text(f"{stamp}\n0 {len(rows['0'])}\n")
    r = run("sweep", scenario, "--set", "workloads.chat.users=5000", "--out", out, "--resume")
    assert r.exit_code == 2 and "different sweep" in r.output
    (tmp_path / "s.csv.partial").write_bytes(b"\xff\xfe\x00garbage")
    r = run("sweep", scenario, "--set", "workloads.chat.users=100", "--out", out, "--resume")
    assert r.exit_code == 2 and "delete it" in r.output
    r = run("sweep", scenario, "--set", "workloads.chat.users=100", "--resume")
    assert r.exit_code == 2 and "--resume needs --out" in r.output
    r = run("sweep", scenario, "--set", "workloads.chat.users=100", "--cluster", "nowhere")
    assert r.exit_code == 2 and "tcp://HOST:8786" in r.output, r.output
    blocked = tmp_path / "file"
    blocked.write_text("")
    r = run("sweep", scenario, "--set", "workloads.chat.users=100", "--out", blocked / "x.csv")
    assert r.exit_code == 2 and "cannot write" in r.output


@pytest.mark.skipif(
    not __import__("planner.workers").workers.forks(), reason="workers are forks on Linux only"
)
def test_a_worker_that_dies_stops_the_sweep_with_its_resume_hint(scenario, tmp_path, monkeypatch):
    """A worker killed mid-sweep (as for memory) ends the sweep with a clear error naming the
    partial file, not a traceback; --resume then finishes it to the serial sweep's CSV."""
    import importlib
    import os

    from planner.errors import SweepStopped

    sw = importlib.import_module("planner.sweep")  # the module (planner.sweep is the function)

    parent, real = os.getpid(), sw.solve_points

    def dies_in_a_worker(*a, **kw):  # a fork runs this copy: it dies as a killed process does
        if os.getpid() != parent:
            os._exit(137)
        return real(*a, **kw)

    monkeypatch.setattr(sw, "solve_points", dies_in_a_worker)
    out = tmp_path / "s.csv"
    # two workers and one dying: the other's result may be collected after the death, and
    # its next block is then submitted to a broken pool (the same stop, no traceback)
    for jobs in (2, 3):
        with pytest.raises(SweepStopped, match=r"s\.csv\.partial: --resume finishes it"):
            sweep(scenario, SETS, out=out, jobs=jobs)
    assert (tmp_path / "s.csv.partial").exists() and not out.exists()
    monkeypatch.setattr(sw, "solve_points", real)
    sweep(scenario, SETS, out=out, jobs=2, resume=True)
    ref = tmp_path / "ref.csv"
    sweep(scenario, SETS, out=ref)
    assert out.read_text() == ref.read_text()


def test_a_dask_block_whose_workers_die_stops_the_sweep(scenario, tmp_path, monkeypatch):
    """Dask gives up on a block after its workers died on it (KilledWorker): the sweep ends
    with the same one-line stop as a local worker's, naming the partial file."""
    import distributed

    from planner import SweepStopped  # the public name a notebook catches

    class Future:
        def result(self):
            raise distributed.KilledWorker("solve_points-1", "tcp://10.0.0.1:1234", 3)

    class Client:
        def __init__(self, *a, **kw):
            pass

        def scheduler_info(self):
            return {"workers": {"tcp://10.0.0.1:1234": {}}}

        def submit(self, *a, **kw):
            return Future()

        def close(self):
            pass

    monkeypatch.setattr(distributed, "Client", Client)
    monkeypatch.setattr(distributed, "as_completed", iter)
    with pytest.raises(SweepStopped, match=r"Dask workers .* died.*s\.csv\.partial"):
        sweep(scenario, SETS, out=tmp_path / "s.csv", cluster="tcp://scheduler:8786")


def test_jobs_0_is_one_process_per_core(scenario, tmp_path, monkeypatch):
    """--jobs 0 runs one process per core (here two), with the serial sweep's rows."""
    import os

    import planner.workers

    assert planner.workers.processes(0) == (os.cpu_count() or 1)
    assert planner.workers.processes(3) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    ref, out = tmp_path / "ref.csv", tmp_path / "all.csv"
    assert (
        run("sweep", scenario, "--set", "workloads.chat.users=100,400", "--out", ref).exit_code == 0
    )
    r = run("sweep", scenario, "--set", "workloads.chat.users=100,400", "--jobs", "0", "--out", out)
    assert r.exit_code == 0 and out.read_text() == ref.read_text()
    assert run("sweep", scenario, "--set", "workloads.chat.users=1", "--jobs", "-1").exit_code == 2


def test_ctrl_c_is_not_taken_by_the_search():
    """CP-SAT would catch SIGINT, stop early and return a plan that is not the cheapest: the
    planner's solver leaves Ctrl-C to the command."""
    from planner import cpsat
    from planner.optimize import _solver

    assert _solver(cpsat.new_model(), 1.0).parameters.catch_sigint_signal is False


def test_monte_carlo_samples_are_seeded_and_summarised(tmp_path):
    p = tmp_path / "u.yaml"
    p.write_text(SCENARIO.format(users="{dist: lognormal, median: 800, sigma: 0.5}"))
    a = sweep(p, [], samples=8, seed=3)
    b = sweep(p, [], samples=8, seed=3, jobs=2)
    c = sweep(p, [], samples=8, seed=4)
    assert a.rows() == b.rows() and a.rows() != c.rows()
    drawn = [pt.point["workloads.chat.users"] for pt in a.points]
    assert len(set(drawn)) == 8 and all(d > 0 for d in drawn)
    (d,) = a.distribution()
    assert d["samples"] == 8 and d["feasible_share"] == 1.0
    assert d["gpus_p10"] <= d["gpus_p50"] <= d["gpus_p90"]
    assert d["cost_usd_p10"] <= d["cost_usd_p50"] <= d["cost_usd_p90"]
    # more users never need fewer GPUs: the draws' order is the GPUs' order
    gpus = {pt.point["workloads.chat.users"]: pt.first()["plan_total_gpus"] for pt in a.points}
    ordered = [gpus[u] for u in sorted(gpus)]
    assert ordered == sorted(ordered)
    r = run("sweep", p, "--samples", "4", "--format", "json")
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.output)["distribution"]) == 1


def test_distributions_are_checked_and_solve_refuses_them(tmp_path):
    p = tmp_path / "u.yaml"
    p.write_text(SCENARIO.format(users="{dist: lognormal, median: 800}"))
    r = run("sweep", p, "--samples", "2")
    assert r.exit_code == 2 and "workloads.chat.users" in r.output and "sigma" in r.output
    p.write_text(SCENARIO.format(users="{dist: uniform, low: 100, high: 900}"))
    r = run("solve", p)
    assert r.exit_code == 2 and "is a distribution" in r.output and "--samples" in r.output
    p.write_text(SCENARIO.format(users=400))
    r = run("sweep", p, "--samples", "2")
    assert r.exit_code == 2 and "needs uncertain inputs" in r.output


def test_draws_follow_their_distribution():
    d = Distribution(dist="triangular", low=1.0, mode=2.0, high=4.0)
    x = [draw_all({"k": d}, 0, i)["k"] for i in range(2000)]
    assert min(x) >= 1.0 and max(x) <= 4.0
    assert sum(x) / len(x) == pytest.approx(7 / 3, rel=0.03)  # (low + mode + high) / 3
    r = Distribution(dist="lognormal", median=100.0, sigma=0.5, round=True)
    v = [draw_all({"k": r}, 1, i)["k"] for i in range(2000)]
    assert all(isinstance(t, int) for t in v)
    assert sorted(v)[1000] == pytest.approx(100, rel=0.06)  # the median


def test_csv_columns_are_the_plan_rows():
    import inspect

    src = inspect.getsource(plan_rows)
    for f in PLAN_ROW_FIELDS:
        assert f == "note" or f'"{f}"' in src


def test_progress_shows_on_a_terminal_only():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = Progress(4, 1, stream=stream)
        for _ in range(3):
            bar.step()
    assert "sweep 4/4 (100%)" in tty.getvalue() and "left" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_draws_the_scenario_refuses_name_the_sample(tmp_path):
    p = tmp_path / "u.yaml"
    p.write_text(SCENARIO.format(users="{dist: normal, mean: 100, sd: 400}"))
    r = run("sweep", p, "--samples", "20")
    assert r.exit_code == 2 and "sample" in r.output and "low:" in r.output, r.output
    p.write_text(SCENARIO.format(users="{dist: triangular, low: 400, mode: 400, high: 400}"))
    r = run("sweep", p, "--samples", "2", "--format", "json")
    assert r.exit_code == 0, r.output
    assert {pt["set"]["workloads.chat.users"] for pt in json.loads(r.output)["points"]} == {400.0}
    r = run("sweep", p, "--set", "budget.max_usd=1e6", "--set", "budget.max_usd=2e6")
    assert r.exit_code == 2 and "given twice" in r.output


def test_a_point_is_the_recommendation_without_the_per_type_solves(scenario):
    """A sweep point solves the recommendation only: the same plan a full solve gives, with no
    best-plan-per-GPU-type table (one more solve per type), which its JSON then leaves out."""
    from planner import load_scenario, plan_scenario
    from planner.results import result_json

    sc = load_scenario(scenario)
    full = plan_scenario(sc, top=1)
    lean = plan_scenario(sc, top=1, per_gpu=False)
    assert full.per_gpu_best and lean.per_gpu_best is None
    assert result_json(lean)["plan"] == result_json(full)["plan"]
    assert "best_per_gpu" not in result_json(lean)
    pt = sweep(scenario, [("workloads.chat.users", [400])]).points[0]
    assert "best_per_gpu" not in pt.result and pt.result["plan"] == result_json(full)["plan"]
