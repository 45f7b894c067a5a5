"""Non-LLM families: derived sizes against published totals, formulas against hand
computations, the CLI, and planning in each family's unit."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from estimator import EstimatorError, Parallel, SplitError, get_gpu
from estimator.families import family_catalog, get_family_model
from estimator.families.asr import asr_streams_per_replica, estimate_asr
from estimator.families.base import stack_pass
from estimator.families.encoder import estimate_encoder
from estimator.families.jepa import estimate_jepa
from estimator.roofline import Machine
from planner.cli import main

CAT = family_catalog()


def _tolerance(published: float) -> float:
    """2%, or half a unit of the last digit the source published (0.6B means 0.55-0.65B)."""
    text = repr(published)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return max(0.02, 0.5 * 10**-decimals / published)


@pytest.mark.parametrize("name", [n for n in CAT.names() if CAT.items[n].published.total_params_b])
def test_derived_size_matches_published(name):
    pub = CAT.items[name].published.total_params_b
    tol = _tolerance(pub)
    if name.startswith("whisper"):
        # the Whisper paper's sizes run 0.4-3% above the checkpoints' tensors (tiny: 39M
        # quoted, 37.8M in the checkpoint); the exact count is checked below
        tol = 0.035
    if name == "smolvla":
        # 450M quoted (read through summaries) vs 404M derived: the gap is one more copy of the
        # 49,280 x 960 token table (an untied LM head), which the backbone values we hold do
        # not settle
        tol = 0.12
    assert get_family_model(name).params / 1e9 == pytest.approx(pub, rel=tol)


def test_whisper_tiny_encoder_is_exact():
    """8,208,384 encoder parameters, as enumerated from the openai/whisper-tiny checkpoint
    (ferrotorch/whisper-tiny-encoder README)."""
    m = get_family_model("whisper-tiny")
    d = m.encoder.hidden
    stem = m.n_mels * d * 3 + d + d * d * 3 + d
    assert stem + m.source_positions * d + m.encoder.params() + 2 * d == 8_208_384


def test_vjepa2_ac_predictor_is_about_300m():
    m = get_family_model("vjepa2-ac")
    assert m.predictor.params() / 1e9 == pytest.approx(0.3, rel=0.05)
    assert m.encoder.params() / 1e9 == pytest.approx(1.0, rel=0.05)


def test_vjepa2_patch_tokens():
    # 16 frames of 256x256, 2-frame tubelets of 16x16 patches: 8 x 16 x 16 = 2,048 tokens
    m = get_family_model("vjepa2-vitg")
    assert m.tokens(16, 256, 256) == 2048
    e = estimate_jepa(m, get_gpu("h100-sxm"), Parallel(), "bf16", 4, 16, 256, 256)
    assert e.metrics["patch_tokens"] == 2048


def test_encoder_pass_hand_computed():
    """One BGE-M3 pass: FLOPs = 2 x matmul params x tokens + 4 x d x tokens^2 per layer."""
    m = get_family_model("bge-m3")
    h100 = get_gpu("h100-sxm")
    mc = Machine(h100, Parallel(), "bf16")
    b, t = 8, 512
    st = stack_pass(mc, m.stack, 2.0, b, t, t)
    s = m.stack
    mm = 2 * s.matmul_params() * b * t
    attn = b * s.layers * 2 * 2 * s.hidden * t * t
    assert float(st.flops_per_gpu) == pytest.approx(mm + attn, rel=1e-9)
    assert float(st.compute) == pytest.approx((mm + attn) / (989.4e12 * mc.eff.compute), rel=1e-6)


def test_encoder_throughput_rises_with_batch_then_flattens():
    m = get_family_model("bge-m3")
    g = get_gpu("l4")
    rates = [
        estimate_encoder(m, g, Parallel(), "bf16", b, 512).metrics["docs_per_s"]
        for b in (1, 4, 16, 64)
    ]
    assert rates == sorted(rates)
    assert rates[-1] / rates[-2] < rates[1] / rates[0]


def test_asr_faster_gpu_lower_rtf_and_beam_costs_decode():
    m = get_family_model("whisper-large-v3")
    slow = estimate_asr(m, get_gpu("l4"), Parallel(), "fp16", 8, 30.0)
    fast = estimate_asr(m, get_gpu("h100-sxm"), Parallel(), "fp16", 8, 30.0)
    assert fast.metrics["rtf"] < slow.metrics["rtf"]
    beam = estimate_asr(m, get_gpu("l4"), Parallel(), "fp16", 8, 30.0, beam=5)
    assert beam.metrics["decoder_s"] > slow.metrics["decoder_s"]
    assert beam.metrics["encoder_s"] == pytest.approx(slow.metrics["encoder_s"])
    assert slow.metrics["audio_s_per_s"] == pytest.approx(8 * 30 / slow.metrics["s_per_batch"])
    # the engine the timing assumes is stated, with where its host time comes from
    assert any("engine faster-whisper" in n and "published runs" in n for n in slow.notes)


def test_eager_encoder_engine_is_its_fitted_floor_or_factor():
    """Eager PyTorch: the host's time a layer below some work, the fitted factor over the
    fused engine's time above it, never faster than fused; bge-large (24 layers) on an L4."""
    from estimator.efficiency import engine_host, engine_time_factor

    m, gpu = get_family_model("bge-large-en-v1.5"), get_gpu("l4")
    host = engine_host("encoder", "transformers")
    factor = engine_time_factor("encoder", "transformers")[0]
    assert host.rows >= 20 and 100 < host.layer_us < 3000 and 1 < factor < 5
    for batch, tokens in ((1, 32), (4, 128), (64, 512), (256, 449)):
        fused = estimate_encoder(m, gpu, Parallel(), "bf16", batch, tokens, "tei")
        eager = estimate_encoder(m, gpu, Parallel(), "bf16", batch, tokens, "transformers")
        t, tf = eager.metrics["s_per_batch"], fused.metrics["s_per_batch"]
        assert t == pytest.approx(max(24 * host.layer_us * 1e-6, factor * tf))
        assert t > tf and eager.metrics["engine"] == "transformers"
    small = estimate_encoder(m, gpu, Parallel(), "bf16", 1, 32, "transformers")
    assert small.bottleneck == "host (kernel launches)"
    assert small.metrics["s_per_batch"] == pytest.approx(24 * host.layer_us * 1e-6)
    with pytest.raises(EstimatorError, match="Did you mean: transformers"):
        estimate_encoder(m, gpu, Parallel(), "bf16", 1, 32, "transfomers")


