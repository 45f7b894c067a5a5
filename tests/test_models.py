"""Derived architecture numbers against public configs and published totals."""

import json

import numpy as np
import pytest

from estimator import EstimatorError, UnknownNameError, get_model, model_catalog
from estimator.hf_config import PARSERS, load_config_file

CAT = model_catalog()
NAMES = CAT.names()


def test_at_least_twenty_language_models():
    assert len(NAMES) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_derived_total_matches_published_within_2pct(name):
    preset = CAT.items[name]
    pub = preset.published.total_params_b
    assert pub, f"{name}: published total missing"
    m = preset.build()
    derived = (m.total_params + (m.mtp_params if preset.published.mtp_included else 0)) / 1e9
    assert derived == pytest.approx(pub, rel=0.02)


@pytest.mark.parametrize("name", [n for n in NAMES if CAT.items[n].published.active_params_b])
def test_derived_active_matches_published(name):
    """Labs count 'active' differently: all parameters, without the input embedding
    (OpenAI's gpt-oss card), or without both embeddings (GLM). One of them must agree."""
    preset = CAT.items[name]
    m = preset.build()
    pub = preset.published.active_params_b * 1e9
    c = m.counts
    conventions = [
        m.active_params,
        m.active_params - c.embed,
        m.active_params - c.embed - (c.lm_head or 0),
    ]
    assert min(abs(x / pub - 1) for x in conventions) < 0.03


@pytest.mark.parametrize("name", NAMES)
def test_parameter_derivation_adds_up_to_the_total(name):
    """`planner models show` prints the count as arithmetic: its parts sum to the total."""
    from estimator.describe import param_derivation

    lines = param_derivation(CAT.items[name].build())
    total = next(
        int(x.split(": ")[1].split(" ")[0].replace(",", ""))
        for x in lines
        if x.startswith("total:")
    )
    parts = [x for x in lines if not x.startswith(("total:", "active", "not loaded"))]
    summed = sum(
        int(x.rsplit("= ", 1)[1].replace(",", ""))
        if "= " in x
        else int(x.split(": ")[1].split(" ")[0].replace(",", ""))
        for x in parts
        if "tied" not in x
    )
    assert summed == total


def test_llama3_70b_kv_bytes_per_token(llama70):
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680
    assert llama70.kv_bytes_per_token(2.0) == 327_680


def test_llama3_70b_kv_for_four_users_at_8k(llama70):
    # 8,192 tokens x 4 users x 327,680 B = 10.74 GB
    kv = 4 * llama70.kv_bytes_per_sequence(8192, 2.0)
    assert kv / 1e9 == pytest.approx(10.737, abs=0.001)


def test_llama3_70b_parameter_breakdown(llama70):
    h, layers, vocab = 8192, 80, 128256
    attn = h * 64 * 128 + 2 * h * 8 * 128 + 64 * 128 * h
    mlp = 3 * h * 28672
    expected = layers * (attn + mlp + 2 * h) + h + 2 * vocab * h
    assert llama70.total_params == expected


def test_deepseek_v3_mla_latent_cache():
    m = get_model("deepseek-v3")
    # 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes = 70,272 B per token
    assert m.kv_bytes_per_token(2.0) == 61 * 576 * 2
    assert m.uses_mla


def test_sliding_window_caps_kv_gemma2():
    m = get_model("gemma-2-9b")
    per_layer_token = 2 * 8 * 256 * 2  # K+V, 8 KV heads, head_dim 256, bf16
    at_16k = m.kv_bytes_per_sequence(16384, 2.0)
    # 21 global layers hold 16k tokens, 21 local layers hold their 4,096-token window
    assert at_16k == 21 * per_layer_token * 16384 + 21 * per_layer_token * 4096


def test_mamba_state_is_fixed_and_kv_small_for_hybrids():
    m = get_model("nemotron-h-8b")
    assert m.state_bytes_per_sequence() > 0
    assert m.num_attention_layers == 4
    ctx = np.array([1_000, 10_000, 100_000])
    kv = m.kv_bytes_per_sequence(ctx, 2.0)
    assert np.all(np.diff(kv) > 0)  # attention layers still grow
    dense = get_model("llama-3.1-8b").kv_bytes_per_sequence(100_000, 2.0)
    assert kv[-1] + m.state_bytes_per_sequence() < dense / 5


