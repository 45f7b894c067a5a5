"""The encoder estimate beside published BERT-base runs under eager PyTorch and under fused
engines (`nonllm_encoder_engines.csv`): AITemplate's A100-40GB table (PyTorch 1.12 eager
against AITemplate, FP16, batch 1-256 at 64/128/384 tokens) and FasterTransformer's A100
FP16 table (TorchScript against FasterTransformer, padded, batch 1/8/32 at 32/128/384).

The model is bert-base-uncased from its published config (huggingface.co/google-bert/
bert-base-uncased config.json: 12 layers, hidden 768, 12 heads, FFN 3072, vocabulary
30,522, 512 positions, 2 token types), read as a local config the way a user would give one.
Prints measured / predicted time per batch by source and engine class. Run from the
repository root:

    python validation/candidates/encoder_engines.py
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pandas as pd

from estimator import Parallel, get_gpu
from estimator.families import get_family_model
from estimator.families.encoder import estimate_encoder

HERE = Path(__file__).parent
BERT_BASE = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}
# the A100 of each table: AITemplate names the 40GB part; FasterTransformer's memory clock
# (1593 MHz) is the 80GB part's
TABLES = {
    "facebookincubator/AITemplate": ("a100-40gb-sxm", r"batch (\d+) x seq (\d+)", "eager"),
    "NVIDIA/FasterTransformer": ("a100-80gb-sxm", r"batch (\d+) x seq_len (\d+)", "TorchScript"),
}


def rows(model) -> pd.DataFrame:
    data = pd.read_csv(HERE / "nonllm_encoder_engines.csv")
    out = []
    for prefix, (gpu, shape, eager) in TABLES.items():
        mine = data[data.source.str.startswith(prefix) & (data.precision.str.lower() == "fp16")]
        for _, r in mine.iterrows():
            m = re.search(shape, r.workload)
            if not m or r.value == "OOM" or "EFF" in r.framework or "A100" not in r.gpu:
                continue
            batch, tokens, value = int(m[1]), int(m[2]), float(r.value)
            ms = value if "latency" in r.metric else batch / value * 1e3
            est = estimate_encoder(model, get_gpu(gpu), Parallel(), "fp16", batch, tokens)
            engine = "eager" if eager in r.framework else "fused"
            pred = est.metrics["s_per_batch"] * 1e3
            out.append((prefix.split("/")[1], engine, batch, tokens, ms, pred))
    cols = ["source", "engine", "batch", "tokens", "measured_ms", "predicted_ms"]
    return pd.DataFrame(out, columns=cols)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bert-base-uncased"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(BERT_BASE))
        d = rows(get_family_model(str(folder)))
    d["ratio"] = d.measured_ms / d.predicted_ms
    pd.set_option("display.width", 200)
    print(d.round(3).to_string(index=False))
    small = d.batch * d.tokens <= 2048
    print("\nmeasured / predicted, median:")
    print(d.groupby(["source", "engine", small.rename("batch x tokens <= 2048")]).ratio.median())


if __name__ == "__main__":
    main()