def test_encoder_engine_fit_recovers_known_numbers():
    """Pairs made from a known host time and factor give them back, whatever the mix of
    host- and GPU-bound pairs and however many pairs each publisher has."""
    from calibration.encoder_engines import Pair, cross_validate, fit
    from estimator.families.encoder import eager_pass_time as eager_time

    rng = np.random.default_rng(7)
    pairs = []
    for s, n in (("a", 30), ("b", 5), ("c", 9)):
        for _ in range(n):
            # host-bound and GPU-bound pairs in every publisher's (log-uniform times)
            layers, fused = int(rng.choice([6, 12, 24])), float(np.exp(rng.uniform(-9, -1.6)))
            pairs.append(Pair(s, layers, float(eager_time(layers, fused, 650e-6, 2.2)), fused))
    layer_s, factor = fit(pairs)
    assert layer_s == pytest.approx(650e-6, rel=1e-3) and factor == pytest.approx(2.2, rel=1e-3)
    assert np.nanmax(np.abs(cross_validate(pairs))) < 0.5


def test_the_shipped_encoder_pairs_predict_eager_better_than_fused_time():
    from calibration.encoder_engines import fit_encoder_engines

    e = fit_encoder_engines()["transformers"]
    assert len(e["sources"]) >= 3 and e["cv_median_abs_pct"] < e["as_fused_median_abs_pct"]


def test_an_eager_encoder_row_is_cross_validated_without_its_publisher(monkeypatch):
    """The published sentence-transformers row (infinity's bge-large on an L4) is predicted
    with the eager engine, and leaving its publisher out with the numbers the other
    publishers' pairs fit: the estimate itself, rerun with them."""
    from calibration import families
    from calibration.encoder_engines import fit, load_pairs
    from calibration.family_cases import all_cases, estimate_case, metric_value
    from estimator.efficiency import EngineHost
    from estimator.families import encoder

    rows = [r for r in families.run() if r.family == "encoder" and r.engine == "transformers"]
    assert rows and all(r.predicted and r.cv_predicted for r in rows)
    by_number = {n: c for n, c, _ in all_cases()[0]}
    layer_s, factor = fit([p for p in load_pairs() if "infinity" not in p.source])
    monkeypatch.setattr(encoder, "engine_host", lambda f, e: EngineHost(layer_s * 1e6, 0, 9))
    monkeypatch.setattr(encoder, "engine_time_factor", lambda f, e: (factor, 9))
    for row in rows:
        case = by_number[row.row]
        assert row.cv_predicted == pytest.approx(metric_value(case, estimate_case(case)))
        assert row.cv_predicted != pytest.approx(row.predicted)


