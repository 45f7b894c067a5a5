"""The forward estimate: formulas against hand-computed values, invariants, split rules."""

import numpy as np
import pytest

from estimator import (
    EstimatorError,
    Evaluator,
    Parallel,
    SplitError,
    Workload,
    estimate_replica,
    expert_touch,
    get_gpu,
    get_model,
    gpu_catalog,
)
from estimator.curves import curve
from estimator.efficiency import efficiency_for, efficiency_key


def test_int4_weights_of_llama3_70b(llama70, h100):
    """INT4 (AWQ, group 128: 0.5 B + 4 B of scale/zero per 128 values) on the transformer
    blocks; embeddings and lm_head stay BF16 as the quantisation recipes ship them."""
    ev = Evaluator(llama70, h100, Parallel(), weights="int4")
    c = llama70.counts
    blocks = c.total - c.embed - c.lm_head
    assert blocks * 0.5 / 1e9 == pytest.approx(34.2, abs=0.1)  # "about 35 GB" of 4-bit weights
    expected = blocks * (0.5 + 4 / 128) + (c.embed + c.lm_head) * 2
    assert ev.weight_bytes == pytest.approx(expected, rel=1e-9)
    assert 38 < ev.weight_bytes / 1e9 < 41


def test_kv_memory_four_users_8k(llama70, h100):
    e = estimate_replica(
        llama70, h100, Parallel(tp=2), Workload(input_tokens=8000, output_tokens=192, batch=4)
    )
    # per GPU: 4 x 8192 x 327,680 B / 2 (TP2 splits the 8 KV heads) = 5.37 GB
    assert e.memory_gb.kv_cache == pytest.approx(10.737 / 2, abs=0.001)


def test_decode_step_hand_computed_llama8b(h100):
    """Batch 1, BF16, one H100: t = bytes / (bandwidth x eff) + fixed overheads, where bytes
    = every weight but the input-embedding table (a gather) + the KV cache read + the token's
    activations written and read back between kernels; the host's overheads are the
    default engine's (vLLM)."""
    m = get_model("llama-3.1-8b")
    eff = efficiency_for(efficiency_key(h100), engine="vllm")
    ev = Evaluator(m, h100, Parallel())
    ctx = 1000
    st = ev.decode_step(1, ctx)
    c = m.counts
    weight_bytes = (c.total - c.embed) * 2
    kv = ctx * 131072
    h, q, kv_dims, inter = 4096, 4096, 2 * 1024, 14336
    per_layer = 4 * h + (2 * h + 2 * (q + kv_dims) + 2 * q) + (2 * h + 6 * inter)
    act = 32 * per_layer * 2  # = 8,912,896 bytes per token
    assert act == 8_912_896
    t_mem = (weight_bytes + kv + act) / (3350e9 * eff.memory)
    assert float(st.memory) == pytest.approx(t_mem, rel=1e-6)
    overhead = (
        32 * eff.layer_overhead_us * 1e-6 + eff.step_overhead_ms * 1e-3 + eff.seq_overhead_us * 1e-6
    )
    assert float(st.total) == pytest.approx(t_mem + overhead, rel=1e-6)
    assert st.bottleneck() == "memory"


def test_int4_weights_stream_at_their_share(h100):
    """W4A16: the layers' int4 bytes (0.5 B a weight plus a 16-bit scale and zero point per
    128) cost 1/int4_stream of their bytes to stream; the 16-bit lm_head and the KV cache
    do not. Llama-3.1-8B at batch 1: halving the share adds exactly the layers' int4 bytes
    over the achieved bandwidth, and the share shipped is below 1."""
    from dataclasses import replace

    m = get_model("llama-3.1-8b")
    eff = efficiency_for(efficiency_key(h100), engine="vllm")
    assert 0 < eff.int4_stream < 1
    c = m.counts
    layer_bytes = (c.total - c.embed - c.lm_head) * (0.5 + 4 / 128)
    bw = 3350e9 * eff.memory
    a = Evaluator(m, h100, Parallel(), "int4", "bf16", efficiency=replace(eff, int4_stream=1.0))
    b = a.with_efficiency(replace(eff, int4_stream=0.5))
    ta, tb = float(a.decode_step(1, 1000).memory), float(b.decode_step(1, 1000).memory)
    assert tb - ta == pytest.approx(layer_bytes / bw, rel=1e-6)
    bf = Evaluator(m, h100, Parallel(), "bf16", "bf16", efficiency=replace(eff, int4_stream=0.5))
    bf1 = bf.with_efficiency(replace(eff, int4_stream=1.0))
    assert float(bf.decode_step(1, 1000).memory) == float(bf1.decode_step(1, 1000).memory)


