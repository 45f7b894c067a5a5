"""Names people type resolve to the right preset: Hugging Face ids in their real spellings,
derivative checkpoints, hub-cache folders, GPU names as the tools print them.

The expected sizes and context lengths are the published ones (model cards, configs), not
read from our presets, so an alias pointing at the wrong model fails here."""

import json

import pytest

from estimator import AmbiguousNameError, UnknownNameError, get_gpu, get_model
from estimator.describe import list_models
from estimator.resolve import resolve_model, weights_for

# (repo id as published, total parameters in billions, context length, implied weights)
HF_IDS = [
    ("meta-llama/Meta-Llama-3-70B-Instruct", 70.6, 8192, None),
    ("meta-llama/Meta-Llama-3-8B", 8.03, 8192, None),
    ("meta-llama/Meta-Llama-3-8B-Instruct", 8.03, 8192, None),
    ("meta-llama/Llama-3.1-8B-Instruct", 8.03, 131072, None),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", 70.6, 131072, None),
    ("meta-llama/Llama-3.1-405B-Instruct-FP8", 405.9, 131072, "fp8"),
    ("meta-llama/Llama-3.3-70B-Instruct", 70.6, 131072, None),
    ("meta-llama/Llama-3.2-1B-Instruct", 1.24, 131072, None),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21, 131072, None),
    ("meta-llama/Llama-2-7b-hf", 6.74, 4096, None),
    ("meta-llama/Llama-2-7b-chat-hf", 6.74, 4096, None),
    ("meta-llama/Llama-2-13b-chat-hf", 13.0, 4096, None),
    ("meta-llama/Llama-2-70b-chat-hf", 69.0, 4096, None),
    ("TheBloke/Llama-2-70B-Chat-AWQ", 69.0, 4096, "int4"),
    ("TheBloke/Llama-2-13B-chat-GPTQ", 13.0, 4096, "int4"),
    ("codellama/CodeLlama-7b-Instruct-hf", 6.74, 16384, None),
    ("codellama/CodeLlama-13b-hf", 13.0, 16384, None),
    ("huggyllama/llama-7b", 6.74, 2048, None),
    ("huggyllama/llama-65b", 65.2, 2048, None),
    ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", 70.6, 131072, None),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", 70.6, 131072, "fp8"),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", 70.6, 131072, "int4"),
    ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", 8.03, 131072, "int8"),
    ("mistralai/Mistral-7B-v0.1", 7.24, 32768, None),
    ("mistralai/Mistral-7B-Instruct-v0.3", 7.25, 32768, None),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, 32768, None),
    ("mistralai/Mixtral-8x22B-Instruct-v0.1", 141.0, 65536, None),
    ("mistralai/Mistral-Nemo-Base-2407", 12.2, 128000, None),
    ("mistralai/Ministral-8B-Instruct-2410", 8.02, 32768, None),
    ("mistralai/Mistral-Large-Instruct-2407", 123.0, 131072, None),
    ("Qwen/Qwen2-7B-Instruct", 7.62, 32768, None),
    ("Qwen/Qwen2-72B-Instruct", 72.7, 32768, None),
    ("Qwen/Qwen2.5-7B-Instruct", 7.62, 32768, None),
    ("Qwen/Qwen2.5-72B-Instruct", 72.7, 32768, None),
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", 72.7, 32768, "int4"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", 72.7, 32768, "int4"),
    ("Qwen/Qwen2.5-3B-Instruct", 3.09, 32768, None),
    ("Qwen/Qwen3-0.6B", 0.6, 40960, None),
    ("Qwen/Qwen3-8B", 8.19, 40960, None),
    ("Qwen/Qwen3-32B", 32.8, 40960, None),
    ("Qwen/Qwen3-30B-A3B", 30.5, 40960, None),
    ("Qwen/Qwen3-235B-A22B", 235.0, 40960, None),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235.0, 262144, None),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 235.0, 262144, "fp8"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480.0, 262144, None),
    ("deepseek-ai/DeepSeek-V3", 671.0, 163840, "fp8"),
    ("deepseek-ai/DeepSeek-R1", 671.0, 163840, "fp8"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", 15.7, 163840, None),
    ("deepseek-ai/DeepSeek-V2-Chat", 236.0, 163840, None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 7.62, 131072, None),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 8.03, 131072, None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 32.8, 131072, None),
    ("google/gemma-2-9b-it", 9.24, 8192, None),
    ("google/gemma-2-27b-it", 27.2, 8192, None),
    ("google/gemma-7b", 8.54, 8192, None),
    ("google/gemma-3-27b-it", 27.4, 131072, None),
    ("google/gemma-3-1b-it", 1.0, 32768, None),
    ("microsoft/phi-4", 14.7, 16384, None),
    ("microsoft/Phi-3-mini-4k-instruct", 3.82, 4096, None),
    ("microsoft/Phi-3-mini-128k-instruct", 3.82, 131072, None),
    ("microsoft/Phi-3.5-mini-instruct", 3.82, 131072, None),
    ("tiiuae/falcon-7b-instruct", 6.92, 2048, None),
    ("tiiuae/falcon-40b", 41.3, 2048, None),
    ("openai/gpt-oss-120b", 116.8, 131072, "mxfp4"),
    ("openai/gpt-oss-20b", 20.9, 131072, "mxfp4"),
    ("moonshotai/Kimi-K2-Instruct", 1026.0, 131072, "fp8"),
    ("zai-org/GLM-4.5-Air", 106.0, 131072, None),
    ("EleutherAI/gpt-j-6b", 6.05, 2048, None),
    ("EleutherAI/gpt-neox-20b", 20.6, 2048, None),
    ("facebook/opt-66b", 66.0, 2048, None),
    ("bigcode/starcoder", 15.5, 8192, None),
    ("HuggingFaceTB/SmolLM2-1.7B-Instruct", 1.71, 8192, None),
    ("01-ai/Yi-1.5-34B-Chat", 34.4, 4096, None),
    ("allenai/OLMo-2-1124-7B-Instruct", 7.3, 4096, None),
    ("ibm-granite/granite-3.3-8b-instruct", 8.17, 131072, None),
    ("MiniMaxAI/MiniMax-M1-80k", 456.0, 10240000, None),
]