def test_an_embedding_workload_takes_the_engine(tmp_path):
    """An eager engine needs at least as many GPUs as the fused default; a misspelt engine
    is refused with the file, line, key and the closest name."""
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    def scenario(engine: str):
        p = tmp_path / f"{engine}.yaml"
        p.write_text(
            "workloads:\n  - name: embed\n    kind: embedding\n    model: bge-m3\n"
            f"    docs_per_s: 400\n    input_tokens: 512\n    engine: {engine}\n"
            "fleet:\n  gpus: [l40s]\n"
        )
        return p

    fused = plan_scenario(load_scenario(scenario("tei")))
    eager = plan_scenario(load_scenario(scenario("transformers")))
    assert eager.plan.assignments[0].replicas > fused.plan.assignments[0].replicas
    assert eager.plan.cost_usd >= fused.plan.cost_usd
    assert any("engine transformers" in n for n in eager.notes)
    r = CliRunner().invoke(main, ["solve", str(scenario("transfomers"))])
    assert r.exit_code == 2 and ":7: workloads.0.engine" in r.output
    assert "Did you mean: transformers?" in r.output


def test_speech_plan_states_the_engine_it_assumes():
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    root = Path(__file__).resolve().parent.parent
    pl = plan_scenario(load_scenario(root / "scenarios" / "transcription.yaml"))
    assert any("engine faster-whisper" in n for n in pl.notes)


def test_asr_streams_respect_rtf():
    m = get_family_model("whisper-large-v3-turbo")
    g = get_gpu("l4")
    loose, _ = asr_streams_per_replica(m, g, Parallel(), "fp16", max_rtf=0.5)
    tight, b = asr_streams_per_replica(m, g, Parallel(), "fp16", max_rtf=0.1)
    assert 0 < tight <= loose
    assert estimate_asr(m, g, Parallel(), "fp16", b, 30.0).metrics["rtf"] <= 0.1 + 1e-9


def test_family_split_rule():
    with pytest.raises(SplitError, match="attention heads"):
        estimate_encoder(
            get_family_model("bge-m3"), get_gpu("h100-sxm"), Parallel(tp=3), "bf16", 1, 128
        )
    with pytest.raises(SplitError, match="tensor parallelism"):
        estimate_encoder(
            get_family_model("bge-m3"), get_gpu("h100-sxm"), Parallel(pp=2), "bf16", 1, 128
        )


