"""Builds calibration/data/encoder_engine_pairs.csv from nonllm_encoder_engines.csv: each
published encoder run under eager PyTorch beside the same model, GPU, precision, batch and
length under a fused engine, from the four publishers that measure both at one precision:

- FasterTransformer's BERT-base tables (A100, A10, T4, V100; FP16, FP32, TF32): TorchScript
  against FasterTransformer, padded (the remove-padding variant times fewer tokens);
- AITemplate's BERT-base table (A100-40GB, FP16): PyTorch 1.12 eager against AITemplate;
- transformer-deploy (T4, RTX 3090; FP16): PyTorch eager against TensorRT;
- infinity's bge-large-en-v1.5 server benchmark (L4): sentence-transformers FP16 against TEI.

optimum-benchmark's fast-mteb report compares PyTorch FP32 with ONNX Runtime FP16 (the
precision differs with the engine), so it is left out. Run from the repository root:

    python validation/candidates/encoder_engine_pairs.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
OUT = HERE.parent.parent / "calibration" / "data" / "encoder_engine_pairs.csv"

EAGER = (
    r"^PyTorch TorchScript|^PyTorch 1\.12 eager|^PyTorch eager \(Hugging Face transformers\) FP16"
    r"|^sentence-transformers \(PyTorch eager, fp16\)"
)
FUSED = r"^FasterTransformer \(PyTorch custom extension|^AITemplate|^TensorRT 8|^TEI "
# encoder layers of each model (their configs: BERT-base and RoBERTa-base 12, BERT-large,
# RoBERTa-large and bge-large 24, MiniLM-L6 and DistilBERT 6)
LAYERS = (
    (r"MiniLM-L6|distilbert", 6),
    (r"roberta-large|bge-large|BERT-large", 24),
    (r"BERT-base|bert-base|roberta-base", 12),
)
SHAPE = r"batch (\d+) x seq(?:_len)? (\d+)"


def layers(model: str) -> int:
    return next(n for pattern, n in LAYERS if re.search(pattern, model, re.I))


def batch_ms(r) -> float:
    """Milliseconds for the row's batch (infinity: one request of 256 sentences)."""
    v = float(r.value)
    if r.metric.startswith("latency_ms"):
        return v
    if r.metric.startswith("sequences_per_s"):
        return int(r.batch) / v * 1e3
    return 1e3 / v  # requests_per_s


def shape(r) -> tuple[int, int]:
    m = re.search(SHAPE, r.workload)
    return (int(m[1]), int(m[2])) if m else (256, 449)  # infinity: 256 x ~449 tokens


def main() -> None:
    d = pd.read_csv(HERE / "nonllm_encoder_engines.csv", dtype=str)
    d["group"] = d.notes.str.extract(r"PAIR-GROUP ([^ ;,]+)")[0]
    d = d[d.group.notna() & (d.value != "OOM") & ~d.metric.str.contains("per_example")]
    rows = []
    for group, g in d.groupby("group", sort=True):
        eager, fused = g[g.framework.str.contains(EAGER)], g[g.framework.str.contains(FUSED)]
        if len(eager) != 1 or len(fused) != 1:
            continue
        e, f = eager.iloc[0], fused.iloc[0]
        batch, tokens = shape(e)
        rows.append(
            {
                "source": e.source,
                "group": group,
                "model": e.model,
                "layers": layers(e.model),
                "gpu": e.gpu,
                "precision": e.precision.split(" ")[0],
                "batch": batch,
                "tokens": tokens,
                "eager_engine": e.framework,
                "eager_ms": round(batch_ms(e), 4),
                "fused_engine": f.framework,
                "fused_ms": round(batch_ms(f), 4),
            }
        )
    pd.DataFrame(rows).to_csv(OUT, index=False)
    print(f"{len(rows)} pairs -> {OUT}")


if __name__ == "__main__":
    main()