def test_prefill_compute_bound_hand_computed(h100):
    m = get_model("llama-3.1-8b")
    eff = efficiency_for(efficiency_key(h100))
    ev = Evaluator(m, h100, Parallel())
    n = 4096
    st = ev.prefill(1, n)
    head = 128256 * 4096  # untied lm_head (vocab x hidden): logits of the last token only
    matmul = 2 * (m.matmul_params_per_token - head) * n + 2 * head
    attn = 32 * 2 * 32 * (128 + 128) * n * (n + 1) / 2  # causal: half the square
    t = matmul / (989.4e12 * eff.compute) + attn / (989.4e12 * eff.compute)
    assert float(st.compute) == pytest.approx(t, rel=1e-6)
    assert st.bottleneck() == "compute"


def test_ttft_is_the_prefill_plus_the_serving_stacks_fitted_time(h100):
    """An idle replica's first token: the prefill pass samples it, and the engine's own
    server adds its fitted time (a dense model's its dense models'), which the estimate
    reports on its own line."""
    m = get_model("llama-3.1-8b")
    w = Workload(input_tokens=128, output_tokens=64)
    for engine in ("sglang", "vllm"):
        e = estimate_replica(m, h100, Parallel(), w, engine=engine)
        # a dense model: its engine's dense models' fitted time where they have one
        eff = efficiency_for(efficiency_key(h100), engine=engine, dense=True)
        stack = eff.request_overhead_ms * 1e-3
        assert e.serving_stack_s == stack
        assert e.ttft_s == pytest.approx(e.prefill_s + stack, rel=1e-12)
    assert stack == 0.0  # vLLM's server: no published one-client TTFTs fit it


def test_more_bandwidth_never_slows_decode(llama70, h100):
    fast = h100.model_copy(update={"memory_bandwidth_gb_s": h100.memory_bandwidth_gb_s * 1.5})
    b = np.array([1, 4, 16, 64, 256])
    slow_t = Evaluator(llama70, h100, Parallel(tp=4)).decode_step(b, 3000).total
    fast_t = Evaluator(llama70, fast, Parallel(tp=4)).decode_step(b, 3000).total
    assert np.all(fast_t <= slow_t)
    assert np.all(fast_t[:2] < slow_t[:2])


@pytest.mark.parametrize("gpu", gpu_catalog().names())
def test_decode_time_rises_with_batch_and_context(gpu):
    m = get_model("qwen3-30b-a3b")
    g = get_gpu(gpu)
    ev = Evaluator(m, g, Parallel(), weights="fp8")
    b = np.arange(1, 257)
    t = ev.decode_step(b, 2048).total
    assert np.all(np.diff(t) >= -1e-15)
    tc = ev.decode_step(8, np.array([128, 1024, 8192, 32768])).total
    assert np.all(np.diff(tc) > 0)


def test_expert_touch_rises_with_batch_and_never_exceeds_one():
    b = np.arange(0, 2000)
    s = expert_touch(8, 128, b)
    assert s[0] == 0 and s[1] == pytest.approx(8 / 128)
    assert np.all(np.diff(s) >= 0) and np.all(s <= 1.0)
    assert s[-1] == pytest.approx(1.0, abs=1e-12)


