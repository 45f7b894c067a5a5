"""Speech engines: the host time per decoder layer each eager engine adds, fitted on its
published runs; its arithmetic, the fit, the per-layer scaling, the plumbing and the errors."""

import json

import pytest
from click.testing import CliRunner

import estimator
from estimator import EstimatorError, Parallel, get_gpu
from estimator.efficiency import calibration, engine_host
from estimator.engines import SPEECH_ENGINES
from estimator.families import FamilyOptions, get_family_model
from estimator.families.asr import HOST_FITTED, estimate_asr
from planner.cli import main


def test_host_time_is_steps_times_layers_times_fitted_cost():
    """Hand arithmetic: 600 s = 20 windows of 99 tokens (3.3 tokens/s x 30 s), 32 decoder
    layers, 4 streams x beam 1, and the fitted per-layer costs."""
    m = get_family_model("whisper-large-v2")
    h = engine_host("asr", "faster-whisper")
    assert h.layer_us > 0 and h.rows >= 8
    e = estimate_asr(m, get_gpu("a100-80gb-sxm"), Parallel(), "fp16", 4, 600.0)
    expected = 20 * 99 * 32 * (h.layer_us + 4 * h.layer_seq_us) * 1e-6
    assert e.metrics["engine"] == "faster-whisper"  # the default
    assert e.metrics["host_s"] == pytest.approx(expected, rel=1e-9)
    gpu_only = estimate_asr(
        m, get_gpu("a100-80gb-sxm"), Parallel(), "fp16", 4, 600.0, engine="trtllm"
    )
    assert gpu_only.metrics["host_s"] == 0
    assert e.metrics["s_per_batch"] == pytest.approx(
        gpu_only.metrics["s_per_batch"] + expected, rel=1e-9
    )


@pytest.mark.parametrize("eng", HOST_FITTED)
def test_eager_engines_are_never_faster_than_the_gpu(eng):
    m = get_family_model("whisper-large-v3")
    for gpu in ("l4", "h100-sxm"):
        g = get_gpu(gpu)
        fast = estimate_asr(m, g, Parallel(), "fp16", 8, 300.0, engine="trtllm")
        slow = estimate_asr(m, g, Parallel(), "fp16", 8, 300.0, engine=eng)
        assert slow.metrics["audio_s_per_s"] < fast.metrics["audio_s_per_s"]


def test_per_layer_host_cost_reproduces_openai_turbo_speedup():
    """openai/whisper's README: turbo (4 decoder layers) ~8x faster than large (32); a cost
    per step, not per layer, would make them about equally fast on a host-bound engine."""
    speed = {
        m: estimator.estimate(
            m, "a100-80gb-sxm", engine="openai-whisper", family=FamilyOptions(audio_seconds=600)
        ).metrics["audio_s_per_s"]
        for m in ("whisper-large-v3", "whisper-large-v3-turbo")
    }
    assert 5 <= speed["whisper-large-v3-turbo"] / speed["whisper-large-v3"] <= 11


def test_calibration_holds_the_fit_of_the_published_runs():
    """What calibrate writes is what the fit of the shipped runs gives (one place)."""
    from calibration.family_cases import all_cases
    from calibration.family_engines import fit_family_engines

    fitted = fit_family_engines(all_cases()[0])["asr"]
    stored = calibration()["family_engines"]["asr"]
    assert set(fitted) == set(HOST_FITTED) <= set(stored)
    for eng, f in fitted.items():
        assert f["layer_us"] == pytest.approx(stored[eng]["layer_us"], rel=0.02)
        assert f["rows"] == stored[eng]["rows"]


def test_speech_rows_validate_within_band():
    """The faster-whisper rows (three GPUs, two sources) in sample within 25%, and every
    speech row left out by source within 80% (was 6-20x before engines)."""
    from calibration.families import run

    rows = [r for r in run() if r.family == "asr" and r.predicted is not None]
    fw = [r for r in rows if r.engine == "faster-whisper"]
    assert len(fw) >= 8
    assert all(abs(r.error_pct) < 25 for r in fw)
    cv = [r.cv_error_pct for r in rows if r.cv_predicted is not None]
    assert len(cv) >= 8 and all(abs(e) < 80 for e in cv)


def test_engine_errors_name_the_choices():
    with pytest.raises(EstimatorError, match="Did you mean: faster-whisper"):
        estimator.estimate("whisper-large-v3", "h100-sxm", engine="faster-wisper")
    with pytest.raises(EstimatorError, match="for a language model"):
        estimator.estimate("llama-3.1-8b", "h100-sxm", engine="faster-whisper")
    with pytest.raises(EstimatorError, match="no engine choice"):
        estimator.estimate("var-d30", "h100-sxm", engine="vllm")


def test_cli_engine_option_reaches_speech_and_defaults_stay():
    def run(*extra):
        r = CliRunner().invoke(
            main,
            ["estimate", "--model", "whisper-large-v3", "--gpu", "h100-sxm", "--format", "json"]
            + list(extra),
        )
        assert r.exit_code == 0, r.output
        return json.loads(r.output)

    assert run()["engine"] == "faster-whisper"
    hf = run("--engine", "transformers")
    assert hf["engine"] == "transformers" and hf["host_s"] > 0
    assert run("--engine", "trtllm")["host_s"] == 0
    r = CliRunner().invoke(
        main, ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--format", "json"]
    )
    assert r.exit_code == 0 and json.loads(r.output)["engine"] == "vllm"


def test_scenario_engine_changes_the_fleet_and_bad_names_exit_2(tmp_path):
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    def plan(engine: str):
        p = tmp_path / f"{engine}.yaml"
        p.write_text(
            "workloads:\n  - name: x\n    kind: speech\n    model: whisper-large-v3\n"
            f"    streams: 2000\n    engine: {engine}\nfleet:\n  gpus: [h100-sxm]\n  unit: gpu\n"
        )
        return p

    gpus = {
        e: plan_scenario(load_scenario(plan(e)), top=1).plan.total_gpus
        for e in ("trtllm", "faster-whisper")
    }
    assert gpus["faster-whisper"] > gpus["trtllm"]
    r = CliRunner().invoke(main, ["solve", str(plan("fastwhisper"))])
    assert r.exit_code == 2 and "faster-whisper" in r.output, r.output


def test_every_engine_is_listed_on_the_cli():
    r = CliRunner().invoke(main, ["estimate", "--help"])
    for e in SPEECH_ENGINES:
        assert e in r.output
