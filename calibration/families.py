"""Validation of the non-LLM families against published measurements.

``validation/nonllm_measured_public.csv`` describes each measurement in prose;
``validation/nonllm_cases.csv`` adds, per usable row, the machine-readable conditions (preset,
GPU preset, weights, batch, resolution, steps, ...) and the assumptions made. Rows not listed
there are reported as skipped with the reason recorded in the README."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .family_cases import FamilyRow, all_cases, evaluate_row, source_key
from .family_engines import cross_validate_engines


def run(cases_path: Path | None = None, public_path: Path | None = None) -> list[FamilyRow]:
    cases, public = all_cases(cases_path, public_path)
    out = [evaluate_row(n, c, src) for n, c, src in cases]
    covered = {n for n, _, _ in cases}
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
                    source=source_key(src["source"]),
                )
            )
    rows = sorted((r for r in out if r.row >= 0), key=lambda r: r.row)
    rows += [r for r in out if r.row < 0]
    cross_validate_engines(rows, cases)
    return rows


def summary(rows: list[FamilyRow]) -> dict:
    fams = sorted({r.family for r in rows if r.predicted is not None})
    out = {}
    for f in fams:
        e = np.array([r.error_pct for r in rows if r.family == f and r.predicted is not None])
        cv = np.array([r.cv_error_pct for r in rows if r.family == f and r.cv_predicted])
        out[f] = {
            "n": int(len(e)),
            "median_abs_pct": float(np.median(np.abs(e))),
            "p90_abs_pct": float(np.percentile(np.abs(e), 90)),
            "bias_pct": float(np.median(e)),
            "cv_n": int(len(cv)),
            "cv_median_abs_pct": float(np.median(np.abs(cv))) if len(cv) else None,
        }
    return out


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}%"


def markdown(rows: list[FamilyRow], summ: dict) -> str:
    from tabulate import tabulate

    from estimator.efficiency import calibration

    from .bands import family_band_coverage

    lines = [
        "",
        "## Other model families",
        "",
        "Rows of `validation/nonllm_measured_public.csv` made machine-readable in "
        "`validation/nonllm_cases.csv`, and the self-describing rows of "
        "`validation/nonllm_measured_extra.csv` (numbered -1, -2, ...). These families run "
        "on the efficiency factors fitted to the language-model data, an out-of-sample "
        "check; the things fitted on these rows are the host time per decoding step of "
        "the eager speech engines and the denoiser time factors of eager diffusers and "
        "torch.compile (below). "
        "'CV' is the leave-one-source-out error: each engine's host time or factor fitted "
        "without the row's source (empty where its engine has no other source).",
        "",
    ]
    head = [
        "family",
        "rows",
        "median abs. error",
        "p90 abs. error",
        "bias (median signed)",
        "CV rows",
        "CV median abs. error",
    ]
    lines.append(
        tabulate(
            [
                [
                    f,
                    s["n"],
                    f"{s['median_abs_pct']:.1f}%",
                    f"{s['p90_abs_pct']:.1f}%",
                    f"{s['bias_pct']:+.1f}%",
                    s["cv_n"],
                    _pct(s["cv_median_abs_pct"]),
                ]
                for f, s in summ.items()
            ],
            headers=head,
            tablefmt="github",
        )
    )
    bands = calibration().get("family_error_bands") or {}
    if bands:
        lines += [
            "",
            "Error bands every estimate of these families carries (`family_error_bands`): "
            "quantiles of measured / predicted time (a rate's inverse) over the CV "
            "predictions, per family with 10 rows or more; the others take every family's "
            "rows together ('all'). A scenario's `confidence` holds each pass to its "
            "family's quantile.",
            "",
            "| group | rows | p10 | p50 | p90 |",
            "|---|---|---|---|---|",
            *(
                f"| {g} | {b['n']} | {b['p10']:.2f} | {b['p50']:.2f} | {b['p90']:.2f} |"
                for g, b in bands.items()
            ),
        ]
        cov = family_band_coverage(rows)
        if cov:
            lines += [
                "",
                f"Checked on sources they were not built from ({cov['n']} rows of "
                f"{cov['sources']} sources, each against the bands of the others): the raw "
                f"quantiles' p10-p90 held {cov['raw_p10_p90']:.0%} of them, so they are widened "
                f"about their median x{cov['width_scale']:.2f} in log space to hold "
                f"{cov['p10_p90']:.0%} (the language models' bands are widened the same way).",
            ]
    lines += _diffusion_engines((calibration().get("family_engines") or {}).get("diffusion") or {})
    lines += _encoder_engines((calibration().get("family_engines") or {}).get("encoder") or {})
    engines = (calibration().get("family_engines") or {}).get("asr") or {}
    if engines:
        lines += [
            "",
            "Speech engines' host time per decoder layer per decoding step "
            "(`estimator/calibration.yaml`, `family_engines`): measured time = GPU time + "
            "steps x decoder layers x (per layer + sequences x per sequence).",
            "",
            "| engine | per layer µs | per layer per sequence µs | rows | sources |",
            "|---|---|---|---|---|",
        ]
        for name, e in engines.items():
            lines.append(
                f"| {name} | {e['layer_us']:g} | {e['layer_seq_us']:g} | {e['rows']} | "
                f"{', '.join(e['sources'])} |"
            )
    lines += [
        "",
        "| row | model | GPU | engine | metric | measured | predicted | error | CV error | "
        "assumptions |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.predicted is None:
            continue
        cv = "" if r.cv_error_pct is None else f"{r.cv_error_pct:+.0f}%"
        lines.append(
            f"| {r.row} | {r.model} | {r.gpu} | {r.engine} | {r.metric} | {r.measured:g} | "
            f"{r.predicted:.4g} | {r.error_pct:+.0f}% | {cv} | {r.assumptions} |"
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
        "What the misses point at: the speech engines are host-bound (their rows take "
        "nearly as long on a V100S as on an A100), and one host time per engine leaves "
        "the transformers BetterTransformer path and whisper.cpp unmodelled (skipped); "
        "the real-time pi0 kernels are ~2x faster than stock "
        "code (we are 14-84% slow); MLPerf SDXL runs with INT8 UNets and tuned batches we "
        "cannot see (we are 25-75% fast on most GPUs); the L4 embedding rows are far "
        "slower than a 60%-of-peak GEMM (small-GPU efficiency is not fitted); "
        "CogVideoX timings include CPU offload.",
        "",
    ]
    return "\n".join(lines)


def _diffusion_engines(engines: dict) -> list[str]:
    """The diffusion engines' fitted denoiser time factors, as report lines."""
    if not engines:
        return []
    return [
        "",
        "Diffusion engines' time factor on the denoiser outside its attention (already one "
        "fused kernel; `estimator/calibration.yaml`, `family_engines.diffusion`). Eager "
        "`diffusers` (the default) over the roofline at the language-model factors: with a "
        "published eager run's estimate split as the estimator splits it (share d in that "
        "part), a run measured at r times the estimate puts it at 1 + (r - 1)/d of the "
        "roofline's. torch.compile over eager: published runs of one pipeline on one GPU at "
        "the same settings, compiled and eager; a compiled run at r of the eager time puts "
        "that part at 1 - (1 - r)/d of its eager time. Each factor is the median over sources "
        "of each source's median. TensorRT engines run at the roofline.",
        "",
        "| engine | denoiser time factor | runs or pairs | sources |",
        "|---|---|---|---|",
        *(
            f"| {name} | {e['time_factor']:g} | {e['rows']} | {', '.join(e['sources'])} |"
            for name, e in engines.items()
        ),
    ]


def _encoder_engines(engines: dict) -> list[str]:
    """The eager encoder engine's fitted numbers, as report lines."""
    if not engines:
        return []
    return [
        "",
        "Encoder engines (`estimator/calibration.yaml`, `family_engines.encoder`; "
        "`calibration/encoder_engines.py`): published runs of one model on one GPU at the "
        "same precision, batch and length, in eager PyTorch and under a fused engine "
        "(`validation/encoder_engine_pairs.csv`, 16-bit): eager = max(layers x host time a "
        "layer, factor x fused), each publisher one vote. The fused engines (`tei`, the "
        "default) run at the roofline. CV: each publisher's eager times predicted from its "
        "fused times with the numbers fitted on the others; as fused: the fused time taken "
        "for the eager one.",
        "",
        "| engine | host µs a layer | time factor | pairs | CV median abs. error | as fused | "
        "sources |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {name} | {e['layer_us']:g} | {e['time_factor']:g} | {e['rows']} | "
            f"{e['cv_median_abs_pct']:g}% | {e['as_fused_median_abs_pct']:g}% | "
            f"{', '.join(e['sources'])} |"
            for name, e in engines.items()
        ),
    ]