def test_the_busiest_expert_parallel_rank_matches_uniform_routing():
    """Under EP each MoE layer waits for the rank whose own experts the step touches most:
    the closed form (a Binomial per rank) against a Monte Carlo of uniform top-k routing."""
    from estimator.routing import slowest_rank_touch

    rng = np.random.default_rng(0)
    # DeepSeek-V3/R1 at EP8; Llama-4 Maverick's top-1 of 128 at EP8; Mixtral's top-2 of 8
    for k, experts, ranks in ((8, 256, 8), (1, 128, 8), (2, 8, 2)):
        for tokens in (1, 2, 4, 16):
            picks = rng.random((2000, tokens, experts)).argsort(-1)[..., :k]
            touched = np.zeros((2000, experts), bool)
            for t in range(tokens):
                np.put_along_axis(touched, picks[:, t], True, axis=1)
            busiest = touched.reshape(2000, ranks, -1).sum(-1).max(-1).mean() * ranks / experts
            got = slowest_rank_touch(k, experts, ranks, tokens)
            assert got == pytest.approx(busiest, rel=0.06)
    # top-1 at one token: one rank streams a whole expert, 8x the mean rank at EP8
    assert slowest_rank_touch(1, 128, 8, 1) == pytest.approx(1 / 16)
    assert slowest_rank_touch(8, 256, 8, 0) == 0.0
    with pytest.raises(ValueError, match="do not divide"):
        slowest_rank_touch(2, 8, 16, 1)
    k, experts, ranks = 8, 256, 8
    b = np.arange(1, 2000)
    share = slowest_rank_touch(k, experts, ranks, b)
    mean = expert_touch(k, experts, b)
    assert np.all(share >= mean - 1e-12) and np.all(share <= 1.0)
    assert share[3] / mean[3] == pytest.approx(1.72, abs=0.02)  # 4 tokens: 1.7x the mean
    assert share[-1] == pytest.approx(1.0, abs=1e-9)  # every expert touched: balanced
    # expert-TP: every rank streams a slice of every touched expert
    assert np.array_equal(slowest_rank_touch(k, experts, 1, b), mean)


def test_expert_parallel_decode_waits_for_its_busiest_rank():
    """Same bytes in all, but at small batch EP8 streams more on its slowest rank than
    expert-TP8 streams on every rank; at large batch (every expert touched) they agree."""
    m, g = get_model("deepseek-r1"), get_gpu("h200")
    tp = Evaluator(m, g, Parallel(tp=8), weights="fp8")
    ep = Evaluator(m, g, Parallel(tp=8, ep=8), weights="fp8")
    tp4, ep4 = tp.decode_step(4, 2048), ep.decode_step(4, 2048)
    assert ep4.expert_memory > 1.5 * tp4.expert_memory
    assert ep.decode_step(4096, 2048).expert_memory == pytest.approx(
        tp.decode_step(4096, 2048).expert_memory, rel=1e-6
    )
    # the estimate says so, with the busiest rank's excess at 1, 8 and 64 tokens a step
    assert any(n.startswith("EP8: each MoE layer waits") and "2.5x" in n for n in ep.notes)
    assert not any(n.startswith("EP") for n in tp.notes)


def test_estimates_say_where_published_runs_measured_them_optimistic():
    """A caveat is said for the stacks whose published runs the physics misses (MLA+MoE under
    SGLang on CDNA3; Gated DeltaNet hybrids under SGLang; vLLM's unfitted front end), and only
    for them."""

    def caveats(model, gpu, engine, gpus=8, weights="fp8"):
        ev = Evaluator(get_model(model), get_gpu(gpu), Parallel(tp=gpus), weights, "fp8", engine)
        return [n for n in ev.notes if n.startswith("measured:")]

    assert "MI300X/MI325X" in caveats("deepseek-r1", "mi300x", "sglang")[0]
    assert "MI300X/MI325X" in caveats("deepseek-r1", "mi325x", "sglang")[0]
    # not MLA's: Qwen3-Coder's block-FP8 experts under SGLang on MI300X ran as slow; BF16
    # Llama-4's did not
    assert "MI300X/MI325X" in caveats("qwen3-coder-480b-a35b", "mi300x", "sglang")[0]
    assert caveats("llama-4-maverick", "mi300x", "sglang", weights="bf16") == []
    # vLLM's MLA+MoE runs on CDNA3 were not measured so; what it is told is its front end's
    vllm = caveats("deepseek-r1", "mi300x", "vllm")
    assert len(vllm) == 1 and "vLLM's own time to a first token" in vllm[0]
    # and on Hopper, that its recent versions decode faster than its fitted host time allows
    hopper = caveats("llama-3.1-8b", "h100", "vllm", gpus=1, weights="bf16")
    assert len(hopper) == 2 and "19-32% faster per token" in hopper[1]
    assert not any("faster per token" in n for n in caveats("llama-3.1-8b", "h100", "sglang", 1))
    # its evidence is 16-bit runs: an FP8 or int4 estimate is not told so
    assert not any("faster per token" in n for n in caveats("llama-3.1-8b", "h100", "vllm", 1))
    # SGLang on Blackwell decoded BF16 and FP4 faster than estimated, FP8 within 10%
    for w in ("fp4", "bf16"):
        b200 = caveats("deepseek-r1", "b200", "sglang", weights=w)
        assert any("conservative for SGLang on Blackwell" in n for n in b200), w
    assert caveats("deepseek-r1", "b200", "sglang") == []  # FP8
    # the H20's small-batch decode (any engine, any model); int4 MoE under vLLM
    assert any("H20" in n for n in caveats("qwen3-8b", "h20", "trtllm", gpus=1, weights="bf16"))
    assert any("4-bit AWQ" in n for n in caveats("deepseek-r1", "h100", "vllm", weights="int4"))
    assert not any("4-bit AWQ" in n for n in caveats("llama-3.1-70b", "h100", "vllm", 4, "int4"))
    assert caveats("deepseek-r1", "mi355x", "sglang") == []  # CDNA4 sits within 10%
    assert caveats("deepseek-r1", "h200", "sglang") == []
    assert caveats("deepseek-r1", "h200", "trtllm") == []  # trtllm-serve's front end is fitted
    assert caveats("llama-3.1-70b", "mi300x", "sglang") == []  # dense GQA: no MLA kernels
    hybrid = caveats("qwen3-next-80b-a3b", "h200", "sglang", gpus=1)
    assert len(hybrid) == 1 and "Gated DeltaNet" in hybrid[0]
    assert not any("Gated DeltaNet" in n for n in caveats("qwen3-next-80b-a3b", "h200", "vllm", 1))