def test_the_table_is_broad():
    assert len(HF_IDS) >= 60


@pytest.mark.parametrize(("repo", "billions", "context", "weights"), HF_IDS)
def test_hf_id_resolves_to_the_published_model(repo, billions, context, weights):
    m = get_model(repo)
    assert m.total_params / 1e9 == pytest.approx(billions, rel=0.03), repo
    assert m.max_context == context, repo
    assert resolve_model(repo).weights == weights


@pytest.mark.parametrize(
    "spelling",
    [
        "META-LLAMA/LLAMA-3.1-8B-INSTRUCT",  # any case
        "Llama-3.1-8B-Instruct",  # without the org
        "meta-llama--Llama-3.1-8B-Instruct",  # the org--name spelling
        "models--meta-llama--Llama-3.1-8B-Instruct",  # a hub-cache folder name
        "llama-3.1-8b",  # the preset name
    ],
)
def test_spellings_of_one_id(spelling):
    assert resolve_model(spelling).preset == "llama-3.1-8b"


@pytest.mark.parametrize(
    ("spelling", "preset", "weights"),
    [
        ("llama2-70b", "llama-2-70b", None),  # MLPerf's spelling
        ("Llama 2 70B Chat AWQ", "llama-2-70b", "int4"),  # words, not a repo id
        ("gptj-6b", "gpt-j-6b", None),
        ("Mixtral 8x7B", "mixtral-8x7b", None),
        ("LLaMA-13B", "llama-13b", None),
    ],
)
def test_human_spellings(spelling, preset, weights):
    r = resolve_model(spelling)
    assert (r.preset, r.weights) == (preset, weights)


def test_llama3_is_not_llama31():
    """Llama 3 70B (8k, no RoPE scaling) and Llama 3.1 70B (128k, llama3 scaling) share
    every weight shape; a name that mixes them up sizes the wrong KV budget."""
    assert get_model("meta-llama/Meta-Llama-3-70B").max_context == 8192
    assert get_model("meta-llama/Meta-Llama-3.1-70B").max_context == 131072


