"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): parameter counts, recurrent state and split
rules against hand-computed values from their public configs and published totals."""

import pytest

from estimator import EstimatorError, get_model
from estimator.hf_config import model_from_config
from estimator.parallel import Parallel, SplitError, check_split


def test_qwen35_9b_counts_match_the_published_checkpoint_exactly():
    """The Hugging Face API counts 9,653,104,368 parameters in Qwen/Qwen3.5-9B's safetensors
    (language model, vision tower and the one-layer MTP head); a llama.cpp text-only build
    reports 8.95B (no vision, no MTP)."""
    m = get_model("qwen3.5-9b")
    assert m.total_params + m.mtp_params == 9_653_104_368
    assert (m.total_params - m.extra_params) / 1e9 == pytest.approx(8.95, abs=0.005)


def test_gated_delta_layer_params_by_hand():
    """Qwen3-Next-80B-A3B: hidden 2048, 16 key heads x 128, 32 value heads x 128, conv 4.
    q, k (2 x 2048x2048), v and the output gate z (2048x4096 each), out (4096x2048); beta
    and alpha (2 x 2048x32), A_log and dt_bias (32 each), a bias-free depthwise conv over
    q, k, v (8192 channels x 4) and the gated norm (128)."""
    la = get_model("qwen3-next-80b-a3b").linear
    expected = 4 * 2048 * 2048 + 2 * 2048 * 4096 + 2 * 2048 * 32 + 2 * 32 + 8192 * 4 + 128
    assert get_model("qwen3-next-80b-a3b")._linear_params() == expected == 33_718_464
    assert (la.key_width, la.width, la.conv_dim) == (2048, 4096, 8192)


def test_recurrent_state_per_sequence_by_hand():
    """Qwen3.5-35B-A3B: 30 Gated DeltaNet layers, each a 32 x 128 x 128 state in float32 (the
    checkpoint's mamba_ssm_dtype) plus a 3-token conv window of 8192 channels at 16 bits."""
    m = get_model("qwen3.5-35b-a3b")
    per_layer = 32 * 128 * 128 * 4 + 8192 * 3 * 2
    assert m.num_linear_layers == 30 and m.num_attention_layers == 10
    assert m.state_bytes_per_sequence() == 30 * per_layer == 64_389_120
    # Qwen3-Next declares no state dtype: vLLM's 'auto' holds it in the model dtype
    nxt = get_model("qwen3-next-80b-a3b")
    assert nxt.linear.state_bytes == 2.0


def test_kv_cache_only_in_the_full_attention_layers():
    """KV per token: 10 gated-attention layers x 2 KV heads x 256 x (K and V) x 2 bytes."""
    m = get_model("qwen3.5-35b-a3b")
    assert m.kv_bytes_per_token(2.0) == 10 * 2 * 256 * 2 * 2


def test_gated_attention_doubles_the_query_projection():
    m = get_model("qwen3.5-9b")
    a, h = m.attention, m.hidden_size
    assert a.output_gate
    q = a.num_heads * a.head_dim
    kv = a.num_kv_heads * a.head_dim
    assert m._attention_params() == 2 * h * q + 2 * h * kv + q * h + 2 * a.head_dim


TINY = {
    "model_type": "qwen3_next",
    "hidden_size": 256,
    "vocab_size": 1000,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 32,
    "intermediate_size": 512,
    "linear_num_value_heads": 4,
    "linear_num_key_heads": 2,
    "linear_value_head_dim": 64,
    "linear_key_head_dim": 64,
}


def test_split_must_divide_the_key_heads():
    m = model_from_config(TINY, "tiny")  # 8 attention heads, 2 key heads, 4 value heads
    check_split(m, Parallel(tp=2))
    with pytest.raises(SplitError, match="TP=4 does not divide the 2 linear-key heads"):
        check_split(m, Parallel(tp=4))


def test_layer_types_must_name_each_layer():
    assert get_model("qwen3-next-80b-a3b").num_layers == 48
    bad = {**TINY, "layer_types": ["linear_attention"] * 3 + ["sliding_attention"]}
    with pytest.raises(EstimatorError, match="layer_types"):
        model_from_config(bad, "tiny")
    # without layer_types, every full_attention_interval-th layer (default 4th) is full
    m = model_from_config(TINY, "tiny")
    assert [la.mixer for la in m.layers] == ["linear"] * 3 + ["attention"]


def test_hybrid_decode_reads_and_writes_its_state(h100):
    """A Gated DeltaNet layer's decode step reads its whole state and writes it back, whatever
    the context: more sequences cost state traffic even at a 1-token context."""
    from estimator import Evaluator

    ev = Evaluator(get_model("qwen3.5-9b"), h100, Parallel())
    one = ev.decode_step(1, 1).memory
    many = ev.decode_step(64, 1).memory
    state = get_model("qwen3.5-9b").state_bytes_per_sequence()
    # 63 more sequences move at least their state twice (read + write) at full bandwidth
    assert (many - one) * h100.bandwidth_bytes_s >= 63 * 2 * state * 0.99


def test_a_hybrid_estimate_says_what_each_sequence_holds_besides_kv(h100):
    """The KV-cache token count counts the pool as attention KV; the note says each
    sequence also holds its recurrent state (51.5 MB for Qwen3.5-9B on one GPU)."""
    from estimator import estimate

    e = estimate("qwen3.5-9b", "h100-sxm")
    note = next(n for n in e.notes if n.startswith("hybrid:"))
    assert "51.5 MB of recurrent state per GPU" in note
    assert not any(n.startswith("hybrid:") for n in estimate("llama-3.1-8b", "h100-sxm").notes)


def test_sglang_keeps_a_hybrids_states_in_a_pool_of_their_own(h100):
    """SGLang splits what its static fraction leaves between the states and the attention KV
    at --mamba-full-memory-ratio 0.9 (states r/(1+r), KV 1/(1+r)) and runs at most the state
    slots over 3 (its radix cache keeps states of cached prefixes); vLLM keeps both in one
    pool and charges each sequence its state. By hand for Qwen3.5-9B on an H100."""
    from estimator import Evaluator
    from estimator.engines import engine, kv_budget_bytes
    from estimator.steps import prepare_steps

    m = get_model("qwen3.5-9b")
    sg = Evaluator(m, h100, Parallel(), engine="sglang")
    budget = kv_budget_bytes(engine("sglang"), h100.memory_bytes, sg.weight_bytes, 0.0, 1)
    state = m.state_bytes_per_sequence()
    assert sg.state_pool == pytest.approx(budget * 0.9 / 1.9)
    assert sg.kv_budget == pytest.approx(budget / 1.9)
    cap = int(budget * 0.9 / 1.9 // state) // 3
    assert sg.state_request_cap == cap and 150 < cap < 200
    assert int(sg.max_batch(623)) == cap  # the attention KV alone would hold far more
    assert prepare_steps(sg, 342, 281).slots == cap
    assert any("pool of their own" in n and f"{cap:,} requests" in n for n in sg.notes)
    # vLLM: one pool, each sequence charged its KV and its state
    vl = Evaluator(m, h100, Parallel(), engine="vllm")
    assert vl.state_pool == 0.0 and vl.state_request_cap is None
    per_seq = m.kv_bytes_per_sequence(623, 2.0) + state
    assert int(vl.max_batch(623)) == int(vl.kv_budget // per_seq) > 4 * cap


def test_sglang_pools_no_states_for_a_model_without_them(h100):
    from estimator import Evaluator

    ev = Evaluator(get_model("llama-3.1-8b"), h100, Parallel(), engine="sglang")
    assert ev.state_pool == 0.0 and ev.state_request_cap is None


def test_sglangs_state_pool_ratio_is_a_knob_of_its_own(h100):
    """--mamba-full-memory-ratio moves SGLang's split: a smaller state pool gives the
    attention KV more room and caps the running requests lower; vLLM has no such pool and
    refuses the knob with the engine that has it."""
    from estimator import Evaluator
    from estimator.engines import configure

    m = get_model("qwen3.5-9b")
    default = Evaluator(m, h100, Parallel(), engine="sglang")
    low = Evaluator(m, h100, Parallel(), engine=configure("sglang", mamba_full_memory_ratio=0.25))
    whole = default.kv_budget + default.state_pool
    assert low.kv_budget + low.state_pool == pytest.approx(whole)
    assert low.state_pool == pytest.approx(whole * 0.25 / 1.25)
    assert low.kv_cache_tokens > 1.5 * default.kv_cache_tokens
    assert low.state_request_cap == int(whole * 0.25 / 1.25 // m.state_bytes_per_sequence()) // 3
    assert low.state_request_cap < default.state_request_cap
    with pytest.raises(EstimatorError, match="sglang's: vllm keeps"):
        configure("vllm", mamba_full_memory_ratio=0.5)


def test_the_cli_and_the_published_runs_take_the_state_pool_ratio():
    import json

    from click.testing import CliRunner

    from calibration.knobs import published_knobs
    from planner.cli import main

    args = ["estimate", "--model", "qwen3.5-9b", "--gpu", "h100-sxm", "--format", "json"]
    runs = {
        r: json.loads(
            CliRunner()
            .invoke(main, [*args, "--engine", "sglang", "--mamba-full-memory-ratio", r])
            .output
        )
        for r in ("0.25", "0.9")
    }
    assert runs["0.25"]["kv_cache_tokens"] > runs["0.9"]["kv_cache_tokens"]
    assert runs["0.25"]["max_batch"] < runs["0.9"]["max_batch"]
    bad = CliRunner().invoke(main, [*args, "--mamba-full-memory-ratio", "0.5"])
    assert bad.exit_code == 2 and "keeps a hybrid's recurrent states in its KV pool" in bad.output
    flags = "sglang.launch_server --mem-fraction-static 0.8 --mamba-full-memory-ratio 0.5"
    assert published_knobs(flags, "sglang") == {
        "gpu_memory_utilization": 0.8,
        "mamba_full_memory_ratio": 0.5,
    }


def test_the_state_pool_ratio_where_it_does_nothing_or_does_not_exist(tmp_path):
    """On a model without recurrent state the knob changes nothing and the estimate says so;
    a scenario that sets it for an engine without such a pool is bad input naming the
    workload (exit 2)."""
    from pathlib import Path

    import yaml
    from click.testing import CliRunner

    from planner.cli import main

    args = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang"]
    r = CliRunner().invoke(main, [*args, "--mamba-full-memory-ratio", "0.5"])
    assert r.exit_code == 0 and "0.5 does nothing: the model has no recurrent state" in r.output
    assert "does nothing" not in CliRunner().invoke(main, args).output
    root = Path(__file__).resolve().parent.parent
    data = yaml.safe_load((root / "scenarios" / "chat-assistant.yaml").read_text())
    data["workloads"][0]["mamba_full_memory_ratio"] = 0.5  # its engine is vLLM
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 2 and "workload 'chat': mamba_full_memory_ratio is sglang's" in r.output
    assert "Traceback" not in r.output


def test_a_batch_beyond_sglangs_state_slots_is_refused_by_that_rule(h100):
    """Past the requests SGLang's state pool holds, an estimate does not fit for that reason
    (not for a memory shortfall of 0 GB); within it, it fits."""
    from estimator import estimate

    e = estimate("qwen3.5-9b", "h100-sxm", engine="sglang", batch=400)
    cap = e.max_batch
    assert not e.fits and e.shortfall_gb == 0.0
    assert e.refused_by.startswith(f"batch 400 exceeds the {cap} requests sglang's pool")
    assert estimate("qwen3.5-9b", "h100-sxm", engine="sglang", batch=cap).fits
    assert estimate("qwen3.5-9b", "h100-sxm", engine="vllm", batch=400).fits