def test_prompt_heavy_moe_estimates_say_their_published_shortfall():
    """A workload's shape has its own caveat: mixture-of-experts runs whose prompts are ten
    times their answers or more made 1.2-2x fewer tokens per second than estimated; said
    for such a workload only, and not for a dense model of the same shape."""

    def said(model, prompt, answer):
        est = estimate_replica(
            get_model(model),
            get_gpu("h100"),
            Parallel(tp=1),
            Workload(batch=8, input_tokens=prompt, output_tokens=answer),
            "fp8",
            "fp8",
        )
        return [n for n in est.notes if "where prompts dwarf answers" in n]

    assert len(said("qwen3-30b-a3b", 5000, 500)) == 1
    assert said("qwen3-30b-a3b", 4999, 500) == []  # under ten times
    assert said("qwen3-30b-a3b", 500, 2000) == []
    assert said("llama-3.1-8b", 5000, 100) == []  # dense
    # not said where no workload is known (the replica's own notes)
    ev = Evaluator(get_model("qwen3-30b-a3b"), get_gpu("h100"), Parallel(tp=1), "fp8")
    assert not any("where prompts dwarf answers" in n for n in ev.notes)
    # the curve of such a workload says it too
    c = curve("qwen3-30b-a3b", "h100", input_tokens=6000, output_tokens=300, users=[1, 2])
    assert sum("where prompts dwarf answers" in n for n in c.notes) == 1


def test_a_dispatch_reaches_each_rank_once():
    """A token goes once to each expert-parallel rank holding one of its top-k experts:
    r x (1 - C(E - E/r, k) / C(E, k)) ranks, its own included."""
    from math import comb

    from estimator.routing import ranks_reached

    # Qwen3-30B-A3B (128 experts, top-8) over 2 ranks: nearly always both, not 8 copies
    assert ranks_reached(8, 128, 2) == pytest.approx(2 * (1 - comb(64, 8) / comb(128, 8)))
    assert ranks_reached(8, 128, 2) == pytest.approx(1.9938, abs=1e-4)
    # DeepSeek-V3 (256, top-8) over 8 ranks: 5.29 ranks, a third less than 8 copies
    assert ranks_reached(8, 256, 8) == pytest.approx(8 * (1 - comb(224, 8) / comb(256, 8)))
    assert ranks_reached(1, 128, 8) == 1.0  # Llama-4 Maverick's top-1: one rank
    assert ranks_reached(8, 128, 1) == 1.0
    for k, e, r in [(2, 8, 4), (4, 16, 8), (8, 64, 4), (6, 64, 16)]:
        assert 1.0 <= ranks_reached(k, e, r) <= min(k, r)
    assert ranks_reached(8, 8, 4) == pytest.approx(4.0)  # every expert: every rank