def test_users_weights_override_what_the_name_implies():
    assert weights_for("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", None) == "fp8"
    assert weights_for("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "bf16") == "bf16"
    assert weights_for("meta-llama/Llama-3.1-8B-Instruct", None) == "bf16"


def test_derivation_is_reported():
    r = resolve_model("TheBloke/Llama-2-70B-Chat-AWQ")
    assert r.preset == "llama-2-70b" and "-chat-awq" in r.how


def test_ambiguous_names_list_the_candidates():
    with pytest.raises(AmbiguousNameError) as e:
        get_model("mixtral")
    assert e.value.candidates == ["mixtral-8x22b", "mixtral-8x7b"]
    assert "mixtral-8x7b" in str(e.value)


def test_unknown_names_suggest_the_closest():
    with pytest.raises(UnknownNameError) as e:
        get_model("meta-llama/Llama-3.1-8B-Instrukt")
    assert "llama-3.1-8b" in e.value.suggestions


def _config(tmp_path, **extra):
    cfg = json.loads(
        json.dumps(__import__("estimator").model_catalog().items["llama-3.1-8b"].config)
    )
    cfg.update(extra)
    return cfg


def test_hub_cache_folder(tmp_path):
    """models--org--name/snapshots/<rev>/config.json, the revision refs/main names."""
    root = tmp_path / "models--acme--Llama-3.1-8B-Instruct-FP8"
    for rev in ("aaa", "bbb"):
        (root / "snapshots" / rev).mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("bbb\n")
    cfg = _config(tmp_path, quantization_config={"quant_method": "fp8"})
    (root / "snapshots" / "bbb" / "config.json").write_text(json.dumps(cfg))
    (root / "snapshots" / "aaa" / "config.json").write_text("{not json")
    for path in (root, root / "snapshots" / "bbb"):
        ref = resolve_model(str(path))
        assert ref.path == root / "snapshots" / "bbb" / "config.json"
        assert ref.weights == "fp8"
        assert get_model(str(path)).total_params == get_model("llama-3.1-8b").total_params


@pytest.mark.parametrize(
    ("quant", "weights"),
    [
        ({"quant_method": "awq", "bits": 4}, "int4"),
        ({"quant_method": "gptq", "bits": 8}, "int8"),
        ({"quant_method": "fp8", "fmt": "e4m3"}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
        ),
    ],
)
def test_quantization_config_implies_the_format(tmp_path, quant, weights):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(_config(tmp_path, quantization_config=quant)))
    assert resolve_model(str(tmp_path)).weights == weights


