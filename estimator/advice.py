"""What would fit: the nearest configuration to one that does not."""

from __future__ import annotations

from .errors import EstimatorError
from .hardware import Accelerator
from .llm import Evaluator, Workload
from .model import LanguageModel
from .parallel import Parallel

_SMALLER = {"bf16": ["fp8", "int4"], "fp16": ["fp8", "int4"], "fp8": ["int4"], "int8": ["int4"]}


def nearest_fit(
    model: LanguageModel,
    gpu: Accelerator,
    par: Parallel,
    wl: Workload,
    weights: str,
    kv: str,
    engine: str,
) -> list[str]:
    """Short suggestions, nearest first: a smaller batch, then more GPUs in the replica,
    then a smaller KV or weight format."""
    out: list[str] = []
    ctx = wl.input_tokens + wl.output_tokens
    ev = Evaluator(model, gpu, par, weights, kv, engine)
    mb = int(ev.max_batch(ctx))
    if mb >= 1:
        limit = ev.engine.max_model_len
        if limit and ctx > limit:  # the engine refuses the request, not the batch
            out.append(f"--max-model-len {ctx} or more holds {ctx} tokens per request")
        elif wl.batch <= mb and wl.batch > ev.max_seqs:  # memory holds it: the sequence cap
            ranks = par.tp if par.attention_dp else 1  # attention-DP: a cap per rank
            out.append(
                f"batch {ev.max_seqs} runs at once; memory holds {mb}: raise --max-num-seqs "
                f"to {-(-wl.batch // ranks)}"
            )
        else:
            out.append(f"batch {min(mb, ev.max_seqs)} fits at {ctx} tokens per sequence")
        return out
    for tp in (2, 4, 8, 16, 32, 64):
        if tp <= par.tp:
            continue
        try:
            e2 = Evaluator(
                model, gpu, Parallel(tp=tp, pp=par.pp, ep=min(par.ep, tp)), weights, kv, engine
            )
        except EstimatorError:
            continue
        b = int(e2.max_batch(ctx))
        if b >= wl.batch:
            out.append(
                f"TP={tp} ({tp * par.pp} GPUs per replica) fits batch {wl.batch} (up to {b})"
            )
            break
    if kv in ("bf16", "fp16"):
        b = int(Evaluator(model, gpu, par, weights, "fp8", engine).max_batch(ctx))
        if b >= wl.batch:
            out.append(f"--kv fp8 fits batch {wl.batch} (up to {b})")
    for w in _SMALLER.get(weights, []):
        b = int(Evaluator(model, gpu, par, w, kv, engine).max_batch(ctx))
        if b >= wl.batch:
            out.append(f"--weights {w} fits batch {wl.batch} (up to {b})")
            break
    return out