def test_expert_parallelism_moves_tokens_only_under_attention_dp():
    """EP beside tensor-parallel attention: every rank holds every token, so its collectives
    are the tensor-parallel all-reduces (vLLM dispatches only when data-parallel); under
    attention-DP each MoE layer dispatches and combines by all-to-all instead of the MLP's
    gather and scatter."""
    m, h200 = get_model("deepseek-v3"), get_gpu("h200")
    ev = {
        (ep, adp): Evaluator(m, h200, Parallel(tp=8, ep=ep, attention_dp=adp), weights="fp8")
        for ep in (1, 8)
        for adp in (False, True)
    }
    for b in (1, 64):
        comm = {k: float(e.decode_step(b, 2048).comm) for k, e in ev.items()}
        assert comm[(8, False)] == pytest.approx(comm[(1, False)], rel=1e-12)
        assert comm[(8, True)] != pytest.approx(comm[(1, True)], rel=1e-3)


def test_moe_decode_cheaper_than_dense_of_same_size_at_batch_1(h100):
    moe = get_model("qwen3-30b-a3b")
    dense = get_model("qwen3-32b")
    tm = Evaluator(moe, h100, Parallel()).decode_step(1, 1000).memory
    td = Evaluator(dense, h100, Parallel()).decode_step(1, 1000).memory
    assert tm < td / 4


def test_tp_must_divide_heads(llama70, h100):
    with pytest.raises(SplitError, match="TP must divide the number of attention heads"):
        Evaluator(llama70, h100, Parallel(tp=3))


def test_ep_rules(h100):
    with pytest.raises(SplitError, match="dense"):
        Evaluator(get_model("llama-3.1-8b"), h100, Parallel(tp=2, ep=2))
    with pytest.raises(SplitError, match="divide TP"):
        Evaluator(get_model("mixtral-8x7b"), h100, Parallel(tp=2, ep=4))
    with pytest.raises(SplitError, match="experts"):
        Evaluator(get_model("jamba-1.5-mini"), h100, Parallel(tp=32, ep=32))  # 16 experts
    Evaluator(get_model("qwen3-30b-a3b"), h100, Parallel(tp=4, ep=4))


def test_kv_heads_replicate_beyond_tp(llama70, h100):
    ev8 = Evaluator(llama70, h100, Parallel(tp=8))
    ev16 = Evaluator(llama70, h100, Parallel(tp=16))
    assert ev16.kv_bytes_per_gpu(1, 1000) == pytest.approx(ev8.kv_bytes_per_gpu(1, 1000))
    assert any("replicate" in n for n in ev16.notes)


def test_mla_latent_replicates_under_tp_unless_attention_dp(h100):
    m = get_model("deepseek-v3")
    h200 = get_gpu("h200")
    tp8 = Evaluator(m, h200, Parallel(tp=8), weights="fp8")
    dp8 = Evaluator(m, h200, Parallel(tp=8, attention_dp=True), weights="fp8")
    one = m.kv_bytes_per_sequence(4096, 2.0)
    assert float(tp8.kv_bytes_per_gpu(1, 4096)) == pytest.approx(float(one))
    assert float(dp8.kv_bytes_per_gpu(8, 4096)) == pytest.approx(float(one))
    assert dp8.max_batch(4096) > tp8.max_batch(4096)


def test_fp8_on_a100_saves_memory_but_computes_bf16():
    a100 = get_gpu("a100-80gb-sxm")
    m = get_model("llama-3.1-8b")
    fp8 = Evaluator(m, a100, Parallel(), weights="fp8")
    bf16 = Evaluator(m, a100, Parallel(), weights="bf16")
    assert fp8.precision == "bf16"
    assert any("not native" in n for n in fp8.notes)
    assert fp8.weight_bytes < 0.6 * bf16.weight_bytes
    assert fp8.decode_step(1, 1000).memory < bf16.decode_step(1, 1000).memory


def test_fp8_on_h100_computes_fp8(h100):
    assert Evaluator(get_model("llama-3.1-8b"), h100, Parallel(), weights="fp8").precision == "fp8"


def test_tp_over_pcie_costs_more_than_nvlink(llama70):
    pcie = Evaluator(llama70, get_gpu("h100-pcie"), Parallel(tp=4), weights="fp8").decode_step(
        8, 2000
    )
    nvl = Evaluator(llama70, get_gpu("h100-sxm"), Parallel(tp=4), weights="fp8").decode_step(
        8, 2000
    )
    assert pcie.comm > nvl.comm


def test_group_beyond_domain_pays_the_nic(llama70, h100):
    in_box = Evaluator(llama70, h100, Parallel(tp=8)).prefill(1, 4000)
    across = Evaluator(llama70, h100, Parallel(tp=16)).prefill(1, 4000)
    assert across.comm > in_box.comm