@pytest.mark.parametrize("name", NAMES)
def test_longer_context_never_shrinks_kv(name):
    m = get_model(name)
    ctx = np.array([1, 128, 1024, 4096, 8192, 32768, 131072])
    kv = m.kv_bytes_per_sequence(ctx, 2.0)
    assert np.all(np.diff(kv) >= 0)


@pytest.mark.parametrize("name", NAMES)
def test_config_json_import_round_trip(tmp_path, name):
    """Every shipped preset's verbatim config.json loads through --model-config identically."""
    preset = CAT.items[name]
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(preset.config))
    m = load_config_file(path)
    assert m.total_params == preset.build().total_params
    assert get_model(str(path)).total_params == m.total_params


def test_every_required_config_format_is_supported():
    required = {
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "qwen2_moe",
        "qwen3_moe",
        "mixtral",
        "deepseek_v2",
        "deepseek_v3",
        "gemma2",
        "gemma3",
        "gpt_oss",
        "glm4_moe",
        "nemotron_h",
        "jamba",
    }
    assert required <= set(PARSERS)
    shipped = {CAT.items[n].config.get("model_type") for n in NAMES}
    assert shipped >= {
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "mixtral",
        "deepseek_v3",
        "gemma2",
        "gemma3",
        "gpt_oss",
        "glm4_moe",
        "nemotron_h",
        "jamba",
        "llama4",
    }


def test_qwen2_moe_and_deepseek_v2_formats(tmp_path):
    """Formats with no shipped preset, from their public configs (Qwen1.5-MoE-A2.7B,
    DeepSeek-V2-Lite): published totals 14.3B and 15.7B."""
    qwen2moe = {
        "model_type": "qwen2_moe",
        "hidden_size": 2048,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "intermediate_size": 5632,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "decoder_sparse_step": 1,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
    }
    dsv2_lite = {
        "model_type": "deepseek_v2",
        "hidden_size": 2048,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "intermediate_size": 10944,
        "moe_intermediate_size": 1408,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "num_experts_per_tok": 6,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "q_lora_rank": None,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 102400,
        "tie_word_embeddings": False,
    }
    for cfg, total in ((qwen2moe, 14.3), (dsv2_lite, 15.7)):
        p = tmp_path / f"{cfg['model_type']}.json"
        p.write_text(json.dumps(cfg))
        assert load_config_file(p).total_params / 1e9 == pytest.approx(total, rel=0.02)


def test_unsupported_model_type_lists_supported(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "rwkv", "hidden_size": 10}))
    with pytest.raises(EstimatorError) as e:
        load_config_file(p)
    assert "unsupported model_type 'rwkv'" in str(e.value)
    assert "llama" in str(e.value) and "deepseek_v3" in str(e.value)


def test_missing_key_is_named(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    with pytest.raises(EstimatorError, match="num_attention_heads|num_hidden_layers|vocab_size"):
        load_config_file(p)


def test_bad_json_names_line(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{\n "model_type": "llama",\n oops\n}')
    with pytest.raises(EstimatorError, match="line 3"):
        load_config_file(p)


def test_unknown_model_suggests_closest():
    with pytest.raises(UnknownNameError) as e:
        get_model("llama-3.1-7b")
    assert "llama-3.1-70b" in e.value.suggestions or "llama-3.1-8b" in e.value.suggestions


def test_aliases_resolve_hf_ids():
    assert get_model("meta-llama/Llama-3.3-70B-Instruct").name == "llama-3.3-70b"
    assert get_model("Qwen/Qwen3-30B-A3B").name == "qwen3-30b-a3b"


def test_context_note_only_past_the_declared_maximum():
    m = get_model("llama-3.1-8b")
    assert m.max_context == 131072
    assert m.context_note(131072) is None
    assert "131,072" in m.context_note(131073)
