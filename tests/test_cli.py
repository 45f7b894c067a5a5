"""The CLI: JSON contracts, pictures, exit codes, and every error path."""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


BASE = [
    "estimate",
    "--model",
    "llama-3.1-70b",
    "--gpu",
    "h100-sxm",
    "--gpus",
    "2",
    "--weights",
    "fp8",
    "--input-tokens",
    "2000",
    "--output-tokens",
    "400",
]


def test_estimate_json_has_stable_keys():
    r = run(*BASE, "--batch", "8", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    for k in (
        "fits",
        "memory_gb",
        "ttft_s",
        "tpot_s",
        "per_user_tokens_per_s",
        "output_tokens_per_s",
        "max_batch",
        "bottleneck",
    ):
        assert k in d
    for k in ("weights", "kv_cache", "activations", "overhead", "total", "capacity"):
        assert k in d["memory_gb"]
    assert d["fits"] is True and d["bottleneck"] in ("memory", "compute", "interconnect")
    # device capacity as the runtime reports it: 80 GiB less the driver reserve (79.12 GiB)
    assert d["memory_gb"]["capacity"] == pytest.approx(80 * 2**30 * (1 - 0.011) / 1e9)


def test_estimate_batch_max_uses_largest_fitting_batch():
    d = json.loads(run(*BASE, "--batch", "max", "--format", "json").output)
    assert d["workload"]["batch"] == d["max_batch"] > 8 and d["fits"]


def test_estimate_table_draws_pictures():
    r = run(*BASE, "--batch", "4")
    assert r.exit_code == 0
    for word in ("Memory box", "Pipe", "Die", "Interconnect", "TTFT", "bottleneck"):
        assert word in r.output


def test_estimate_table_shows_the_serving_stacks_share_of_ttft():
    """The one-line split of an idle replica's TTFT: the prefill, then what the engine's
    own server adds (its fitted time), which add up to the TTFT shown."""
    for engine in ("sglang", "vllm"):
        d = json.loads(run(*BASE, "--engine", engine, "--format", "json").output)
        text = run(*BASE, "--engine", engine).output
        line = next(x for x in text.splitlines() if x.startswith("serving stack's time"))
        want = f"{d['serving_stack_s'] * 1e3:.1f} ms" if d["serving_stack_s"] else "0 (none"
        assert f"({engine})" in line and want in line
        assert d["ttft_s"] == pytest.approx(d["prefill_s"] + d["serving_stack_s"])


def test_model_that_does_not_fit_says_by_how_much():
    r = CliRunner().invoke(
        main,
        [
            "estimate",
            "--model",
            "llama-3.1-405b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "2",
            "--batch",
            "1",
        ],
    )
    assert r.exit_code == 1
    assert "does not fit" in r.output and "short by" in r.output
    assert "nearest that fits" in r.output


def test_unknown_gpu_suggests_closest():
    r = CliRunner().invoke(main, ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sx"])
    assert r.exit_code == 2
    assert "unknown gpu 'h100-sx'" in r.output and "h100-sxm" in r.output
    assert "Traceback" not in r.output


def test_unknown_model_suggests_closest():
    r = CliRunner().invoke(main, ["estimate", "--model", "lama-3.1-70b", "--gpu", "h100-sxm"])
    assert r.exit_code == 2 and "llama-3.1-70b" in r.output


def test_unknown_model_suggests_other_families_too():
    r = CliRunner().invoke(main, ["estimate", "--model", "flux-devv", "--gpu", "h100-sxm"])
    assert r.exit_code == 2 and "flux1-dev" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(
    "flag", [["--images", "2"], ["--image-resolution", "512x512"], ["--steps", "20"]]
)
def test_estimate_refuses_other_families_options_for_a_text_model(flag):
    """A text model's estimate would ignore images, denoising steps...: refused, named,
    rather than silently answered without them (Qwen3.5's preset serves text)."""
    r = CliRunner().invoke(main, ["estimate", "--model", "qwen3.5-9b", "--gpu", "h100-sxm", *flag])
    assert r.exit_code == 2, r.output
    assert f"{flag[0]} is an option of the other families' models" in r.output
    assert "'qwen3.5-9b' is sized as a text language model" in r.output
    vlm = ["estimate", "--model", "qwen2.5-vl-7b", "--gpu", "h100-sxm", "--images", "2"]
    assert CliRunner().invoke(main, vlm).exit_code == 0


def test_models_show_family_preset():
    r = CliRunner().invoke(main, ["models", "show", "whisper-large-v3", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["family"] == "asr" and d["source"]
    # derived, not typed in: within 2% of the published 1.55B
    assert abs(d["total_params"] / 1.55e9 - 1) < 0.02
    t = CliRunner().invoke(main, ["models", "show", "flux1-dev"])
    assert t.exit_code == 0 and "diffusion_image" in t.output


def test_bad_tp_names_the_rule():
    r = CliRunner().invoke(
        main, ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "3"]
    )
    assert r.exit_code == 2 and "TP must divide the number of attention heads" in r.output


def test_bad_batch_is_bad_input():
    r = CliRunner().invoke(main, [*BASE, "--batch", "lots"])
    assert r.exit_code == 2 and "--batch" in r.output


def test_model_config_path(tmp_path):
    from estimator import get_model_preset

    p = tmp_path / "my-model" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(get_model_preset("qwen3-8b").config))
    r = run("estimate", "--model-config", str(p), "--gpu", "l40s", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.output)["model"] == "my-model"


def test_model_and_config_are_exclusive(tmp_path):
    r = CliRunner().invoke(main, ["estimate", "--gpu", "l40s"])
    assert r.exit_code == 2 and "exactly one" in r.output


def test_models_show_json():
    d = json.loads(run("models", "show", "llama-3.1-70b", "--format", "json").output)
    assert d["kv_bytes_per_token"] == 327_680
    assert d["total_params"] == pytest.approx(70.55e9, rel=0.001)
    d8 = json.loads(
        run("models", "show", "llama-3.1-70b", "--kv", "fp8", "--format", "json").output
    )
    assert d8["kv_bytes_per_token"] == 163_840
    moe = json.loads(run("models", "show", "mixtral-8x7b", "--format", "json").output)
    assert moe["active_params"] < moe["total_params"] / 3


def test_gpus_show_json():
    d = json.loads(run("gpus", "show", "h100-sxm", "--format", "json").output)
    assert d["vendor"] == "nvidia" and d["memory_gb"] == 80
    assert d["memory_bandwidth_gb_s"] == 3350 and d["dense_tflops"]["bf16"] > 900
    assert "fp4" not in d["dense_tflops"]
    assert (
        json.loads(run("gpus", "show", "b200", "--format", "json").output)["dense_tflops"]["fp4"]
        > 0
    )


def test_gpus_say_which_efficiency_factors_are_their_familys_own():
    """`gpus show` gives the factors a GPU runs at and whether each is its family's own (H100:
    Hopper's, bandwidth from kernel data and a fitted compute share; Gaudi 3: the defaults,
    with the note estimates carry); `gpus list` has the same in a column."""
    from estimator.efficiency import calibration

    d = json.loads(run("gpus", "show", "h100-sxm", "--format", "json").output)["efficiency"]
    hopper = calibration()["families"]["hopper"]
    assert d["family"] == "hopper" and d["bandwidth_own"] and d["compute_own"]
    assert d["bandwidth_share"] == pytest.approx(hopper["memory"], abs=1e-4)
    assert "note" not in d and "compute_share_fp4" not in d
    g = json.loads(run("gpus", "show", "gaudi3", "--format", "json").output)["efficiency"]
    assert not g["bandwidth_own"] and not g["compute_own"] and "defaults" in g["note"]
    default = calibration()["defaults"]
    assert g["bandwidth_share"] == pytest.approx(default["memory"], abs=1e-4)
    rows = {line.split()[0]: line for line in run("gpus", "list").output.splitlines()[2:]}
    assert rows["h100-sxm"].endswith("bw, compute") and rows["gaudi3"].endswith(" -")


def test_lists():
    out = run("models", "list").output
    assert "deepseek-v3" in out and "whisper-large-v3" in out and "sdxl" in out
    assert "mi300x" in run("gpus", "list").output
    assert len(json.loads(run("gpus", "list", "--format", "json").output)) >= 19


def test_user_presets_override(tmp_path):
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "mine.yaml").write_text(
        "- name: h100-sxm\n  display_name: My H100\n  vendor: nvidia\n  family: hopper\n"
        "  memory_gb: 80\n  memory_bandwidth_gb_s: 1000\n  dense_tflops: {bf16: 989}\n"
        "  scale_up: {kind: nvlink4, bandwidth_gb_s: 450, latency_us: 0.6, domain_size: 8}\n"
        "  pcie_gb_s: 64\n  tdp_w: 700\n  sources: {all: my lab}\n"
    )
    d = json.loads(
        run("--presets", str(tmp_path), "gpus", "show", "h100-sxm", "--format", "json").output
    )
    assert d["memory_bandwidth_gb_s"] == 1000


def test_malformed_user_preset_names_file_and_line(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad.yaml").write_text("name: x\nconfig: [1, 2\n")
    r = CliRunner().invoke(main, ["--presets", str(tmp_path), "models", "list"])
    assert r.exit_code == 2 and "bad.yaml:" in r.output and "malformed YAML" in r.output


def test_curve_json_keys_and_seed_example():
    r = run(
        "curve",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "2",
        "--weights",
        "fp8",
        "--input-tokens",
        "32000",
        "--output-tokens",
        "500",
        "--users-max",
        "12",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert {"points", "knee_users", "max_users_fit"} <= set(d)
    p = d["points"]
    assert len(p) == 12
    for k in (
        "users",
        "ttft_s",
        "ttft_p90_s",
        "per_user_tokens_per_s",
        "output_tokens_per_s",
        "memory_gb",
        "fits",
    ):
        assert k in p[0]
    ttft = [x["ttft_s"] for x in p]
    assert ttft == sorted(ttft) and ttft[-1] > 3 * ttft[0]
    assert 1 <= d["knee_users"] <= d["max_users_fit"] < 12
    assert not p[-1]["fits"]


def test_curve_targets_set_the_knee():
    base = [
        "curve",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--input-tokens",
        "2000",
        "--output-tokens",
        "200",
        "--think-time",
        "5",
        "--users",
        "1,4,16,64,128,256",
        "--format",
        "json",
    ]
    loose = json.loads(run(*base, "--tokens-per-s", "20").output)["knee_users"]
    tight = json.loads(run(*base, "--tokens-per-s", "100").output)["knee_users"]
    assert tight < loose


def test_curve_table_and_bad_users():
    r = run("curve", "--model", "llama-3.1-8b", "--gpu", "l40s", "--users", "1,2,4")
    assert r.exit_code == 0 and "knee" in r.output and "fit in memory" in r.output
    bad = CliRunner().invoke(
        main, ["curve", "--model", "llama-3.1-8b", "--gpu", "l40s", "--users", "a,b"]
    )
    assert bad.exit_code == 2 and "--users" in bad.output


def test_every_curve_point_carries_its_band():
    """Each point of a language model's curve carries the p10-p90 its operating point
    would (value times its regime's quantiles: the TTFT's on the percentile drawn), in the
    JSON and beside its values in the table."""
    args = ("curve", "--model", "llama-3.1-8b", "--gpu", "l40s", "--users", "1,4,16")
    d = json.loads(run(*args, "--percentile", "95", "--format", "json").output)
    f = d["band_factors"]
    for p in d["points"]:
        b = p["bands"]
        assert b["ttft_s"]["p10"] == pytest.approx(p["ttft_p95_s"] * f["ttft"]["p10"])
        assert b["ttft_s"]["p90"] == pytest.approx(p["ttft_p95_s"] * f["ttft"]["p90"])
        assert b["per_user_tokens_per_s"]["p10"] == pytest.approx(
            p["per_user_tokens_per_s"] / f["tpot"]["p90"]
        )
        assert b["per_user_tokens_per_s"]["p10"] < p["per_user_tokens_per_s"]
    # the operating point's is its point's, with the basis it was read from
    at = next(p for p in d["points"] if p["users"] == d["operating_point"]["users"])
    op = dict(d["operating_point"]["bands"])
    assert "basis" in op and {k: v for k, v in op.items() if k != "basis"} == at["bands"]
    text = run(*args).output
    row = next(line for line in text.splitlines() if line.split()[:1] == ["16"])
    points = json.loads(run(*args, "--format", "json").output)["points"]
    p = next(p for p in points if p["users"] == 16)
    lo, hi = p["bands"]["ttft_s"]["p10"], p["bands"]["ttft_s"]["p90"]
    assert f"{lo:.3g}-{hi:.3g}" in row, row


def test_estimate_under_load_and_serving_options():
    d = json.loads(run(*BASE, "--batch", "8", "--format", "json").output)
    u = d["under_load"]
    assert u["users"] == 8 and u["ttft_p90_s"] >= u["ttft_s"] > 0
    # its numbers carry their bands, as a curve's operating point's: TTFT's on the p90
    b = u["bands"]
    assert b["ttft_s"]["p10"] < u["ttft_p90_s"] < b["ttft_s"]["p90"]
    assert b["per_user_tokens_per_s"]["p10"] < u["per_user_tokens_per_s"]
    assert "ttft:" in b["basis"] and "harnesses" not in b["basis"]
    waves = json.loads(
        run(*BASE, "--batch", "8", "--arrivals", "waves", "--format", "json").output
    )["under_load"]["bands"]
    assert "rows of harnesses" in waves["basis"]
    text = run(*BASE, "--batch", "8").output
    assert "s p90 (p10-p90 " in text and "tok/s per user (p10-p90 " in text
    # the band's median beside it, the estimate times its regime's median measured/predicted
    assert f"median {b['per_user_tokens_per_s']['p50']:.3g})" in text
    spec = json.loads(
        run(
            *BASE,
            "--batch",
            "8",
            "--spec-tokens",
            "4",
            "--spec-acceptance",
            "0.8",
            "--format",
            "json",
        ).output
    )["under_load"]
    assert spec["per_user_tokens_per_s"] > u["per_user_tokens_per_s"]
    cached = json.loads(
        run(*BASE, "--batch", "8", "--prefix-hit-rate", "0.8", "--format", "json").output
    )["under_load"]
    assert cached["ttft_s"] < u["ttft_s"]


def test_curve_disaggregated():
    args = [
        "curve",
        "--model",
        "llama-3.3-70b",
        "--gpu",
        "h200",
        "--gpus",
        "4",
        "--weights",
        "fp8",
        "--kv",
        "fp8",
        "--input-tokens",
        "12000",
        "--output-tokens",
        "300",
        "--think-time",
        "20",
        "--users",
        "8,32",
        "--format",
        "json",
    ]
    co = json.loads(run(*args).output)
    dis = json.loads(run(*args, "--disaggregate", "1:1").output)
    assert dis["disaggregated"] == {"prefill_replicas": 1, "decode_replicas": 1}
    # no prefill interference: decode speed holds up under load
    assert dis["points"][1]["per_user_tokens_per_s"] > co["points"][1]["per_user_tokens_per_s"]
    bad = CliRunner().invoke(main, [*args, "--disaggregate", "x"])
    assert bad.exit_code == 2 and "P:D" in bad.output


def test_family_presets_are_read_by_their_heads_and_checked_when_used(tmp_path):
    """A family preset's name, aliases and family come from the lines above its config (or
    a pipeline's components): a family without physics is skipped, and a file broken below
    its head is reported, with its file and line, once something reads the whole of it."""
    d = tmp_path / "families" / "asr"
    d.mkdir(parents=True)
    (d / "todo.yaml").write_text("name: my-todo\nfamily: not_built_yet\nsource: x\nconfig: {}\n")
    (d / "bad.yaml").write_text("name: my-whisper\nfamily: asr\nsource: x\nconfig: [1, 2\n")
    listed = CliRunner().invoke(main, ["--presets", str(tmp_path), "models", "list"])
    assert listed.exit_code == 2 and "bad.yaml:" in listed.output
    assert "malformed YAML" in listed.output
    from estimator.families import family_catalog, is_family_model

    cat = family_catalog((str(tmp_path),))
    assert "my-whisper" in cat.names() and "my-todo" not in cat.names()
    assert is_family_model("my-whisper", (str(tmp_path),))
    assert not is_family_model("my-todo", (str(tmp_path),))


def test_a_reader_that_goes_away_ends_the_command_cleanly():
    """`planner ... | head`: the pipe closes before the table (or the help) is written. The
    command exits 0 with nothing on stderr (click's own handler would exit 1)."""
    import shutil
    import subprocess

    exe = shutil.which("planner", path=str(Path(sys.executable).parent))
    assert exe, "the planner script is installed beside this Python"
    for args in (["models", "list"], ["--help"]):
        p = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()  # the reader is gone before the command writes
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0 and err == b"", args
