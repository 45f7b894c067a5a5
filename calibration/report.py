"""Running the validation and reporting it: per-row records, summaries, and the Markdown
report (``docs/VALIDATION.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from estimator.comm import link_of

from . import display_name
from .bands import band_coverage, bands_markdown
from .cases import Case, Skipped, load_label, load_rows, prepare
from .fit import Batch, cross_validate, error_pct, finite, summarise
from .memory import memory_check, memory_summary
from .missing_physics import MISSING_PHYSICS
from .params import current_params
from .scoring import score
from .ttft_cycle import cycle_shares, share_note, share_table


@dataclass
class Report:
    cases: list[Case]
    skipped: list[Skipped]
    predicted: np.ndarray
    summary: dict
    cv_predicted: np.ndarray | None = None
    cv_summary: dict | None = None


def run(paths: list[Path], cross_validation: bool = False) -> Report:
    rows = load_rows(paths)
    prepped = [prepare(i, r) for i, r in enumerate(rows)]
    cases = [c for c in prepped if isinstance(c, Case)]
    skipped = [c for c in prepped if isinstance(c, Skipped)]
    if not cases:
        return Report(cases, skipped, np.array([]), {"all": None})
    params = current_params(sorted({c.family for c in cases}))
    pred = score(cases, params, Batch(cases).predict(params))
    rep = Report(cases, skipped, pred, summarise(cases, pred))
    if cross_validation:
        rep.cv_predicted = cross_validate(cases)
        rep.cv_summary = summarise(cases, rep.cv_predicted)
    return rep


def coverage(rep: Report) -> dict:
    """How many rows were scored, and how many were skipped for which kind of reason."""
    from collections import Counter

    kinds = Counter(s.kind for s in rep.skipped)
    total = len(rep.cases) + len(rep.skipped)
    return {
        "rows": total,
        "evaluated": len(rep.cases),
        "skipped": {k: kinds.get(k, 0) for k in ("naming", "unpublished", "other")},
        "skipped_naming_pct": round(100 * kinds.get("naming", 0) / total, 1) if total else 0.0,
        "reasons": dict(Counter(s.reason for s in rep.skipped).most_common()),
    }


def coverage_line(cov: dict) -> str:
    sk = cov["skipped"]
    return (
        f"{cov['evaluated']} of {cov['rows']} rows evaluated; skipped: {sk['naming']} for "
        f"naming (model or GPU not in the catalogue, {cov['skipped_naming_pct']}%), "
        f"{sk['unpublished']} for inputs the source does not publish, {sk['other']} other"
    )


def row_records(rep: Report) -> list[dict]:
    """Per-row output: the input columns plus predicted, error_pct, status."""
    out = []
    for c, p in zip(rep.cases, rep.predicted, strict=True):
        rec = {k: v for k, v in c.row.items() if not k.startswith("_")}
        rec.update(
            predicted=finite(float(p)),
            error_pct=finite(float(100 * (p - c.measured) / c.measured)),
            status="evaluated",
            used_in_fit=c.fit,
            assumptions="; ".join(c.assumptions),
        )
        if rep.cv_predicted is not None:
            cvp = float(rep.cv_predicted[rep.cases.index(c)])
            rec["cv_predicted"] = finite(cvp)
            rec["cv_error_pct"] = finite(100 * (cvp - c.measured) / c.measured)
        out.append(rec)
    for s in rep.skipped:
        rec = {k: v for k, v in s.row.items() if not k.startswith("_")}
        rec.update(predicted=None, error_pct=None, status=f"skipped: {s.reason}")
        out.append(rec)
    return out


def _why(c: Case, err: float, share: float | None = None) -> str:
    """A short, automatic reading of why a row misses (where a known effect applies);
    ``share``: a closed-loop TTFT's share of its client's measured cycle (ttft_cycle)."""
    notes = c.row.get("notes", "")
    reasons = [note] if (note := share_note(share, c.arrivals)) else []
    if "QUEUEING-DOMINATED" in notes:
        reasons.append("TTFT at saturation is queueing for memory slots (lockstep waves)")
    if c.kind == "offline" and c.batch >= 2048:
        reasons.append("batch set by the engine's max_batch_size (not published; we assume 2048)")
    model = c.row.get("model", "")
    if any(k in model for k in ("A3B", "A22B", "16E", "128E", "Mixtral")):
        reasons.append("MoE: expert GEMMs with few tokens each run below the dense-GEMM efficiency")
    if link_of(c.ev.gpu)[0] == "pcie" and c.ev.tp > 1:
        reasons.append("TP over PCIe: all-reduce at the median server's measured rate (10x spread)")
    if c.assumptions:
        reasons.append("assumed: " + "; ".join(c.assumptions))
    if not reasons:
        reasons.append("over-predicted" if err > 0 else "under-predicted")
    return "; ".join(reasons)


def _cycle_section(cases: list[Case], err: np.ndarray, shares: dict) -> list[str]:
    """Closed-loop TTFT by its share of the client's cycle (:mod:`calibration.ttft_cycle`;
    ``shares``: its cycle_shares of ``cases``)."""
    from tabulate import tabulate

    rows = share_table(cases, err, shares)
    if not rows:
        return []
    return [
        "### Closed-loop TTFT by its share of a client's cycle",
        "",
        "A closed-loop client sends its next prompt when its answer ends: its cycle is TTFT "
        "plus decode, and the run's output tokens/s measure it (clients x output tokens / "
        "tokens/s). Where TTFT is a small share of the cycle, the decode sets the run's rate "
        "and the TTFT is how the harness's prompts queue behind each other's prefills; the "
        "rows seldom say. Closed-loop TTFT rows whose run also publishes its throughput, with "
        "the same error as above (cross-validated where it is):",
        "",
        tabulate(
            rows,
            headers=[
                "TTFT / cycle",
                "TTFT rows",
                "TTFT median abs. error",
                "their runs' throughput median abs. error",
            ],
            tablefmt="github",
        ),
        "",
    ]


def _fmt_stats(s: dict | None) -> list[str]:
    if not s:
        return ["-", "-", "-", "-"]
    return [
        str(s["n"]),
        f"{s['median_abs_pct']:.1f}%",
        f"{s['p90_abs_pct']:.1f}%",
        f"{s['bias_pct']:+.1f}%",
    ]


def markdown(rep: Report, files: list[Path], cal: dict) -> str:
    from tabulate import tabulate

    head = ["", "rows", "median abs. error", "p90 abs. error", "bias (median signed error)"]
    lines = [
        "# Validation: the estimator against published measurements",
        "",
        "Generated by `planner validate --cv --report docs/VALIDATION.md`; do not edit by hand.",
        "",
        "## What was compared",
        "",
        f"Inputs: {', '.join(display_name(f) for f in files)}. "
        f"{coverage_line(coverage(rep))} (reasons below). "
        "Each row is a published number measured on real GPUs (see "
        "`calibration/data/README.md` for the columns and sources); the estimator predicts "
        "it from the model's config, the GPU preset and the row's split, formats, engine, "
        "lengths and concurrency. Offline max-throughput rows use "
        "the KV-limited batch under the engine's memory policy; closed-loop rows are scored with "
        "the estimator's own load curve (`estimator.curves.load_curve`, which `solve`, `curve` "
        "and `estimate` use) at the published concurrency per replica with the harness's "
        "arrival pattern: synchronised waves where its lengths are fixed (no think time), "
        "spread arrivals where it draws each request's lengths (its clients fall out of step) "
        "(`estimator/harness.py`, `calibration/scoring.py`). Real users' arrivals spread in "
        "time, as in the open-loop runs (requests sent at a Poisson rate): those are scored "
        "with the same load curve, spread arrivals, for very many users sending that rate "
        "(`estimator.harness.rate_point`), and are not fitted.",
        "",
        f"Calibration: `estimator/calibration.yaml`, status `{cal.get('status')}`, fitted on "
        f"{cal.get('fitted_on')}, by `{cal.get('command', 'n/a')}`. The headline error is the "
        "**leave-one-source-out** cross-validated one: each source's rows are predicted with "
        "factors fitted on the other sources only. The fit gives each source one vote (its "
        "rows share one weight), and the memory share of each GPU family with kernel-level "
        "data is not fitted but pinned to the bandwidth its weight-streaming GEMMs measure "
        "(`calibration/data/kernel_bandwidth.csv`, from NVIDIA AIConfigurator's silicon "
        "database).",
        "",
    ]
    for title, summ in (
        ("Leave-one-source-out (cross-validated)", rep.cv_summary),
        ("In-sample (current calibration)", rep.summary),
    ):
        if summ is None:
            continue
        lines += [f"## {title}", ""]
        rows = [["all", *_fmt_stats(summ["all"])]]
        rows += [[f"metric: {k}", *_fmt_stats(v)] for k, v in summ["metric"].items()]
        rows += [[f"GPU family: {k}", *_fmt_stats(v)] for k, v in summ["family"].items()]
        rows += [
            [f"GPU family x precision: {k}", *_fmt_stats(v)]
            for k, v in summ["family_precision"].items()
        ]
        rows += [[f"source: {k}", *_fmt_stats(v)] for k, v in summ["source"].items()]
        lines += [tabulate(rows, headers=head, tablefmt="github"), ""]
    cov = band_coverage(rep.cases, rep.cv_predicted)
    lines += bands_markdown(cal.get("error_bands") or {}, cov)
    pred = rep.cv_predicted if rep.cv_predicted is not None else rep.predicted
    err = error_pct(pred, np.array([c.measured for c in rep.cases]))
    order = np.argsort(-np.nan_to_num(np.abs(err), nan=-1))[:15]
    lines += [
        "## Worst rows and why they miss",
        "",
        "Cross-validated error. 'Why' lists the known effects that apply to the row.",
        "",
    ]
    shares = cycle_shares(rep.cases)
    rows = []
    for i in order:
        c = rep.cases[i]
        rows.append(
            [
                c.row["model"].split("/")[-1],
                c.row["gpu"],
                f"TP{c.row.get('tp')}",
                c.row.get("weight_dtype"),
                f"{c.isl}/{c.osl}",
                load_label(c.row),
                c.metric,
                f"{c.measured:g}",
                f"{pred[i]:.4g}",
                f"{err[i]:+.0f}%",
                _why(c, err[i], shares.get(i, (None,))[0]),
            ]
        )
    lines += [
        tabulate(
            rows,
            headers=[
                "model",
                "gpu",
                "split",
                "weights",
                "in/out",
                "conc.",
                "metric",
                "measured",
                "predicted",
                "error",
                "why",
            ],
            tablefmt="github",
        ),
        "",
    ]
    lines += _cycle_section(rep.cases, err, shares)
    if rep.skipped:
        from collections import Counter

        cnt = Counter(s.reason for s in rep.skipped)
        lines += [
            "## Skipped rows",
            "",
            tabulate(
                [[r, n] for r, n in cnt.most_common()],
                headers=["reason", "rows"],
                tablefmt="github",
            ),
            "",
        ]
    lines += MISSING_PHYSICS
    return "\n".join(lines)


@dataclass
class Validation:
    """``planner validate``: every language-model row and every other family's row against
    its prediction, with summaries (``cv``: also leave-one-source-out)."""

    files: list[Path]
    report: Report
    family_rows: list
    family_summary: dict
    memory_rows: list = field(default_factory=list)  # KV tokens vs engine start-up logs

    def records(self) -> list[dict]:
        return row_records(self.report)

    def band_coverage(self) -> dict:
        """How the error bands hold on sources they were not built from (with ``cv``)."""
        return band_coverage(self.report.cases, self.report.cv_predicted)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {
            "rows": self.records(),
            "coverage": coverage(self.report),
            "summary": self.report.summary,
            "cv_summary": self.report.cv_summary,
            "band_coverage": self.band_coverage(),
            "families": [{**asdict(r), "error_pct": r.error_pct} for r in self.family_rows],
            "family_summary": self.family_summary,
            "memory_check": {
                "summary": memory_summary(self.memory_rows),
                "rows": [{**asdict(r), "error_pct": r.error_pct} for r in self.memory_rows],
            },
        }

    def markdown(self) -> str:
        from estimator.efficiency import calibration

        from . import families

        return (
            markdown(self.report, self.files, calibration())
            + families.markdown(self.family_rows, self.family_summary)
            + memory_markdown(self.memory_rows)
        )


def validate(files: list[Path] | None = None, cv: bool = False) -> Validation:
    """Predict every published measurement (default: the shipped set) and score it."""
    from estimator import EstimatorError

    from . import families, shipped_files

    files = [Path(f) for f in files] if files else shipped_files()
    for f in files:
        if not f.is_file():
            raise EstimatorError(f"validation data not found: {f}")
    fam_rows = families.run()
    return Validation(
        files,
        run(files, cross_validation=cv),
        fam_rows,
        families.summary(fam_rows),
        memory_check(),
    )


def memory_markdown(rows: list) -> str:
    s = memory_summary(rows)
    out = [
        "\n## KV-cache capacity against engine start-up logs\n",
        f"`calibration/data/engine_logs.csv`: {s['rows']} logs evaluated, {s['skipped']} "
        "skipped (weights not modelled, model or GPU not named). The estimator's "
        "`kv_cache_tokens` against the tokens the engine logged: median |error| "
        f"{s.get('median_abs_pct', '-')}%, p90 {s.get('p90_abs_pct', '-')}%, bias "
        f"{s.get('bias_pct', '-')}%.\n",
        "| engine | model | gpu | TP | logged | predicted | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.error_pct is not None:
            out.append(
                f"| {r.engine} | {r.model.split(' (')[0][-40:]} | {r.gpu.split(' (')[0]} | "
                f"{r.tp} | {r.logged_tokens:,} | {r.predicted_tokens:,} | {r.error_pct:+.0f}% |"
            )
    out.append(
        "\nWhat the misses point at: vLLM V0 without chunked prefill profiles activations at "
        "max_num_batched_tokens = max_model_len (the RTX 3090 logs at 20k/29k: +33%/+75%, "
        "where we profile at the engine default); vLLM's Qwen3-235B-FP8 TP4 log keeps ~6.8 GiB "
        "beyond its weights that SGLang's does not (the sampler warm-up over max_num_seqs x "
        "vocabulary, fused-MoE buffers: +89%); at a 0.59 fraction of a T4 a 0.26 GiB "
        "difference in loaded weights is a third of the KV budget (+35%)."
    )
    return "\n".join(out) + "\n"