@pytest.mark.parametrize(
    "args,keys",
    [
        (
            ["--model", "bge-m3", "--input-tokens", "512", "--batch", "32"],
            ["docs_per_s", "s_per_batch"],
        ),
        (["--model", "bge-reranker-v2-m3", "--batch", "64"], ["docs_per_s", "s_per_batch"]),
        (
            ["--model", "whisper-large-v3", "--audio-seconds", "60", "--batch", "16"],
            ["rtf", "audio_s_per_s", "encoder_s", "decoder_s", "streams_per_replica"],
        ),
        (
            ["--model", "vjepa2-vitg", "--frames", "16", "--resolution", "256x256", "--batch", "4"],
            ["clips_per_s", "s_per_clip", "patch_tokens"],
        ),
        (["--model", "vjepa2-ac", "--horizon", "3", "--samples", "32"], ["s_per_plan"]),
    ],
)
def test_estimate_cli_family_keys(args, keys):
    r = CliRunner().invoke(main, ["estimate", "--gpu", "h100-sxm", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for k in keys:
        assert k in d and d[k] is not None
    assert d["fits"] is True and "memory_gb" in d


def test_estimate_cli_family_bad_input():
    r = CliRunner().invoke(
        main, ["estimate", "--gpu", "h100-sxm", "--model", "vjepa2-vitg", "--frames", "15"]
    )
    assert r.exit_code == 2 and "tubelet" in r.output
    r = CliRunner().invoke(
        main, ["estimate", "--gpu", "h100-sxm", "--model", "vjepa2-vitg", "--resolution", "big"]
    )
    assert r.exit_code == 2 and "WxH" in r.output


@pytest.mark.parametrize(
    ("preset", "family", "args"),
    [
        ("bge-large-en-v1.5", "encoder", ["--batch", "32", "--input-tokens", "256"]),
        ("bge-reranker-v2-m3", "reranker", ["--batch", "32", "--input-tokens", "256"]),
        ("whisper-small", "asr", ["--batch", "4"]),
    ],
)
def test_a_local_config_of_another_family_is_that_family(tmp_path, preset, family, args):
    """A model folder (or config.json) of an encoder, cross-encoder or Whisper model is
    estimated as its family is, exactly as the preset with the same config."""
    cfg = family_catalog().items[preset].config
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    local = get_family_model(str(folder))
    assert local.family == family and local.name == "my-model"

    def run(*model):
        r = CliRunner().invoke(main, ["estimate", "--gpu", "l4", *model, *args, "--format", "json"])
        assert r.exit_code == 0, r.output
        return {k: v for k, v in json.loads(r.output).items() if k not in ("model", "notes")}

    assert run("--model-config", str(folder / "config.json")) == run("--model", preset)
    assert run("--model", str(folder)) == run("--model", preset)


def test_a_folder_named_as_a_preset_is_not_taken_for_a_model(tmp_path, monkeypatch):
    """A folder in the working directory that holds no config.json does not shadow a family
    preset of the same name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bge-m3").mkdir()
    assert get_family_model("bge-m3").family == "encoder"


def test_a_language_model_command_names_what_times_another_familys_model():
    from estimator import EstimatorError, get_model

    for name, kind in (("bge-m3", "an embedding"), ("whisper-small", "a speech-recognition")):
        with pytest.raises(EstimatorError, match=f"is {kind} model: `planner estimate --model"):
            get_model(name)


def test_a_local_encoder_config_missing_keys_is_a_clear_error(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    r = CliRunner().invoke(main, ["estimate", "--gpu", "l4", "--model-config", str(p)])
    assert r.exit_code == 2 and "missing required key 'hidden_size'" in r.output
    assert "Traceback" not in r.output


def test_workload_kind_must_match_model(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("workloads:\n  - name: x\n    kind: speech\n    model: bge-m3\n    streams: 4\n")
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 2 and "speech" in r.output


def test_more_demand_never_costs_less_for_families(tmp_path):
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    costs = []
    for streams in (10, 30000, 300000):
        p = tmp_path / f"s{streams}.yaml"
        p.write_text(
            f"workloads:\n  - name: x\n    kind: speech\n    model: whisper-large-v3\n"
            f"    streams: {streams}\nfleet:\n  gpus: [l4, h100-sxm]\n"
        )
        costs.append(plan_scenario(load_scenario(p), top=1).plan.cost_usd)
    assert costs == sorted(costs) and costs[0] < costs[-1]
    assert np.isfinite(costs).all()


# ---- diffusion -----------------------------------------------------------------------------
DIFFUSION = [n for n in CAT.names() if CAT.items[n].family.startswith("diffusion")]


@pytest.mark.parametrize("name", DIFFUSION)
def test_denoiser_size_matches_published(name):
    """Against the published denoiser size; CogVideoX's '2B'/'5B' are model names (the
    transformers hold 1.69B and 5.57B), so they get the tolerance of a one-digit figure."""
    pub = CAT.items[name].published.model_extra.get("denoiser_params_b")
    tol = 0.2 if name.startswith("cogvideox") else _tolerance(pub)
    assert get_family_model(name).denoiser_params / 1e9 == pytest.approx(pub, rel=tol)


def test_sdxl_latent_and_components():
    """SDXL at 1024x1024 is a 128x128 latent (VAE x8); CLIP-L + OpenCLIP-bigG text encoders
    (~0.82B); the VAE decoder is ~49.5M parameters."""
    from estimator.families.diffusion import DiffusionModel

    m = get_family_model("sdxl")
    assert isinstance(m, DiffusionModel)
    vae = m.components["vae"]["config"]
    assert 1024 // 2 ** (len(vae["block_out_channels"]) - 1) == 128
    assert m.encoders().params / 1e9 == pytest.approx(0.82, rel=0.02)
    assert m.vae(1024, 1024).params / 1e6 == pytest.approx(49.5, rel=0.02)


def test_cogvideox_vae_decodes_every_output_frame():
    """CogVideoX's 3D VAE upsamples time in its first two up blocks (13 latent frames -> 25
    -> 49, diffusers CogVideoXUpsample3D with compress_time): hand-summed conv FLOPs at that
    frame schedule (resnets' causal 3x3x3 convolutions as 3x the 2D work, upsamplers 2D)."""
    m = get_family_model("cogvideox-2b")

    def conv(cin, cout, h, w, k=3, depth=3):
        return 2.0 * cin * cout * k * k * depth * h * w

    def resnet(cin, cout, h, w):
        short = conv(cin, cout, h, w, k=1, depth=1) if cin != cout else 0.0
        return conv(cin, cout, h, w) + conv(cout, cout, h, w) + short

    h, w = 60, 90
    want = 13 * (conv(16, 512, h, w) + 2 * resnet(512, 512, h, w))
    want += 13 * 4 * resnet(512, 512, h, w) + 25 * conv(512, 512, 120, 180, depth=1)
    want += 25 * (resnet(512, 256, 120, 180) + 3 * resnet(256, 256, 120, 180))
    want += 49 * conv(256, 256, 240, 360, depth=1)
    want += 49 * 4 * resnet(256, 256, 240, 360) + 49 * conv(256, 256, 480, 720, depth=1)
    want += 49 * (resnet(256, 128, 480, 720) + 3 * resnet(128, 128, 480, 720))
    want += 49 * conv(128, 3, 480, 720)
    assert m.vae(720, 480, 49).flops == pytest.approx(want, rel=1e-9)
    # one frame is the 2D decoder's work: no temporal upsampling
    assert m.vae(720, 480, 1).flops < want / 40


def test_flux_tokens_are_packed_2x2():
    """Flux packs 2x2 latent pixels per token: 1024x1024 -> 64x64 = 4,096 image tokens; with
    512 T5 tokens the single-stream attention runs over 4,608."""
    m = get_family_model("flux1-dev")
    d = 24 * 128
    single_attn = 38 * 4.0 * d * 4608**2
    assert m.denoiser(1024, 1024).attn_flops > single_attn


def test_guidance_doubles_the_denoiser():
    from estimator.families.diffusion import estimate_diffusion

    m = get_family_model("sdxl")
    g = get_gpu("h100-sxm")
    on = estimate_diffusion(m, g, Parallel(), "fp8", 4, 1024, 1024, 20, True)
    off = estimate_diffusion(m, g, Parallel(), "fp8", 4, 1024, 1024, 20, False)
    assert on.metrics["denoiser_s"] == pytest.approx(2 * off.metrics["denoiser_s"], rel=0.15)
    assert on.metrics["denoiser_s"] > 1.5 * off.metrics["denoiser_s"]
    more = estimate_diffusion(m, g, Parallel(), "fp8", 4, 1024, 1024, 40, True)
    assert more.metrics["denoiser_s"] == pytest.approx(2 * on.metrics["denoiser_s"])


def test_video_metrics_and_one_gpu_per_replica():
    from estimator.families.diffusion import estimate_diffusion

    m = get_family_model("cogvideox-5b")
    e = estimate_diffusion(m, get_gpu("h100-sxm"), Parallel(), "bf16", 1, 720, 480, 50, True, 49)
    assert e.metrics["videos_per_hour"] == pytest.approx(3600 / e.metrics["s_per_video"])
    with pytest.raises(SplitError, match="one GPU per replica"):
        estimate_diffusion(
            m, get_gpu("h100-sxm"), Parallel(tp=2), "bf16", 1, 720, 480, 50, True, 49
        )


def test_estimate_cli_diffusion():
    r = CliRunner().invoke(
        main,
        [
            "estimate",
            "--model",
            "flux1-schnell",
            "--gpu",
            "h100-sxm",
            "--batch",
            "2",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for k in ("s_per_image", "images_per_s", "denoiser_s", "text_encoder_s", "vae_s"):
        assert k in d
    r = CliRunner().invoke(
        main, ["estimate", "--model", "cogvideox-2b", "--gpu", "h100-sxm", "--format", "json"]
    )
    assert {"s_per_video", "videos_per_hour"} <= set(json.loads(r.output))


def test_geforce_fast_accumulation_doubles_only_its_16_bit_and_fp8_tensor_rate():
    """GeForce cards run FP16/FP8 tensor math with FP32 accumulation at half the rate of
    FP16 accumulation (Ada whitepaper: RTX 4090 FP8 330.3 vs 660.6 dense TFLOPS); kernels that
    accumulate in 16 bits (FP8 with use_fast_accum, TensorRT FP16) reach the faster one. BF16
    has one rate, and data-centre cards run FP32 accumulation at full rate."""
    g, h = get_gpu("rtx-4090"), get_gpu("h100-sxm")
    assert g.peak_flops("fp8") == pytest.approx(330.3e12)
    assert g.peak_flops("fp8", fast_accum=True) == pytest.approx(660.6e12)
    assert g.peak_flops("fp16", fast_accum=True) == pytest.approx(330.3e12)
    assert g.peak_flops("bf16", fast_accum=True) == g.peak_flops("bf16") == pytest.approx(165.2e12)
    assert h.peak_flops("fp8", fast_accum=True) == h.peak_flops("fp8")
    fast = Machine(g, Parallel(), "fp8", fast_accum=True)
    assert fast.peak == pytest.approx(2 * Machine(g, Parallel(), "fp8").peak)


def test_a_preset_fast_accumulate_rate_must_be_a_faster_16_bit_one():
    from estimator.hardware import Accelerator

    base = get_gpu("rtx-4090").model_dump()
    cases = (({"bf16": 400.0}, "no 16-bit-accumulate mode"), ({"fp8": 100.0}, "at or below"))
    for bad, why in cases:
        with pytest.raises(ValueError, match=why):
            Accelerator(**{**base, "fast_accum_tflops": bad})


def test_fast_accumulation_speeds_a_flux_fp8_step_on_a_geforce_card_only():
    """FLUX.1-dev's denoiser in FP8 at 1024x1024 is compute-bound: with 16-bit accumulation
    an RTX 4090's step is faster (its GEMMs at twice the rate; attention stays 16-bit with
    FP32 accumulation), an H100's the same."""
    from estimator.families.diffusion import estimate_diffusion

    m = get_family_model("flux1-dev")
    out = {}
    for gpu in ("rtx-4090", "h100-sxm"):
        for fast in (False, True):
            e = estimate_diffusion(m, get_gpu(gpu), Parallel(), "fp8", 1, 1024, 1024, 1, False)
            if fast:
                e = estimate_diffusion(
                    m, get_gpu(gpu), Parallel(), "fp8", 1, 1024, 1024, 1, False, fast_accum=True
                )
            out[gpu, fast] = e.metrics
    slow, quick = out["rtx-4090", False]["denoiser_s"], out["rtx-4090", True]["denoiser_s"]
    assert 0.5 * slow < quick < 0.8 * slow
    assert out["h100-sxm", True]["denoiser_s"] == out["h100-sxm", False]["denoiser_s"]
    assert out["rtx-4090", True]["fast_accum"] is True


def _flux_fp8_on(tmp_path, gpu: str, rate: str, switch: str, on: bool):
    """A FLUX.1-dev FP8 image workload (28 steps) on loose GPUs of one type, with one of its
    diffusion switches set."""
    p = tmp_path / f"{switch}{on}.yaml"
    p.write_text(
        "workloads:\n  - name: img\n    kind: image_generation\n    model: flux1-dev\n"
        f"    weights: fp8\n    {rate}\n    steps: 28\n    max_s_per_image: 60\n"
        f"    {switch}: {str(on).lower()}\nfleet:\n  gpus: [{gpu}]\n  unit: gpu\n"
    )
    return p


def test_an_image_workload_with_fast_accumulation_needs_fewer_geforce_cards(tmp_path):
    from planner import load_scenario, solve

    def plan(fast: bool):
        p = _flux_fp8_on(tmp_path, "rtx-5090", "images_per_s: 2", "fast_accum", fast)
        return solve(load_scenario(p), top=1).plan

    slow, fast = plan(False), plan(True)
    assert fast.total_gpus < slow.total_gpus
    assert fast.cost_usd < slow.cost_usd


def test_estimate_cli_takes_fast_accumulation():
    args = ["estimate", "--model", "flux1-dev", "--gpu", "rtx-5090", "--weights", "fp8"]
    d = {}
    for extra in ([], ["--fast-accum"]):
        r = CliRunner().invoke(main, [*args, *extra, "--format", "json"])
        assert r.exit_code == 0, r.output
        d[bool(extra)] = json.loads(r.output)
    assert d[True]["fast_accum"] is True and d[False]["fast_accum"] is False
    assert d[True]["s_per_image"] < d[False]["s_per_image"]
    # without it, the estimate says what a 16-bit-accumulating pipeline would reach
    assert any("FP16-accumulate 838" in n for n in d[False]["notes"])
    assert not any("accumulat" in n for n in d[True]["notes"])


def test_model_cpu_offload_holds_the_largest_component_and_moves_them_all_per_batch():
    """diffusers' enable_model_cpu_offload: each component is on the GPU only while it runs.
    FLUX.1-dev in FP8 then fits a 24 GB card (its 11.9 GB denoiser, not that plus 9.8 GB of
    16-bit text encoders), and each batch moves every component in and back out over PCIe
    (the RTX 4090's 32 GB/s)."""
    from estimator.families.diffusion import estimate_diffusion

    m, g = get_family_model("flux1-dev"), get_gpu("rtx-4090")
    args = (m, g, Parallel(), "fp8", 1, 1024, 1024, 28, False)
    on, off = estimate_diffusion(*args, offload=True), estimate_diffusion(*args)
    den = m.denoiser(1024, 1024).params * 1.0  # FP8: a byte per weight
    enc, vae = m.encoders().params * 2.0, m.vae(1024, 1024).params * 2.0
    assert on.memory_gb.weights == pytest.approx(max(den, enc, vae) / 1e9)
    assert off.memory_gb.weights == pytest.approx((den + enc + vae) / 1e9)
    assert on.fits and not off.fits
    moved = 2 * (den + enc + vae) / (32 * 1e9)
    assert on.metrics["offload_s"] == pytest.approx(moved)
    assert on.metrics["s_per_image"] == pytest.approx(off.metrics["s_per_image"] + moved)


def test_an_image_workload_fits_a_24_gb_card_only_with_offload(tmp_path):
    def run(offload: bool):
        p = _flux_fp8_on(tmp_path, "rtx-4090", "images_per_hour: 60", "offload", offload)
        return CliRunner().invoke(main, ["solve", str(p), "--format", "json"])

    without, with_ = run(False), run(True)
    assert without.exit_code == 1  # no plan: nothing fits
    assert with_.exit_code == 0, with_.output
    assert json.loads(with_.output)["feasible"] is True


# ---- vision-language -------------------------------------------------------------------------
def test_visual_tokens_follow_each_processor():
    qwen = get_family_model("qwen2.5-vl-7b")
    assert qwen.tokens(1344, 1344) == (48 * 48, 4 * 48 * 48)  # 28 px per token after 2x2 merge
    pix = get_family_model("pixtral-12b")
    assert pix.tokens(1024, 1024)[0] == 64 * 64 + 64  # 16 px patches, a break token per row
    assert pix.tokens(2048, 1024)[0] == 64 * 32 + 32  # downscaled to a 1024 px longest side
    ov = get_family_model("llava-onevision-7b")
    assert ov.tokens(384, 384)[0] == 729 * 2  # one crop plus the base image, 27x27 each


def test_vlm_estimate_adds_visual_tokens_and_encoder_time():
    base = [
        "estimate",
        "--model",
        "qwen2.5-vl-7b",
        "--gpu",
        "h100-sxm",
        "--input-tokens",
        "300",
        "--output-tokens",
        "200",
        "--format",
        "json",
    ]
    one = json.loads(CliRunner().invoke(main, [*base, "--images", "1"]).output)
    two = json.loads(CliRunner().invoke(main, [*base, "--images", "2"]).output)
    assert one["visual_tokens"] == 1369 and two["visual_tokens"] == 2 * 1369
    assert two["vision_encoder_s"] > one["vision_encoder_s"] > 0
    assert two["ttft_s"] > one["ttft_s"]
    assert two["workload"]["input_tokens"] == 300 + 2 * 1369


def test_vlm_workload_images_cost_capacity(tmp_path):
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    def cost(images: int) -> float:
        p = tmp_path / f"v{images}.yaml"
        p.write_text(
            "workloads:\n  - name: q\n    model: qwen2.5-vl-7b\n    users: 2000\n"
            "    hours_per_person: 2\n    utilisation: 0.5\n    input_tokens: 300\n"
            f"    output_tokens: 300\n    images_per_request: {images}\n    ttft_s: 3\n"
            "    tokens_per_s: 25\n    think_time_s: 10\nfleet:\n  gpus: [h100-sxm]\n"
        )
        return sum(a.gpus for a in plan_scenario(load_scenario(p), top=1).plan.assignments)

    assert cost(4) > cost(0)


def test_images_need_a_vision_language_model(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(
        "workloads:\n  - name: q\n    model: llama-3.1-8b\n    users: 10\n"
        "    hours_per_person: 1\n    utilisation: 0.5\n    input_tokens: 10\n"
        "    output_tokens: 10\n    images_per_request: 1\n"
    )
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 2 and "vision-language" in r.output


# ---- VAR and VLA -----------------------------------------------------------------------------
def test_var_tokens_and_passes():
    m = get_family_model("var-d30")
    assert m.tokens == 1 + 4 + 9 + 16 + 25 + 36 + 64 + 100 + 169 + 256 == 680
    from estimator.families.var import estimate_var

    g = get_gpu("a100-80gb-sxm")
    one = estimate_var(m, g, Parallel(), "bf16", 1)
    many = estimate_var(m, g, Parallel(), "bf16", 32)
    # batch 1 streams the 2B weights ten times; a batch shares them until compute binds.
    # Where batch 1 is memory-bound (an H100) that sharing is most of the gain; on the A100,
    # compute-bound already, only the per-pass overheads are shared
    h1 = estimate_var(m, get_gpu("h100-sxm"), Parallel(), "bf16", 1)
    h32 = estimate_var(m, get_gpu("h100-sxm"), Parallel(), "bf16", 32)
    assert h32.metrics["images_per_s"] > 2 * h1.metrics["images_per_s"]
    assert many.metrics["images_per_s"] > one.metrics["images_per_s"]
    # the bottleneck is read off the roofline, not a batch threshold. On the A100 (312 dense
    # TFLOPS, 2 TB/s) the 680 guided tokens of batch 1 already cost more math than the ten
    # weight reads; the H100 (3x the math, 1.7x the bandwidth) streams weights at batch 1.
    assert (one.bottleneck, many.bottleneck) == ("compute", "compute")
    h = get_gpu("h100-sxm")
    assert estimate_var(m, h, Parallel(), "bf16", 1).bottleneck == "memory"
    assert estimate_var(m, h, Parallel(), "bf16", 32).bottleneck == "compute"


def test_vla_robots_fall_with_control_rate_and_cameras():
    from estimator.families.vla import estimate_vla

    m = get_family_model("pi0")
    g = get_gpu("rtx-4090")
    slow = estimate_vla(m, g, Parallel(), "bf16", 1, 3, control_hz=10)
    fast = estimate_vla(m, g, Parallel(), "bf16", 1, 3, control_hz=100)
    assert fast.metrics["robots_per_replica"] < slow.metrics["robots_per_replica"]
    one_cam = estimate_vla(m, g, Parallel(), "bf16", 1, 1)
    assert one_cam.metrics["latency_ms"] < slow.metrics["latency_ms"]
    assert slow.metrics["chunk_period_s"] == pytest.approx(50 / 10)


def test_estimate_cli_var_and_vla():
    r = CliRunner().invoke(
        main,
        ["estimate", "--model", "var-d30", "--gpu", "h100-sxm", "--batch", "8", "--format", "json"],
    )
    d = json.loads(r.output)
    assert {"s_per_image", "images_per_s"} <= set(d)
    r = CliRunner().invoke(
        main,
        [
            "estimate",
            "--model",
            "smolvla",
            "--gpu",
            "l4",
            "--cameras",
            "2",
            "--control-hz",
            "30",
            "--format",
            "json",
        ],
    )
    d = json.loads(r.output)
    assert d["latency_ms"] > 0 and d["robots_per_replica"] >= 1


@pytest.mark.parametrize("name", CAT.names())
def test_every_family_preset_estimates(name):
    family = CAT.items[name].family
    gpus = "4" if name.endswith("72b") else "1"
    args = ["estimate", "--model", name, "--gpu", "h200", "--gpus", gpus, "--format", "json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, (family, r.output)
    d = json.loads(r.output)
    assert d["fits"] is True


@pytest.mark.parametrize(
    "workload",
    [
        "kind: world_model\n    model: vjepa2-vitg\n    clips_per_s: 50\n    frames: 16\n"
        "    resolution: 256",
        "kind: video_generation\n    model: cogvideox-2b\n    videos_per_hour: 30",
        "kind: embedding\n    model: e5-mistral-7b\n    docs_per_s: 100\n    input_tokens: 512",
        "kind: speech\n    model: whisper-tiny\n    audio_hours_per_day: 500",
    ],
)
def test_each_kind_plans(tmp_path, workload):
    from planner.scenario import load_scenario
    from planner.solve import plan_scenario

    p = tmp_path / "s.yaml"
    p.write_text(f"workloads:\n  - name: w\n    {workload}\nfleet:\n  gpus: [l40s, h100-sxm]\n")
    res = plan_scenario(load_scenario(p), top=1)
    assert res.feasible and res.plan.total_gpus >= 1
    a = res.plan.assignments[0]
    assert a.seats_served >= a.seats_needed
