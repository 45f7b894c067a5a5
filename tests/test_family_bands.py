"""Error bands of the other families (diffusion, speech, encoders, VLA...): one band per
family on a pass's time, from the cross-validated residuals of their published runs; what
an estimate shows and what a plan at a confidence holds back."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calibration.bands import FAMILY_MIN_ROWS, family_error_bands
from calibration.family_cases import FamilyRow, time_ratio
from estimator import Parallel, get_gpu
from estimator.bands import family_band_factors, family_time_factor
from estimator.efficiency import calibration
from estimator.families import FamilyOptions, family_of, get_family_model
from planner import load_scenario, solve
from planner.cli import main

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _row(family: str, metric: str, measured: float, predicted: float) -> FamilyRow:
    return FamilyRow(0, family, "m", "g", metric, measured, predicted, "", cv_predicted=predicted)


def test_a_rows_ratio_is_measured_over_predicted_time():
    """A time metric reads measured / predicted; a rate the inverse (a rate is batch /
    time); memory and missing predictions time nothing."""
    assert time_ratio("s_per_image", 3.0, 2.0) == 1.5
    assert time_ratio("images_per_s", 2.0, 3.0) == 1.5  # measured slower: fewer images/s
    assert time_ratio("steps_per_s", 2.0, 3.0) == 1.5
    assert time_ratio("peak_memory_gb", 30.0, 20.0) is None
    assert time_ratio("s_per_image", 3.0, None) is None
    assert time_ratio("s_per_image", 0.0, 1.0) is None


def test_family_bands_are_the_quantiles_of_their_rows():
    """A family with FAMILY_MIN_ROWS rows has its own group; a thinner one only counts in
    'all'. By hand: ratios 1.0, 1.1, ..., 1.9 have median 1.45 and p90 1.81 (numpy's
    linear interpolation: 1.8 + 0.1 x 0.1)."""
    ratios = [1.0 + 0.1 * i for i in range(FAMILY_MIN_ROWS)]
    rows = [_row("diffusion_image", "s_per_image", r, 1.0) for r in ratios]
    rows += [_row("vla", "latency_ms_per_chunk", 0.5, 1.0)] * 3
    bands = family_error_bands(rows)
    assert set(bands) == {"all", "diffusion_image"}
    d = bands["diffusion_image"]
    assert d["n"] == FAMILY_MIN_ROWS
    assert d["p50"] == pytest.approx(1.45) and d["p90"] == pytest.approx(1.81)
    assert bands["all"]["n"] == FAMILY_MIN_ROWS + 3
    assert bands["all"]["p10"] == pytest.approx(
        float(np.percentile(ratios + [0.5] * 3, 10)), abs=1e-3
    )
    assert family_error_bands(rows[:3]) == {}  # too few rows for any band


def test_shipped_family_bands_are_what_the_data_gives():
    """calibration.yaml's family bands are those of today's family rows and estimator: the
    band an estimate shows rests on the model that sizes the plan."""
    from calibration import families

    assert calibration()["family_error_bands"] == family_error_bands(families.run())


def test_a_family_estimate_carries_its_band():
    """FLUX.1-dev on an H100: the time's p10/p90 are its estimate times the diffusion band's
    quantiles, and images/s moves the other way (its p10 is the time's p90)."""
    m = get_family_model("flux1-dev")
    e = family_of(m).estimate(m, get_gpu("h100-sxm"), Parallel(), "bf16", FamilyOptions())
    f = family_band_factors("diffusion_image")
    assert f["group"] == "diffusion_image"
    t, r = e.metrics["s_per_image"], e.metrics["images_per_s"]
    assert e.bands["s_per_image"]["p90"] == pytest.approx(t * f["p90"])
    assert e.bands["s_per_image"]["p10"] == pytest.approx(t * f["p10"])
    assert e.bands["images_per_s"]["p10"] == pytest.approx(r / f["p90"])
    assert e.bands["images_per_s"]["p90"] == pytest.approx(r / f["p10"])
    assert f"{f['n']} rows from {f['sources']} sources (diffusion_image)" in e.bands["basis"]


def test_a_thin_family_falls_back_to_every_familys_band():
    """VLA has fewer than FAMILY_MIN_ROWS rows: its band is the one of all families."""
    assert family_band_factors("vla")["group"] == "all"
    m = get_family_model("pi0")
    e = family_of(m).estimate(m, get_gpu("rtx-4090"), Parallel(), "bf16", FamilyOptions())
    assert "(all)" in e.bands["basis"] and "latency_ms" in e.bands


def test_the_time_factor_is_monotone_and_never_rosier():
    assert family_time_factor("diffusion_image", None) == 1.0
    fs = [family_time_factor("diffusion_image", c) for c in (0.5, 0.7, 0.9, 0.95)]
    assert fs == sorted(fs) and fs[0] >= 1.0
    assert fs[2] == pytest.approx(family_band_factors("diffusion_image")["p90"])


def test_the_cli_shows_the_family_band():
    r = CliRunner().invoke(main, ["estimate", "--model", "flux1-dev", "--gpu", "h100-sxm"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("images_per_s"))
    name, estimate, band, median = line.split(maxsplit=3)  # name, estimate, p10-p90 (median)
    lo, hi = (float(x) for x in band.split("-"))
    assert lo < float(median.strip("(median )")) < hi
    assert "p10-p90: quantiles of measured/predicted time" in r.output
    j = json.loads(
        CliRunner()
        .invoke(main, ["estimate", "--model", "flux1-dev", "--gpu", "h100-sxm", "--format", "json"])
        .output
    )
    assert j["bands"]["images_per_s"]["p10"] < j["images_per_s"] < j["bands"]["images_per_s"]["p90"]


@pytest.mark.parametrize(
    "name", ["image-generation", "transcription", "robot-fleet", "rag-service"]
)
def test_a_family_plan_at_confidence_is_never_cheaper(name):
    """Sizing the other families' workloads so their time limits hold at a higher quantile
    of the family's error never buys less, and never counts more served per replica."""
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    plans = [solve(sc.model_copy(update={"confidence": c}, deep=True)) for c in (None, 0.5, 0.9)]
    costs = [p.plan.cost_per_year_usd if p.feasible else float("inf") for p in plans]
    assert costs[0] <= costs[1] + 1e-6 <= costs[2] + 2e-6


def test_confidence_holds_an_image_workload_to_a_slower_pass():
    """The shipped image scenario at confidence 0.9 buys more: each replica's images/s is
    counted at the band's p90 time, so fewer per replica."""
    sc = load_scenario(SCENARIOS / "image-generation.yaml")
    base = solve(sc).to_dict()
    high = solve(sc.model_copy(update={"confidence": 0.9}, deep=True)).to_dict()
    assert high["cost_per_year_usd"] > base["cost_per_year_usd"]
    assert any("sized at confidence 0.9" in n for n in high["notes"])


def test_a_robot_plan_reports_the_workloads_own_control_rate():
    """At a confidence the robots per replica are counted at the slower pass, but the
    plan's metrics keep the control rate and chunk period the workload set."""
    sc = load_scenario(SCENARIOS / "robot-fleet.yaml")
    w = next(w for w in sc.workloads if w.kind == "robot_policy")
    r = solve(sc.model_copy(update={"confidence": 0.9}, deep=True)).to_dict()
    metrics = [a["metrics"] for a in r["plan"] if a["workload"] == w.name]
    assert metrics and all(m["control_hz"] == w.control_hz for m in metrics)


def test_a_family_plan_reports_each_replicas_pass_against_its_limit():
    """An image replica's time per batch against the workload's max_s_per_image, and a
    robot replica's chunk time at the batch it runs (all its robots) against the chunk
    period (execute_steps / control_hz), each with its headroom; the CLI table shows them."""
    img = solve(load_scenario(SCENARIOS / "image-generation.yaml")).to_dict()
    w = {x.name: x for x in load_scenario(SCENARIOS / "image-generation.yaml").workloads}
    for a in img["plan"]:
        assert a["pass_limit_s"] == w[a["workload"]].max_s_per_image
        assert a["pass_s"] == a["metrics"]["s_per_batch"] <= a["pass_limit_s"]
        assert a["headroom_pct"]["pass"] == pytest.approx(
            100 * (a["pass_limit_s"] / a["pass_s"] - 1)
        )
    sc = load_scenario(SCENARIOS / "robot-fleet.yaml")
    arms = next(x for x in sc.workloads if x.kind == "robot_policy")
    a = next(a for a in solve(sc).to_dict()["plan"] if a["workload"] == arms.name)
    assert a["metrics"]["batch"] == a["seats_per_replica"]  # the chunk of all its robots
    assert a["pass_limit_s"] == pytest.approx(arms.execute_steps / arms.control_hz)
    assert a["pass_s"] <= a["pass_limit_s"]
    speech = load_scenario(SCENARIOS / "transcription.yaml")
    rtf = {x.name: x.max_rtf for x in speech.workloads}
    for a in solve(speech).to_dict()["plan"]:  # one 30 s window of every stream at once
        assert a["pass_limit_s"] == pytest.approx(rtf[a["workload"]] * 30.0)
        assert 0 < a["pass_s"] <= a["pass_limit_s"]
    r = CliRunner().invoke(main, ["solve", str(SCENARIOS / "robot-fleet.yaml")])
    assert "TTFT or pass (headroom)" in r.output and "pass 0." in r.output


def test_family_bands_hold_their_share_of_a_source_they_were_not_built_from():
    """Each source's family rows against the bands the other sources' rows give: the raw
    p10-p90 holds less than 80% of them, the recorded bands are widened by the scale that
    holds 80%, about an unchanged median."""
    from calibration import families
    from calibration.bands import family_band_coverage, raw_family_bands

    rows = families.run()
    cov = family_band_coverage(rows)
    assert cov["sources"] >= 10 and cov["raw_p10_p90"] < 0.8 <= cov["p10_p90"]
    raw, stored = raw_family_bands(rows), calibration()["family_error_bands"]
    for g, q in stored.items():
        assert q["width_scale"] == cov["width_scale"] > 1.0
        assert q["p50"] == raw[g]["p50"] and q["p10"] < raw[g]["p10"] and q["p90"] > raw[g]["p90"]