def test_collectives_are_alpha_beta_on_the_link_the_group_crosses(h100):
    """Ring all-reduce inside the NVLink domain, 2(n−1)α + 2(n−1)/n·M/B + the collective's
    fixed cost; across two 8-GPU nodes, reduce-scatter inside each, all-reduce of 1/8 of
    the data over the NIC, all-gather inside (two fixed costs): hand-computed from the
    H100 preset's links (450 GB/s NVLink at 0.6 us a hop, 50 GB/s NIC at 8 us)."""
    from estimator import comm
    from estimator.efficiency import efficiency_for, link_defaults

    eff = efficiency_for("hopper")
    fab = comm.Fabric.of(h100, eff)
    a_nv = h100.scale_up.latency_us * 1e-6 * eff.comm_latency_scale
    b_nv = h100.scale_up.bandwidth_gb_s * 1e9
    a_nic = link_defaults().nic_latency_us * 1e-6 * eff.comm_latency_scale
    b_nic = h100.scale_out_gb_s * 1e9
    base, msg = eff.collective_base_us * 1e-6, 64e6
    inside = base + 2 * 7 * a_nv + 2 * 7 / 8 * msg / b_nv
    across = 2 * base + (2 * 7 * a_nv + 2 * 7 / 8 * msg / b_nv)
    across += 2 * 1 * a_nic + 2 * 1 / 2 * (msg / 8) / b_nic
    assert comm.allreduce(fab, 8, msg) == pytest.approx(inside, rel=1e-12)
    assert comm.allreduce(fab, 16, msg) == pytest.approx(across, rel=1e-12)
    assert comm.alltoall(fab, 4, msg) == pytest.approx(base + 3 * a_nv + 3 / 4 * msg / b_nv)
    assert comm.p2p(fab, 16, msg) == pytest.approx(base + a_nic + msg / b_nic)
    lone = comm.Fabric.of(get_gpu("rtx-4090"), eff)  # no NIC in its preset
    with pytest.raises(SplitError, match="rtx-4090 has no scale-out network"):
        comm.p2p(lone, 16, msg)


def test_no_scale_out_means_replica_must_fit_the_host():
    g = get_gpu("rtx-4090")
    with pytest.raises(SplitError, match="scale-out"):
        Evaluator(get_model("llama-3.1-70b"), g, Parallel(tp=16), weights="int4")


def test_pipeline_parallel_does_not_speed_up_single_stream(llama70, h100):
    tp2 = Evaluator(llama70, h100, Parallel(tp=2), weights="fp8").decode_step(1, 1000).total
    pp2 = Evaluator(llama70, h100, Parallel(pp=2), weights="fp8").decode_step(1, 1000).total
    assert pp2 > tp2


def test_pipeline_decode_runs_at_its_slowest_stage(llama70, h100):
    """Llama-3.3-70B in FP8 over 8 pipeline stages: each holds 80/8 = 10 layers of 855.6 M
    weights (q 8192x8192, k and v 8192x1024, o 8192x8192, MLP 3x8192x28672: 1 byte each) and
    the last also the 16-bit lm_head (128,256 x 8192 x 2 B = 2.10 GB, about 2.5 layers). At
    batch 1 the micro-batch crosses the stages in turn at the last stage's pace: 8 x (10
    layers + lm_head) of weight bytes a token, 21% more than one GPU streaming every weight
    once."""
    layer = 8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    head = 128256 * 8192 * 2.0
    expected = 8 * (10 * layer + head) / (80 * layer + head)
    assert expected == pytest.approx(1.2085, abs=1e-3)
    one = Evaluator(llama70, h100, Parallel(), weights="fp8").decode_step(1, 100)
    pp8 = Evaluator(llama70, h100, Parallel(pp=8), weights="fp8").decode_step(1, 100)
    dense = lambda st: float(st.memory - st.attn_memory)  # noqa: E731 (weights + activations)
    assert dense(pp8) / dense(one) == pytest.approx(expected, rel=0.005)


