"""The sizing calculator's three checks: saturation (hand-computed rooflines from public
configs), TP scaling over NVLink vs PCIe, and the minimum configuration (`fit`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import estimator
from calibration.cases import UNIT  # the roofline alone: peak bandwidth and FLOPS, no overheads
from estimator import get_gpu
from estimator.saturation import saturation
from estimator.scaling import scaling
from planner.cli import main
from planner.minimum import minimum_fit

# meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, MLP 14336, 32 heads, 8 KV
# heads of 128, vocab 128256, untied embeddings
L8_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336  # attention + MLP weights
L8_MATMUL = 32 * L8_LAYER + 128256 * 4096  # + LM head: the weights one token multiplies
L8_KV_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 heads x 128, bf16 bytes
# activations one token moves per layer (16-bit, estimator.llm's stated model): residual and
# norm 4h; attention in/out 2h, q/k/v 2(4096 + 2·1024), output 2·4096; MLP in 2h, 6·I
_ATTN_ACT = 4 * 4096 + 2 * 4096 + 2 * (4096 + 2 * 1024) + 2 * 4096
L8_ACT = 2 * 32 * (_ATTN_ACT + 2 * 4096 + 6 * 14336)
# mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, 32 layers, 8 experts (top 2) of MLP
# 14336, 32 heads, 8 KV heads of 128, vocab 32000
MX_ATTN = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)
MX_EXPERT = 3 * 4096 * 14336  # one expert of one layer
MX_ACTIVE = MX_ATTN + 32 * 2 * MX_EXPERT + 32000 * 4096
MX_EXPERTS_ALL, MX_EXPERTS_ACTIVE = 32 * 8 * MX_EXPERT, 32 * 2 * MX_EXPERT
# MoE layer: dispatch copies 2h·(1 + top-k), each routed expert's MLP 6·I
MX_ACT = 2 * 32 * (_ATTN_ACT + 2 * 4096 * 3 + 6 * 2 * 14336)


def _hand_ridge(weight_bytes, flops_token, per_seq, gpu) -> float:
    """Roofline batch where a decode step's GEMMs turn compute-bound:
    (W + b·K)/BW = b·c/F  ->  b = W / (BW·c/F − K), K: the bytes a sequence moves beside
    the GEMMs' math (its activations). The attention kernels (KV reads) are a roofline of
    their own after the GEMMs', so the KV cache does not move this ridge."""
    g = get_gpu(gpu)
    return weight_bytes / (g.bandwidth_bytes_s * flops_token / g.peak_flops("bf16") - per_seq)


def test_dense_saturation_batch_is_the_roofline_ridge():
    # short context: the GEMMs turn compute-bound; the KV reads then add their own time
    i, o = 128, 2
    r = saturation("llama-3.1-8b", "h100-sxm", input_tokens=i, output_tokens=o, efficiency=UNIT)
    s = r.series[0]
    hand = _hand_ridge(2 * L8_MATMUL, 2 * L8_MATMUL, L8_ACT, "h100-sxm")
    assert s.saturation_batch == pytest.approx(hand, rel=0.03)
    # past it the aggregate is flat: per token, its GEMMs' math and its attention's KV read
    # (memory-bound at this context: 4·32·4096·129 FLOPs against 17 MB)
    g = get_gpu("h100-sxm")
    per_token = (
        2 * L8_MATMUL / g.peak_flops("bf16") + L8_KV_TOKEN * (i + o / 2) / g.bandwidth_bytes_s
    )
    assert s.tokens_per_s[-1] == pytest.approx(1 / per_token, rel=0.03)
    assert s.bottleneck[0] == "memory" and s.bottleneck[-1] == "compute"


def test_dense_crossing_is_where_per_user_speed_meets_the_target():
    # long context, memory-bound throughout: 1/t(b) = BW / (W + b·K) >= T
    i, o, target = 1024, 256, 100.0
    r = saturation(
        "llama-3.1-8b",
        "h100-sxm",
        input_tokens=i,
        output_tokens=o,
        tokens_per_s=target,
        efficiency=UNIT,
    )
    s = r.series[0]
    bw = get_gpu("h100-sxm").bandwidth_bytes_s
    hand = (bw / target - 2 * L8_MATMUL) / (L8_KV_TOKEN * (i + o / 2) + L8_ACT)
    assert s.crossing_batch == pytest.approx(hand, rel=0.03)
    k = s.batch.index(s.crossing_batch)
    assert s.per_user_tokens_per_s[k] >= target > s.per_user_tokens_per_s[k + 1]


