"""How much of a GPU's tensor peak an MoE layer's routed experts reach, beside its dense GEMMs:
read off AIConfigurator's measured kernel tables (NVIDIA's aiconfigurator-core 0.12.0 on
PyPI, Apache-2.0; github:ai-dynamo/aiconfigurator), TensorRT-LLM 1.3.0rc20's MoE and GEMM
timings on H100, H200, B200 and GB200, for the catalogue's expert shapes.

Writes validation/candidates/moe_kernel_shares.csv. Not a project dependency: run it as

    python -m venv /tmp/aic && /tmp/aic/bin/pip install aiconfigurator-core==0.12.0 pyarrow
    /tmp/aic/bin/python validation/candidates/moe_kernel_shares.py \
        /tmp/aic/lib/python3.11/site-packages
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pandas as pd

# dense tensor peaks, TFLOPS, as the planner's presets list them (presets/gpus/nvidia.yaml)
PEAK = {
    "h100_sxm": {"bfloat16": 989.4, "fp8": 1978.9, "fp8_block": 1978.9},
    "h200_sxm": {"bfloat16": 989.4, "fp8": 1978.9, "fp8_block": 1978.9},
    "b200_sxm": {"bfloat16": 2250, "fp8": 4500, "fp8_block": 4500, "nvfp4": 9000},
    "gb200": {"bfloat16": 2500, "fp8": 5000, "fp8_block": 5000, "nvfp4": 10000},
}
# (hidden, expert width, top-k, experts) -> the catalogue model with that expert shape
SHAPES = {
    (2048, 768, 8, 128): "Qwen3-30B-A3B",
    (4096, 1536, 8, 128): "Qwen3-235B-A22B",
    (7168, 2048, 8, 256): "DeepSeek-V3/R1",
    (4096, 14336, 2, 8): "Mixtral-8x7B",
    (2880, 2880, 4, 128): "gpt-oss-120b",
}
VERSION = "1.3.0rc20"
TOKENS = (1024, 4096, 8192, 16384)


def rows(site: Path):
    data = site / "aiconfigurator_core" / "systems" / "data"
    for dev, peaks in PEAK.items():
        gemm_file = data / dev / "gemm" / "trtllm" / VERSION / "gemm_perf.parquet"
        moe_file = data / dev / "moe" / "trtllm" / VERSION / "moe_perf.parquet"
        g, m = pd.read_parquet(gemm_file), pd.read_parquet(moe_file)
        for dtype, peak in peaks.items():
            # the dense reference: the median share of large GEMMs (M 4k-16k, N and K >= 2k)
            big = g.m.between(4096, 16384) & (g.n >= 2048) & (g.k >= 2048)
            x = g[(g.gemm_dtype == dtype) & big]
            if not len(x):
                continue
            dense = float((2 * x.m * x.n * x.k / (x.latency * 1e-3) / (peak * 1e12)).median())
            for (h, w, k, e), name in SHAPES.items():
                y = m[
                    (m.moe_dtype == dtype)
                    & (m.hidden_size == h)
                    & (m.inter_size == w)
                    & (m.topk == k)
                    & (m.num_experts == e)
                    & (m.moe_tp_size == 1)
                    & (m.moe_ep_size == 1)
                    & (m.distribution == "balanced")
                    & m.num_tokens.isin(TOKENS)
                ]
                for t, yy in y.groupby("num_tokens"):
                    best = yy.loc[yy.latency.idxmin()]  # the fastest kernel the table has
                    flops = t * k * 6 * h * w  # gated experts: gate, up and down GEMMs
                    share = flops / (best.latency * 1e-3) / (peak * 1e12)
                    yield {
                        "source": f"pypi:aiconfigurator-core 0.12.0 aiconfigurator_core/systems/"
                        f"data/{dev}/moe/trtllm/{VERSION}/moe_perf.parquet (dense reference: "
                        f"{dev}/gemm/trtllm/{VERSION}/gemm_perf.parquet)",
                        "gpu": dev,
                        "framework": f"TensorRT-LLM {VERSION}",
                        "dtype": dtype,
                        "model_shape": name,
                        "hidden": h,
                        "expert_width": w,
                        "top_k": k,
                        "experts": e,
                        "tokens": int(t),
                        "tokens_per_expert": round(t * k / e, 1),
                        "kernel": best.kernel_source,
                        "latency_ms": round(float(best.latency), 4),
                        "share_of_peak": round(share, 3),
                        "dense_gemm_share": round(dense, 3),
                        "ratio_to_dense": round(share / dense, 2),
                    }


if __name__ == "__main__":
    out = list(rows(Path(sys.argv[1])))
    path = Path(__file__).with_suffix(".csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    print(f"{len(out)} rows -> {path}")