def test_lm_head_computes_in_16_bit_under_quantised_weights(h100):
    """FP8 Llama-3.1-8B decoding 512 sequences: the layers' GEMMs run at the FP8 peak, the
    16-bit lm_head's (2 x 128,256 x 4096 FLOPs a token) at the BF16 peak (989.4 TFLOPS, half
    of FP8's), attention at BF16 too."""
    m = get_model("llama-3.1-8b")
    eff = efficiency_for(efficiency_key(h100), "fp8")
    ev = Evaluator(m, h100, Parallel(), weights="fp8")
    b, ctx = 512, 1000
    st = ev.decode_step(b, ctx)
    head = 2 * 128256 * 4096 * b
    layers = 2 * (m.matmul_params_per_token - 128256 * 4096) * b
    attn = 32 * 2 * 32 * (128 + 128) * ctx * b  # QK and PV over the context, every head
    t = layers / (1978.9e12 * eff.compute) + (head + attn) / (989.4e12 * eff.compute)
    assert float(st.compute) == pytest.approx(t, rel=1e-3)


def test_max_batch_is_the_fit_boundary(llama70, h100):
    wl_ctx = 2400
    ev = Evaluator(llama70, h100, Parallel(tp=2), weights="fp8")
    mb = int(ev.max_batch(wl_ctx))
    ok = estimate_replica(
        llama70,
        h100,
        Parallel(tp=2),
        Workload(input_tokens=2000, output_tokens=400, batch=mb),
        weights="fp8",
    )
    bad = estimate_replica(
        llama70,
        h100,
        Parallel(tp=2),
        Workload(input_tokens=2000, output_tokens=400, batch=mb + 1),
        weights="fp8",
    )
    assert ok.fits and not bad.fits and bad.shortfall_gb > 0


def test_hybrid_mamba_max_batch_far_exceeds_dense_at_long_context(h100):
    hybrid = Evaluator(get_model("nemotron-h-8b"), h100, Parallel())
    dense = Evaluator(get_model("llama-3.1-8b"), h100, Parallel())
    assert hybrid.max_batch(65536) > 5 * dense.max_batch(65536)


def test_unknown_formats_are_clear_errors(llama70, h100):
    with pytest.raises(EstimatorError, match="weight format"):
        Evaluator(llama70, h100, Parallel(), weights="fp3")
    with pytest.raises(EstimatorError, match="engine"):
        Evaluator(llama70, h100, Parallel(), engine="ollama")


@pytest.mark.parametrize(
    "name",
    [
        "llama-3.1-8b",
        "mixtral-8x7b",
        "deepseek-v3",
        "gemma-3-27b",
        "jamba-1.5-mini",
        "gpt-oss-120b",
        "llama-4-scout",
        "glm-4.5-air",
    ],
)
def test_every_family_estimates(name):
    m = get_model(name)
    g = get_gpu("h200")
    tp = 8 if m.total_params > 100e9 else 1
    e = estimate_replica(
        m,
        g,
        Parallel(tp=tp),
        Workload(input_tokens=1000, output_tokens=200, batch=4),
        weights="fp8",
    )
    assert e.fits and 0 < e.tpot_s < 1 and 0 < e.ttft_s < 10
    assert e.bottleneck in {"memory", "compute", "interconnect"}


def test_every_llm_estimate_carries_its_error_band():
    import estimator

    e = estimator.estimate("llama-3.1-70b", "h100-sxm", gpus=2, weights="fp8", batch=16,
                           input_tokens=2000, output_tokens=300)  # fmt: skip
    b = e.to_dict()["bands"]
    for k in ("ttft_s", "tpot_s", "per_user_tokens_per_s", "output_tokens_per_s"):
        assert b[k]["p10"] <= b[k]["p50"] <= b[k]["p90"]
    assert b["per_user_tokens_per_s"]["p10"] == pytest.approx(1 / b["tpot_s"]["p90"])
    assert b["ttft_s"]["p10"] < e.ttft_s < b["ttft_s"]["p90"] * 1.01
    assert "leave-one-source-out" in b["basis"]


def test_compute_factor_is_per_precision():
    """Blackwell's compute factor was fitted on FP4 rows; FP8 on a B200 takes the factor of
    the families fitted at FP8, so FP8 prefill keeps most of the datasheet's 2.27x over an
    H100 (2,250 vs 989 dense TFLOPS) instead of ~1.3x."""
    from estimator.efficiency import calibration, efficiency_for

    fams = calibration()["families"]
    assert fams["blackwell"]["compute_precision"] == "fp4"
    assert efficiency_for("blackwell", "fp4").compute == fams["blackwell"]["compute"]
    fp8 = [f for f in fams.values() if f.get("compute_precision") == "fp8"]
    expect = sum(f["compute"] * f["rows"] for f in fp8) / sum(f["rows"] for f in fp8)
    assert efficiency_for("blackwell", "fp8").compute == pytest.approx(expect)

    def prefill(gpu):
        return estimator.estimate("llama-3.1-70b", gpu, weights="fp8", batch=1,
                                  input_tokens=8000, output_tokens=10).prefill_s  # fmt: skip

    import estimator

    assert prefill("h100-sxm") / prefill("b200") > 1.8