def test_moe_saturation_batch_is_its_roofline_ridge_once_every_expert_is_read():
    # Mixtral: the routed experts' grouped GEMMs are their own roofline; at its ridge every
    # expert of every layer is touched, so they read all expert weights while each token
    # multiplies only its two. (Its attention GEMMs never turn compute-bound: a token's
    # activations, MX_ACT, outweigh what their math hides at H200's ratio.)
    i, o = 128, 2
    r = saturation("mixtral-8x7b", "h200", input_tokens=i, output_tokens=o, efficiency=UNIT)
    s = r.series[0]
    g = get_gpu("h200")
    assert g.bandwidth_bytes_s * 2 * (MX_ACTIVE - MX_EXPERTS_ACTIVE) / g.peak_flops("bf16") < MX_ACT
    hand = _hand_ridge(2 * MX_EXPERTS_ALL, 2 * MX_EXPERTS_ACTIVE, 0.0, "h200")
    assert s.saturation_batch == pytest.approx(hand, rel=0.03)
    # below it, expert touches make the aggregate rise more slowly than a dense model's
    assert s.tokens_per_s[7] / s.tokens_per_s[0] < 8 * 0.6


def test_int4_lowers_the_saturation_batch_and_fp8_kv_raises_the_memory_limit():
    # the roofline alone (a quarter of the weight bytes moves the ridge down by more than
    # half); at the calibrated factors the fixed per-step costs, which do not shrink with
    # the weights, move both ridges (1.75x apart at today's calibration, 2.3x before)
    r = saturation(
        "llama-3.1-8b",
        "h100-sxm",
        input_tokens=128,
        output_tokens=64,
        compare_weights=["int4"],
        compare_kv=["fp8"],
        efficiency=UNIT,
    )
    base, int4, fp8kv = r.series
    assert (int4.weights, fp8kv.kv) == ("int4", "fp8")
    assert int4.saturation_batch < base.saturation_batch / 2
    assert fp8kv.memory_limit > 1.8 * base.memory_limit
    assert fp8kv.batch[-1] == fp8kv.memory_limit  # the curve runs to the limit


def test_saturation_per_user_falls_and_aggregate_rises():
    s = saturation("qwen3-30b-a3b", "h100-sxm", input_tokens=512, output_tokens=128).series[0]
    assert (np.diff(s.per_user_tokens_per_s) <= 0).all()
    assert (np.diff(s.tokens_per_s) >= -1e-3 * np.array(s.tokens_per_s[1:])).all()


def test_pcie_scales_worse_than_its_nvlink_sibling():
    r = scaling(
        "llama-3.1-70b",
        ["a100-80gb-sxm", "a100-80gb-pcie"],
        batch=32,
        input_tokens=1024,
        output_tokens=256,
        max_gpus=8,
        modes=("tp",),
    )
    at = {(p.gpu, p.gpus): p for p in r.points}
    sxm, pcie = at["a100-80gb-sxm", 8], at["a100-80gb-pcie", 8]
    assert pcie.collective_share_decode > 1.5 * sxm.collective_share_decode > 0
    assert pcie.efficiency < sxm.efficiency
    assert r.scaling_limit["a100-80gb-pcie/tp"] <= r.scaling_limit["a100-80gb-sxm/tp"]
    # the collective share is what the step decomposition says; the collectives themselves
    # take more than twice as long on PCIe (64 GB/s against NVLink's 300; their fixed
    # start-up latency is the same on both)
    e = estimator.estimate("llama-3.1-70b", "a100-80gb-pcie", 8, batch=32, output_tokens=256)
    n = estimator.estimate("llama-3.1-70b", "a100-80gb-sxm", 8, batch=32, output_tokens=256)
    assert pcie.collective_share_decode == pytest.approx(
        e.decode_times_s["comm"] / e.decode_times_s["total"]
    )
    assert e.decode_times_s["comm"] > 2 * n.decode_times_s["comm"]


