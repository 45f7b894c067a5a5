"""Validation of the non-LLM families against published measurements.

``validation/nonllm_measured_public.csv`` describes each measurement in prose;
``validation/nonllm_cases.csv`` adds, per usable row, the machine-readable conditions (preset,
GPU preset, weights, batch, resolution, steps, ...) and the assumptions made. Rows not listed
there are reported as skipped with the reason recorded in the README."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimator import EstimatorError, Parallel, get_gpu
from estimator.families import FamilyOptions, family_of, get_family_model

from . import shipped_dir


@dataclass
class FamilyRow:
    row: int
    family: str
    model: str
    gpu: str
    metric: str
    measured: float
    predicted: float | None
    assumptions: str
    status: str = "evaluated"

    @property
    def error_pct(self) -> float | None:
        if self.predicted is None:
            return None
        return 100.0 * (self.predicted - self.measured) / self.measured


def _int(v: str) -> int | None:
    return int(v) if v not in ("", None) else None


# published metric -> (the estimate's metric, whether it scales with the GPUs: the rows run
# one replica per GPU)
METRICS = {
    "images_per_s": ("images_per_s", True),
    "audio_s_per_s": ("audio_s_per_s", True),
    "sentences_per_s": ("docs_per_s", True),
    "docs_per_s": ("docs_per_s", True),
    "rtf": ("rtf", False),
    "s_per_image": ("s_per_image", False),
    "s_per_video": ("s_per_video", False),
    "latency_ms_per_chunk": ("latency_ms", False),
}


def options(case: dict) -> FamilyOptions:
    """A row's machine-readable conditions as the estimator's family options."""
    res = _int(case.get("resolution", ""))
    return FamilyOptions(
        batch=int(case["batch"]),
        input_tokens=_int(case.get("input_tokens", "")),
        audio_seconds=float(case.get("audio_seconds") or 30.0),
        beam=int(case.get("beam") or 1),
        resolution=(res, res) if res else None,
        frames=_int(case.get("frames", "")),
        steps=_int(case.get("steps", "")),
        guidance=case.get("guidance") == "true",
        cameras=int(case.get("cameras") or 1),
    )


def predict(case: dict) -> tuple[str, float]:
    model = get_family_model(case["preset"])
    fam = family_of(model)
    if fam is None or fam.estimate is None:
        raise EstimatorError(f"no validation path for {model.family}")
    e = fam.estimate(model, get_gpu(case["gpu_preset"]), Parallel(), case["weights"], options(case))
    metric, m = case["metric"], e.metrics
    if metric == "steps_per_s":
        return e.family, int(case["steps"]) / m["denoiser_s"] if m["denoiser_s"] else 0.0
    if metric == "peak_memory_gb":
        return e.family, e.memory_gb.total
    key, per_gpu = METRICS[metric]
    return e.family, int(case["n_gpus"]) * m.get(key, 0.0) if per_gpu else m[key]


def run_extra(path: Path | None = None) -> list[FamilyRow]:
    """Rows that carry their machine-readable conditions themselves
    (``validation/nonllm_measured_extra.csv``), numbered -1, -2, ... in reports."""
    p = path or shipped_dir() / "nonllm_measured_extra.csv"
    if not p.is_file():
        return []
    out = []
    for i, c in enumerate(csv.DictReader(open(p))):
        try:
            fam, pred = predict(c)
            out.append(
                FamilyRow(
                    -1 - i,
                    fam,
                    c["model"],
                    c["gpu"],
                    c["metric"],
                    float(c["value"]),
                    float(pred),
                    c.get("assumptions", ""),
                )
            )
        except (EstimatorError, KeyError, ValueError, TypeError) as e:
            out.append(
                FamilyRow(
                    -1 - i,
                    c.get("model_type", ""),
                    c["model"],
                    c["gpu"],
                    c["metric"],
                    float(c.get("value") or "nan"),
                    None,
                    c.get("assumptions", ""),
                    f"skipped: {e}",
                )
            )
    return out


def run(cases_path: Path | None = None, public_path: Path | None = None) -> list[FamilyRow]:
    cases = list(csv.DictReader(open(cases_path or shipped_dir() / "nonllm_cases.csv")))
    public = list(csv.DictReader(open(public_path or shipped_dir() / "nonllm_measured_public.csv")))
    covered = {int(c["row"]) for c in cases}
    out: list[FamilyRow] = []
    for c in cases:
        src = public[int(c["row"])]
        try:
            fam, pred = predict(c)
            out.append(
                FamilyRow(
                    int(c["row"]),
                    fam,
                    src["model"],
                    src["gpu"],
                    c["metric"],
                    float(c["value"]),
                    float(pred),
                    c["assumptions"],
                )
            )
        except EstimatorError as e:
            out.append(
                FamilyRow(
                    int(c["row"]),
                    src["model_type"],
                    src["model"],
                    src["gpu"],
                    c["metric"],
                    float(c["value"]),
                    None,
                    c["assumptions"],
                    f"skipped: {e}",
                )
            )
    for i, src in enumerate(public):
        if i not in covered:
            out.append(
                FamilyRow(
                    i,
                    src["model_type"],
                    src["model"],
                    src["gpu"],
                    src["metric"],
                    float(src["value"]),
                    None,
                    "",
                    "skipped: no preset for the model or GPU, or a metric we do "
                    "not predict (see validation/README.md)",
                )
            )
    return sorted(out, key=lambda r: r.row) + run_extra()


def summary(rows: list[FamilyRow]) -> dict:
    fams = sorted({r.family for r in rows if r.predicted is not None})
    out = {}
    for f in fams:
        e = np.array([r.error_pct for r in rows if r.family == f and r.predicted is not None])
        out[f] = {
            "n": int(len(e)),
            "median_abs_pct": float(np.median(np.abs(e))),
            "p90_abs_pct": float(np.percentile(np.abs(e), 90)),
            "bias_pct": float(np.median(e)),
        }
    return out


def markdown(rows: list[FamilyRow], summ: dict) -> str:
    from tabulate import tabulate

    lines = [
        "",
        "## Other model families",
        "",
        "Rows of `validation/nonllm_measured_public.csv` made machine-readable in "
        "`validation/nonllm_cases.csv`. These families run on the efficiency factors "
        "fitted to the language-model data; they are not fitted themselves yet, so this "
        "is an out-of-sample check.",
        "",
    ]
    head = ["family", "rows", "median abs. error", "p90 abs. error", "bias (median signed)"]
    lines.append(
        tabulate(
            [
                [
                    f,
                    s["n"],
                    f"{s['median_abs_pct']:.1f}%",
                    f"{s['p90_abs_pct']:.1f}%",
                    f"{s['bias_pct']:+.1f}%",
                ]
                for f, s in summ.items()
            ],
            headers=head,
            tablefmt="github",
        )
    )
    lines += [
        "",
        "| row | model | GPU | metric | measured | predicted | error | assumptions |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.predicted is None:
            continue
        lines.append(
            f"| {r.row} | {r.model} | {r.gpu} | {r.metric} | {r.measured:g} | "
            f"{r.predicted:.4g} | {r.error_pct:+.0f}% | {r.assumptions} |"
        )
    from estimator.families import family_catalog

    cat = family_catalog()
    missing = sorted({cat.items[n].family for n in cat.names()} - set(summ))
    if missing:
        lines += [
            "",
            "No published measurement evaluated yet for: "
            + ", ".join(missing)
            + ". Their estimates rest on the shared roofline and the LLM-fitted factors "
            "alone.",
        ]
    skipped = [r for r in rows if r.predicted is None]
    lines += [
        "",
        f"{len(skipped)} rows skipped (no preset for the model or GPU, unclear units, "
        "or approximate figures; see `validation/README.md`).",
        "",
        "What the misses point at: Whisper as served by HF pipelines and faster-whisper "
        "pays a per-token host cost (no CUDA graphs, timestamp and beam logic) far above "
        "the LLM engines' that our factors come from, so we predict it 6-20x too fast; "
        "the real-time pi0 kernels are ~2x faster than stock "
        "code (we are 14-84% slow); MLPerf SDXL runs with INT8 UNets and tuned batches we "
        "cannot see (we are 25-75% fast on most GPUs); the L4 embedding rows are far "
        "slower than a 60%-of-peak GEMM (small-GPU efficiency is not fitted); "
        "CogVideoX timings include CPU offload.",
        "",
    ]
    return "\n".join(lines)
