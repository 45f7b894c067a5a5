"""A diffusion pipeline's engine: torch.compile's time factor on the denoiser (fitted on
published eager/compiled pairs), applied by the estimate, fitted and cross-validated by the
calibration, and chosen by the planner's image and video workloads."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from calibration.family_cases import all_cases, estimate_case
from calibration.family_engines import (
    EagerRun,
    EnginePair,
    cross_validate_engines,
    eager_runs,
    engine_pairs,
    fit_family_engines,
    fit_speed,
)
from estimator import EstimatorError, estimate
from estimator.efficiency import engine_time_factor
from planner import solve
from planner.cli import main as cli


def _flux(engine: str | None):
    return estimate("flux1-dev", "h100-sxm", engine=engine)


def test_compile_speeds_the_denoiser_but_its_attention():
    eager, fast = _flux(None).metrics, _flux("torch-compile").metrics
    f, pairs = engine_time_factor("diffusion", "torch-compile")
    assert 0.3 < f < 1.0 and pairs >= 2
    att = eager["denoiser_attention_s"]
    assert fast["denoiser_attention_s"] == pytest.approx(att)
    assert fast["denoiser_s"] == pytest.approx(att + (eager["denoiser_s"] - att) * f)
    # the text encoders and the VAE run once and are left as they are
    assert fast["text_encoder_s"] == pytest.approx(eager["text_encoder_s"])
    assert fast["vae_s"] == pytest.approx(eager["vae_s"])
    assert fast["s_per_image"] < eager["s_per_image"]
    assert eager["engine"] == "diffusers" and fast["engine"] == "torch-compile"


def test_the_eager_pipeline_runs_at_its_fitted_factor_and_tensorrt_at_the_roofline():
    """Eager diffusers runs its denoiser's work outside attention at the factor fitted on its
    published runs (more than the roofline: its kernels run one by one); a TensorRT engine
    runs at the roofline, and torch.compile at its pair factor on the eager one."""
    eager, trt = _flux(None).metrics, _flux("tensorrt").metrics
    f, rows = engine_time_factor("diffusion", "diffusers")
    assert 1.0 < f < 2.0 and rows >= 10
    att = eager["denoiser_attention_s"]
    assert trt["denoiser_attention_s"] == pytest.approx(att)
    assert eager["denoiser_s"] - att == pytest.approx((trt["denoiser_s"] - att) * f)
    assert _flux("diffusers").metrics["s_per_image"] == pytest.approx(eager["s_per_image"])
    assert any("fused engines run at the roofline" in n for n in _flux("tensorrt").notes)
    rel = engine_time_factor("diffusion", "torch-compile")[0]
    fast = _flux("torch-compile").metrics
    assert fast["denoiser_s"] - att == pytest.approx((trt["denoiser_s"] - att) * f * rel)


def test_an_eager_run_reads_its_factor_off_the_estimates_split():
    """An eager run measured at r times the estimate's time puts the denoiser's work outside
    attention at 1 + (r - 1) / d of the roofline's (d: that work's share of the estimate at
    the roofline); the factor is the median over sources of their medians."""
    cases = _pair_cases(0.7)[:1]
    now = engine_time_factor("diffusion", "diffusers")[0]
    m = estimate_case(cases[0][1]).metrics
    total, sped = m["s_per_batch"], m["denoiser_s"] - m["denoiser_attention_s"]
    roof_sped, roof_total = sped / now, total - sped + sped / now
    (run,) = eager_runs(cases)
    # measured 10 s: the sped-up part takes what the rest of the estimate leaves of it
    assert run.factor == pytest.approx((10.0 - (total - sped)) / roof_sped)
    assert run.factor == pytest.approx(1.0 + (10.0 / roof_total - 1.0) * roof_total / roof_sped)
    runs = [EagerRun(1, "A", 1.1), EagerRun(2, "A", 1.5), EagerRun(3, "B", 1.2)]
    assert fit_speed(runs) == pytest.approx((1.3 + 1.2) / 2)
    shipped = fit_family_engines(all_cases()[0])["diffusion"]["diffusers"]
    assert engine_time_factor("diffusion", "diffusers")[0] == pytest.approx(shipped["time_factor"])


def test_an_unknown_engine_names_the_closest():
    with pytest.raises(EstimatorError, match="Did you mean: torch-compile"):
        estimate("sdxl", "h100-sxm", engine="torch-compil")
    for name in ("vllm", "torch-compil"):
        r = CliRunner().invoke(
            cli, ["estimate", "--model", "sdxl", "--gpu", "h100-sxm", "--engine", name]
        )
        assert r.exit_code == 2
        assert f"unknown diffusion engine '{name}'" in r.output
    assert "Did you mean: torch-compile" in r.output


def _pair_cases(r: float, source_b: str = "A", steps_b: str = "28"):
    """An eager FLUX run and a compiled one at ``r`` of its time (same settings, source A
    unless told otherwise)."""
    base = {
        "preset": "flux1-dev",
        "gpu_preset": "h100-sxm",
        "n_gpus": "1",
        "weights": "bf16",
        "batch": "1",
        "metric": "s_per_image",
        "resolution": "1024",
        "steps": "28",
        "guidance": "false",
        "frames": "",
        "fast_accum": "",
        "engine": "diffusers",
        "value": "10.0",
    }
    fast = {**base, "engine": "torch-compile", "value": str(10.0 * r), "steps": steps_b}
    return [(1, base, {"source": "A:readme"}), (2, fast, {"source": f"{source_b}:readme"})]


def test_a_pair_puts_the_saving_on_the_denoiser_outside_attention():
    cases = _pair_cases(0.7)
    m = estimate_case(cases[0][1]).metrics
    sped = m["denoiser_s"] - m["denoiser_attention_s"]
    (pair,) = engine_pairs(cases)
    # the compiled run saves 30% of the whole; all of it comes out of the sped-up part
    assert pair.factor == pytest.approx(1.0 - 0.3 * m["s_per_batch"] / sped)
    assert pair.number == 2 and pair.source == "A"


def test_only_the_same_source_and_settings_pair():
    assert engine_pairs(_pair_cases(0.7, source_b="B")) == []
    assert engine_pairs(_pair_cases(0.7, steps_b="50")) == []
    # a compiled run faster than the whole of the sped-up part: no factor to read
    assert engine_pairs(_pair_cases(0.01)) == []


def test_the_factor_is_the_median_over_sources_of_their_medians():
    pairs = [
        EnginePair(1, "torch-compile", "A", 0.5),
        EnginePair(2, "torch-compile", "A", 0.7),
        EnginePair(3, "torch-compile", "B", 0.9),
        EnginePair(4, "torch-compile", "C", 0.65),
    ]
    assert fit_speed(pairs) == pytest.approx(0.65)  # median of 0.6, 0.9, 0.65


def test_one_source_fits_no_factor():
    assert "diffusion" not in fit_family_engines(_pair_cases(0.7))


def test_the_shipped_factor_is_the_fit_of_the_shipped_rows():
    fitted = fit_family_engines(all_cases()[0])["diffusion"]["torch-compile"]
    assert engine_time_factor("diffusion", "torch-compile") == (
        pytest.approx(fitted["time_factor"]),
        fitted["rows"],
    )
    assert len(fitted["sources"]) >= 2


def test_every_compiled_row_is_cross_validated_without_its_source(monkeypatch):
    """Each compiled or eager row's leave-one-source-out prediction is the estimate itself,
    rerun with the factors the other sources fit (step rates included): the compiled
    engine's from their pairs, the eager pipeline's from their eager runs."""
    from calibration import families
    from calibration.family_cases import metric_value
    from estimator.families import diffusion

    cases = all_cases()[0]
    pairs = engine_pairs(cases)
    by_number = {n: c for n, c, _ in cases}
    rows = [r for r in families.run() if r.engine == "torch-compile" and r.predicted]
    assert {r.metric for r in rows} >= {"s_per_image", "steps_per_s", "wall_time_s"}
    eager = eager_runs(cases)
    rows += [r for r in families.run() if r.engine == "diffusers" and r.predicted]
    cross_validate_engines(rows, cases)
    for row in rows:
        fits = {
            "torch-compile": fit_speed([p for p in pairs if p.source != row.source]),
            "diffusers": fit_speed([r for r in eager if r.source != row.source]),
        }
        monkeypatch.setattr(
            diffusion, "engine_time_factor", lambda fam, eng, f=fits: (f.get(eng, 1.0), 2)
        )
        assert row.cv_predicted == pytest.approx(
            metric_value(by_number[row.row], estimate_case(by_number[row.row]))
        )


def _scenario(tmp_path, engine: str | None, model: str = "flux1-schnell"):
    extra = f"\n    engine: {engine}" if engine else ""
    p = tmp_path / "s.yaml"
    p.write_text(
        "name: drafts\nworkloads:\n  - name: drafts\n    kind: image_generation\n"
        f"    model: {model}\n    images_per_hour: 20000\n    max_s_per_image: 4{extra}\n"
        "fleet:\n  gpus: [h100-sxm]\ncost:\n  basis: rental\n  years: 1\n"
    )
    return p


def test_a_compiled_pipeline_never_costs_more_and_says_so(tmp_path):
    eager = solve(str(_scenario(tmp_path, None)))
    fast = solve(str(_scenario(tmp_path, "torch-compile")))
    assert fast.plan.cost_usd <= eager.plan.cost_usd
    assert fast.plan.total_gpus < eager.plan.total_gpus  # 5.6 images/s of schnell: fewer H100s
    assert any("engine torch-compile" in n and "0.6" in n for n in fast.notes)
    assert any("engine diffusers" in n and "published eager runs" in n for n in eager.notes)


def test_a_var_model_ignores_the_pipeline_engine(tmp_path):
    a = solve(str(_scenario(tmp_path, None, "var-d30")))
    b = solve(str(_scenario(tmp_path, "torch-compile", "var-d30")))
    assert a.plan.cost_usd == b.plan.cost_usd
    assert not any("torch-compile" in n for n in b.notes)  # nothing said of an engine unused


def test_a_bad_engine_in_a_scenario_is_a_clear_error(tmp_path):
    r = CliRunner().invoke(cli, ["solve", str(_scenario(tmp_path, "torchcompile"))])
    assert r.exit_code == 2
    assert "s.yaml:8: workloads.0.engine" in r.output
    assert "Did you mean: torch-compile" in r.output


def test_estimate_json_carries_the_engine():
    r = CliRunner().invoke(
        cli,
        [
            "estimate",
            "--model",
            "sdxl",
            "--gpu",
            "h100-sxm",
            "--engine",
            "torch-compile",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["metrics"]["engine"] == "torch-compile"
