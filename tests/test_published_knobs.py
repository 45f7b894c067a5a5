"""A published run is scored under the engine configuration it states (calibration.knobs)."""

import pytest

from calibration import shipped_files
from calibration.cases import load_rows, prepare
from calibration.knobs import published_knobs
from estimator.engines import ENGINES


def test_each_engine_reads_its_own_flags():
    sglang = (
        "sglang.launch_server --tp 8 --mem-fraction-static 0.85 --max-running-requests 256 "
        "--chunked-prefill-size 16384 --disable-radix-cache"
    )
    assert published_knobs(sglang, "sglang") == {
        "gpu_memory_utilization": 0.85,
        "max_num_seqs": 256,
        "max_num_batched_tokens": 16384,
    }
    vllm = "vllm serve M --gpu-memory-utilization=0.91 --max-num-seqs 512 "
    vllm += "--max-num-batched-tokens 1024"
    assert published_knobs(vllm, "vllm") == {
        "gpu_memory_utilization": 0.91,
        "max_num_seqs": 512,
        "max_num_batched_tokens": 1024,
    }
    trt = "extra options: kv_cache_config dtype fp8, free_gpu_memory_fraction 0.75, ..."
    assert published_knobs(trt, "trtllm") == {"gpu_memory_utilization": 0.75}
    # another engine's spelling is not this engine's setting
    assert published_knobs(sglang, "vllm") == {}
    # a range the notes quote is no one setting
    assert published_knobs("kv_cache_free_gpu_mem_fraction 0.90-0.95", "trtllm") == {}
    # SGLang's prefill token cap under either of its names
    both = "--chunked-prefill-size/--max-prefill-tokens 196608"
    assert published_knobs(both, "sglang") == {"max_num_batched_tokens": 196608}


def test_a_row_is_scored_under_its_published_memory_fraction():
    """DeepSeek-R1 FP8 on four B200s ran with SGLang at --mem-fraction-static 0.95: at the
    engine's default fraction it would not fit, as published it does, and its KV budget
    follows the fraction."""
    rows = [
        r
        for r in load_rows(shipped_files())
        if "--mem-fraction-static 0.95" in r["notes"] and r["metric"] == "tpot_ms"
    ]
    assert rows
    row = rows[0]
    case = prepare(0, row)
    assert case.ev.engine.fraction == pytest.approx(0.95)
    assert case.ev.engine.max_num_seqs == published_knobs(row["notes"], "sglang")["max_num_seqs"]
    assert any("engine set as published" in a for a in case.assumptions)
    default = prepare(0, {**row, "notes": row["notes"].replace("--mem-fraction-static 0.95", "")})
    assert ENGINES["sglang"].fraction < 0.95
    assert "does not fit" in getattr(default, "reason", "")