def test_scaling_names_refused_splits():
    # 8B has 32 attention heads: TP64 would split one
    r = scaling("llama-3.1-8b", "h100-sxm", max_gpus=64, modes=("tp",))
    assert [p.gpus for p in r.points] == [1, 2, 4, 8, 16, 32]
    assert [s["gpus"] for s in r.skipped] == [64] and "head" in r.skipped[0]["why"]


def test_fit_agrees_with_estimate_at_the_configuration_it_names():
    r = minimum_fit(
        "llama-3.1-8b", input_tokens=2048, output_tokens=512, users=16, gpus=["l4", "h100-sxm"]
    )
    for f in r.by_gpu:
        assert f.fits
        e = estimator.estimate(
            "llama-3.1-8b",
            f.gpu,
            f.gpus,
            tp=f.parallel["tp"],
            pp=f.parallel["pp"],
            batch=16,
            input_tokens=2048,
            output_tokens=512,
        )
        assert e.fits and e.max_batch == f.max_batch >= 16
        assert e.per_user_tokens_per_s == pytest.approx(f.per_user_tokens_per_s)
        assert e.memory_gb.total == pytest.approx(f.memory_gb_per_gpu)
        # and one GPU fewer (the next smaller power of two) does not hold it
        if f.gpus > 1:
            smaller = estimator.estimate(
                "llama-3.1-8b", f.gpu, f.gpus // 2, batch=16, input_tokens=2048, output_tokens=512
            )
            assert not smaller.fits


def test_fit_on_the_seed_example_names_two_a100_40gb():
    # seed 003: Llama-3-70B INT4, 8,192 context, 4 users -> 2x A100 (40GB)
    r = minimum_fit("llama-3-70b", input_tokens=7168, output_tokens=1024, users=4, weights="int4")
    a100 = next(f for f in r.by_gpu if f.gpu == "a100-40gb-sxm")
    assert a100.fits and a100.gpus == 2 and a100.max_batch >= 4
    # cheapest first: rental $/h never falls down the list of priced fits
    priced = [f.usd_per_hour for f in r.by_gpu if f.fits and f.usd_per_hour is not None]
    assert priced == sorted(priced)


def test_fit_says_why_not():
    r = minimum_fit("llama-3.1-405b", users=4, gpus=["t4"], max_gpus=8)
    (f,) = r.by_gpu
    assert not f.fits and "weights alone exceed" in f.why_not


def test_fit_says_why_not_from_the_widest_split_the_domain_allows():
    """Past its 8-GPU host an RTX 5090 has no network in its preset; wider counts also meet
    other rules (TP=64 divides no heads), but what stops it is memory at the widest split
    the host allows, and that is the reason given."""
    (f,) = minimum_fit("qwen3.5-122b-a10b", users=1, gpus=["rtx-5090"], max_gpus=64).by_gpu
    assert not f.fits and f.why_not.startswith("no split up to 64 GPUs starts; e.g. 8x rtx-5090")
    assert "weights alone exceed usable memory" in f.why_not and "TP=64" not in f.why_not


@pytest.mark.parametrize(
    "args",
    [
        ["saturation", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--compare-kv", "fp8"],
        ["scaling", "--model", "llama-3.1-8b", "--gpu", "h100-sxm,h100-pcie", "--max-gpus", "4"],
        ["fit", "--model", "llama-3.1-8b", "--users", "8", "--gpu", "l4,a10g"],
    ],
)
def test_cli_table_json_csv(args):
    runner = CliRunner()
    t = runner.invoke(main, args)
    assert t.exit_code == 0, t.output
    assert "|" in t.output or "gpu" in t.output  # a table (and a chart where drawn)
    j = runner.invoke(main, [*args, "--format", "json"])
    assert j.exit_code == 0
    payload = json.loads(j.output)
    c = runner.invoke(main, [*args, "--format", "csv"])
    assert c.exit_code == 0
    header, *lines = c.output.strip().splitlines()
    assert "," in header and lines
    if args[0] == "saturation":
        assert len(lines) == sum(len(s["batch"]) for s in payload["series"])
        assert all(math.isfinite(x) for s in payload["series"] for x in s["tokens_per_s"])


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            [
                "saturation",
                "--model",
                "llama-3.1-8b",
                "--gpu",
                "h100-sxm",
                "--compare-weights",
                "int3",
            ],
            "unknown format 'int3'",
        ),
        (["saturation", "--model", "llama-3.1-405b", "--gpu", "l4"], "does not fit"),
        (["scaling", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--modes", "dp"], "--modes"),
        (["scaling", "--model", "llama-3.1-8b", "--gpu", "h100-sxn"], "h100-sxm"),
        (["fit", "--model", "lama-3.1-8b"], "llama-3.1-8b"),
        (["fit", "--model", "llama-3.1-8b", "--gpu", ",,"], "names no GPU type"),
        (["scaling", "--model", "llama-3.1-8b", "--gpu", ",,"], "names at least one GPU type"),
    ],
)
def test_cli_bad_input_is_exit_2(args, needle):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and needle in r.output, r.output


