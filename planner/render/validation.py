"""Table for ``planner validate``: every row against its prediction, then the summaries."""

from __future__ import annotations

from tabulate import tabulate

from calibration.cases import load_label
from calibration.memory import memory_summary
from calibration.report import Validation, _fmt_stats, coverage, coverage_line


def validation_text(v: Validation) -> str:
    rows = [
        [
            r["model"].split("/")[-1][:28],
            r["gpu"][:18],
            r.get("tp"),
            r.get("weight_dtype"),
            f"{r.get('isl')}/{r.get('osl')}",
            load_label(r),
            r["metric"],
            r["value"],
            "-" if r["predicted"] is None else f"{r['predicted']:.4g}",
            "-" if r["error_pct"] is None else f"{r['error_pct']:+.0f}%",
            r["status"] if r["status"] != "evaluated" else "",
        ]
        for r in v.records()
    ]
    head = ["model", "gpu", "tp", "w", "in/out", "conc", "metric", "measured", "predicted"]
    out = [tabulate(rows, headers=[*head, "error", "status"])]
    rep = v.report
    out.append("\nCoverage: " + coverage_line(coverage(rep)))
    for title, s in (("in-sample", rep.summary), ("leave-one-source-out", rep.cv_summary)):
        if not s or not s.get("all"):
            continue
        out.append(f"\nSummary ({title}): median |error|, p90 |error|, bias")
        srows = [["all", *_fmt_stats(s["all"])]]
        for key in ("metric", "family", "source"):
            srows += [[f"{key}: {k}", *_fmt_stats(x)] for k, x in s[key].items()]
        out.append(tabulate(srows, headers=["", "rows", "median", "p90", "bias"]))
    if cov := v.band_coverage():
        out.append(
            "\nError bands on sources they were not built from (share of rows inside p10-p90, "
            "nominal 80%): "
            + "; ".join(
                f"{k} {c['raw_p10_p90']:.0%} raw, {c['p10_p90']:.0%} "
                f"widened x{c['width_scale']:.2f}"
                for k, c in cov.items()
            )
        )
    out.append("\nOther families (validation/nonllm_cases.csv; LLM-fitted efficiency factors):")
    out.append(
        tabulate(
            [[f, *_fmt_stats(s)] for f, s in v.family_summary.items()],
            headers=["family", "rows", "median", "p90", "bias"],
        )
    )
    m = memory_summary(v.memory_rows)
    if m.get("rows"):
        out.append(
            f"\nKV-cache capacity vs engine start-up logs: {m['rows']} logs, median |error| "
            f"{m['median_abs_pct']}%, p90 {m['p90_abs_pct']}%, bias {m['bias_pct']:+}% "
            f"({m['skipped']} skipped; calibration/data/engine_logs.csv)"
        )
    return "\n".join(out)