# GPU spellings: nvidia-smi / rocminfo / hl-smi product names and benchmark-table forms.
GPU_NAMES = [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("H100-SXM-80GB", "h100-sxm"),
    ("h100_sxm5_80gb", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
    ("A100-40GB", "a100-40gb-sxm"),
    ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA GH200 480GB", "gh200-96gb"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("RTX-4090-24GB", "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("L40-48GB", "l40"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("Tesla T4", "t4"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
    ("NVIDIA H800", "h800"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA A800-SXM4-80GB", "a800-80gb-sxm"),
    ("NVIDIA RTX A6000", "rtx-a6000"),
    ("RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA A10G", "a10g"),
    ("NVIDIA A30", "a30"),
    ("AMD Instinct MI300X", "mi300x"),
    ("MI300X-192GB", "mi300x"),
    ("AMD Instinct MI250X/MI250", "mi250x"),
    ("AMD Instinct MI210", "mi210"),
    ("HL-225", "gaudi2"),
    ("Intel Gaudi 3", "gaudi3"),
    ("GB200 (NVL72)", "gb200"),
    ("H100-80GB (form factor not stated)", "h100-sxm"),
]


@pytest.mark.parametrize(("spelling", "preset"), GPU_NAMES)
def test_gpu_spellings(spelling, preset):
    assert get_gpu(spelling).name == preset


def test_gpu_memory_in_the_name_must_match():
    """'A100-40GB' never reads as the 80 GB part; a memory no variant has is unknown."""
    with pytest.raises(UnknownNameError):
        get_gpu("H100-48GB")


def test_new_gpus_and_segments():
    assert get_gpu("rtx-3090").segment == "consumer"
    assert get_gpu("rtx-a6000").segment == "workstation"
    assert get_gpu("rtx-6000-ada").segment == "workstation"
    assert get_gpu("h100-sxm").segment == "datacenter"
    assert get_gpu("mi250x").memory_gb == 64  # one GCD, as ROCm reports it


def test_models_list_filters():
    moe = list_models(family="moe", max_params=100e9)
    assert moe and all("moe" in r["tags"] and r["total_params_b"] <= 100 for r in moe)
    assert "mixtral-8x7b" in {r["name"] for r in moe}
    assert "mixtral-8x22b" not in {r["name"] for r in moe}  # 141B
    qwen = list_models(vendor="qwen")
    assert qwen and all(r["vendor"].lower() == "qwen" for r in qwen)
    l31 = {r["name"] for r in list_models(series="llama-3.1")}
    assert {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"} <= l31
    assert all(n.startswith("llama-3.1") for n in l31)
    assert list_models(min_params=1e12, family="dense") == []


def test_catalogue_size():
    llms = [r for r in list_models() if r["family"] == "llm"]
    assert len(llms) >= 100


def test_cli_and_scenario_take_the_format_the_name_implies(tmp_path):
    from click.testing import CliRunner

    from planner import load_scenario
    from planner.cli import main

    args = ["estimate", "--model", "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "--gpu",
            "NVIDIA H100 80GB HBM3", "--gpus", "2", "--format", "json"]  # fmt: skip
    out = json.loads(CliRunner().invoke(main, args).output)
    assert out["weights_format"] == "fp8" and out["gpu"] == "h100-sxm"
    out = json.loads(CliRunner().invoke(main, [*args, "--weights", "bf16"]).stdout)
    assert out["weights_format"] == "bf16"
    text = (
        "workloads:\n  - name: chat\n    model: Qwen/Qwen2.5-72B-Instruct-AWQ\n    users: 50\n"
        "    hours_per_person: 2\n    utilisation: 0.5\n    input_tokens: 1000\n"
        "    output_tokens: 200\nfleet:\n  gpus: [NVIDIA H100 80GB HBM3, NVIDIA L40S]\n"
    )
    p = tmp_path / "s.yaml"
    p.write_text(text)
    plan = __import__("planner").solve(load_scenario(p))
    assert plan.to_dict()["plan"][0]["weights"] == "int4"


def test_a_folder_without_a_config_is_named(tmp_path):
    from estimator import EstimatorError

    with pytest.raises(EstimatorError, match="has no config.json"):
        get_model(str(tmp_path))


def test_no_two_presets_claim_one_name():
    """Every alias, with or without its org and punctuation, reads as exactly one preset."""
    from estimator import model_catalog

    cat = model_catalog()
    for index in (cat._short, cat._compact):
        assert {k: v for k, v in index.items() if len(v) > 1} == {}


def test_user_presets_are_read_in_full_when_used(tmp_path):
    """The catalogue reads each model file's name and aliases (the lines before ``config:``);
    a preset's config is parsed and validated when it is first used, and its errors still name
    the file and line. A file whose config comes first is read whole."""
    from estimator import EstimatorError
    from estimator.catalog import get_model_preset, model_catalog

    d = tmp_path / "models"
    d.mkdir()
    (d / "broken.yaml").write_text("name: broken-one\nsource: test\nconfig: {a: [1, 2}\n")
    (d / "first.yaml").write_text(
        "config: {model_type: llama}\nname: config-first\naliases: [org/Config-First]\n"
        "source: test\n"
    )
    extra = (str(tmp_path),)
    cat = model_catalog(extra)
    assert cat.resolve_name("org/config-first") == "config-first"
    assert get_model_preset("llama-3.1-8b", extra).name == "llama-3.1-8b"  # others unaffected
    with pytest.raises(EstimatorError, match=r"broken.yaml:3:.*malformed YAML"):
        get_model_preset("broken-one", extra)