def test_fit_with_no_gpu_holding_it_is_exit_1():
    r = CliRunner().invoke(
        main, ["fit", "--model", "llama-3.1-405b", "--gpu", "t4", "--max-gpus", "8"]
    )
    assert r.exit_code == 1 and "weights alone exceed" in r.output


def test_readme_examples_run():
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = re.search(r"### Three checks before sizing a fleet\n\n```\n(.*?)```", text, re.S)
    cmds = [c for c in block.group(1).replace("\\\n", " ").splitlines() if c.startswith("planner")]
    assert [c.split()[1] for c in cmds] == ["saturation", "scaling", "fit"]
    for c in cmds:
        r = CliRunner().invoke(main, shlex.split(c)[1:])
        assert r.exit_code == 0, (c, r.output)


def test_fit_tries_every_gpu_count_not_only_powers_of_two():
    # 405B in bf16 (~810 GB) needs 5 MI300X (192 GB each): pipeline stages take any count
    (f,) = minimum_fit("llama-3.1-405b", gpus=["mi300x"]).by_gpu
    assert f.fits and f.gpus == 5 and f.parallel["pp"] == 5
    e = estimator.estimate("llama-3.1-405b", "mi300x", 5, tp=1, pp=5)
    assert e.fits
    assert not estimator.estimate("llama-3.1-405b", "mi300x", 4, tp=1, pp=4).fits


def test_fit_uses_estimates_verdict_engine_rules_included():
    # memory holds 8 sequences, but the engine runs at most 4 at once / refuses long requests
    for knobs, needle in (
        ({"max_num_seqs": 4}, "max_num_seqs 4"),
        ({"max_model_len": 1024}, "max_model_len 1024"),
    ):
        from estimator.engines import configure

        eng = configure("vllm", **knobs)
        (f,) = minimum_fit("llama-3.1-8b", users=8, gpus=["h100-sxm"], engine=eng).by_gpu
        assert not f.fits and needle in f.why_not
        e = estimator.estimate("llama-3.1-8b", "h100-sxm", batch=8, engine=eng)
        assert not e.fits and any(needle in n for n in e.notes)


def test_scaling_does_not_claim_past_what_it_tried():
    r = scaling("llama-3.1-70b", "a100-80gb-sxm", batch=32, max_gpus=8, modes=("tp",))
    assert r.scaling_limit["a100-80gb-sxm/tp"] == 8
    from planner.render.sizing import scaling_text

    assert "at least 8 GPU(s), the most tried" in scaling_text(r)


def test_moe_crossing_counts_the_experts_a_batch_touches():
    # Mixtral decode at small batch reads the attention, the LM head and every expert some
    # token of the batch routes to: 8·(1 − (1 − 2/8)^b) of 8 per layer, each 3·4096·14336
    # bf16 weights; per-user speed = BW / bytes(b) falls fast as experts join
    i, o, target = 128, 2, 60.0
    bw = get_gpu("h200").bandwidth_bytes_s

    def bytes_at(b: int) -> float:
        touched = 8 * (1 - (1 - 2 / 8) ** b)
        dense = 2 * (MX_ATTN + 32000 * 4096)
        return dense + 32 * touched * 2 * MX_EXPERT + b * (L8_KV_TOKEN * (i + o / 2) + MX_ACT)

    hand = max(b for b in range(1, 64) if bw / bytes_at(b) >= target)
    r = saturation(
        "mixtral-8x7b",
        "h200",
        input_tokens=i,
        output_tokens=o,
        tokens_per_s=target,
        efficiency=UNIT,
    )
    assert r.series[0].crossing_batch == hand