def test_block_fp8_checkpoints_shard_only_along_whole_blocks():
    """DeepSeek-V3 ships FP8 weights with 128x128 scale blocks: TP16 shards its 2,048-wide
    experts into 128 (fine), TP32 into 64 (vLLM refuses). In BF16 any split loads."""
    import estimator
    from estimator import SplitError

    estimator.estimate("deepseek-v3", "h200", gpus=16, batch=1)  # fp8, implied by the config
    with pytest.raises(SplitError, match="128-wide quantisation blocks"):
        estimator.estimate("deepseek-v3", "h200", gpus=32, batch=1)
    estimator.estimate("deepseek-v3", "h200", gpus=32, batch=1, weights="bf16")


def test_engine_sequence_cap_bounds_batch_max_and_names_its_refusal():
    """Memory holds 3,574 sequences of Qwen3-30B-A3B on 8 RTX PRO 6000 (TP8, FP4, FP8 KV,
    2,000 tokens each) but TensorRT-LLM runs at most max_batch_size 2,048 at once: 'max' is
    2,048 and fits; 3,000 is refused by that rule, not by memory, and the advice says so."""
    from estimator.api import estimate

    kw = dict(tp=8, weights="fp4", kv="fp8", engine="trtllm", input_tokens=1000)
    kw["output_tokens"] = 1000
    top = estimate("qwen3-30b-a3b", "rtx-pro-6000", 8, batch="max", **kw)
    assert top.max_batch > 2048 and top.workload["batch"] == 2048 and top.fits
    over = estimate("qwen3-30b-a3b", "rtx-pro-6000", 8, batch=3000, **kw)
    assert not over.fits and over.shortfall_gb == 0.0
    assert "max_num_seqs 2048" in over.refused_by
    assert over.advice and "raise --max-num-seqs to 3000" in over.advice[0]


def test_a_request_over_max_model_len_is_advised_on_that_limit():
    """Refused by max_model_len (not by memory or the sequence cap): the advice names it."""
    from estimator.api import estimate
    from estimator.engines import configure

    eng = configure("vllm", max_model_len=1000)
    e = estimate(
        "llama-3.1-8b", "h100-sxm", batch=4, input_tokens=2000, output_tokens=100, engine=eng
    )
    assert not e.fits and "max_model_len 1000" in e.refused_by
    assert e.advice and "--max-model-len 2100" in e.advice[0]


def test_a_gpu_family_no_published_run_calibrates_says_so():
    """A family with no calibration entry of its own runs at the defaults, and the estimate
    says which factors those are; a calibrated family (Hopper: bandwidth from kernel data,
    compute fitted) and an explicit Efficiency carry no such note. The planner notes it for
    the GPU types its plans run on."""
    from estimator import Evaluator, Parallel, get_gpu, get_model
    from estimator.efficiency import calibration, calibration_note, efficiency_for

    d = calibration()["defaults"]
    note = calibration_note("no-such-family")
    assert "bandwidth or compute" in note
    assert f"{d['memory']:.0%} of peak bandwidth, {d['compute']:.0%} of peak BF16" in note
    assert "the defaults fitted on other GPUs" in note
    assert calibration_note("hopper") is None
    ampere = calibration_note("ampere")  # bandwidth from kernel data; its rows, memory-bound
    assert ampere is not None and "the ampere family's own for its compute (" in ampere
    # its compute: its GEMM kernels' measured rate at the share the fitted GPUs reach of theirs
    share = efficiency_for("ampere", "bf16").compute
    assert f"{share:.0%} of peak BF16 compute on its reference boards, each board at" in ampere
    model, h100 = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    other = h100.model_copy(update={"family": "no-such-family"})
    notes = Evaluator(model, other, Parallel()).notes
    assert any(n.startswith("h100-sxm: the calibration has no factor") for n in notes)
    assert not any("no factor" in n for n in Evaluator(model, h100, Parallel()).notes)
    own = efficiency_for("hopper", "bf16")
    with_own = Evaluator(model, other, Parallel(), efficiency=own)
    assert not any("no factor" in n for n in with_own.notes)
