"""Tables for ``planner models`` and ``planner gpus``."""

from __future__ import annotations

from tabulate import tabulate

from estimator import Accelerator


def models_table(rows: list[dict]) -> str:
    return tabulate(
        [
            [r["name"], r["total_params_b"], r["active_params_b"] or "-", r["architecture"]]
            for r in rows
        ],
        headers=["model", "total B", "active B", "architecture / family"],
    )


def model_text(info: dict) -> str:
    if "family" in info:  # a non-LLM preset: size against the published one, and source
        rows = [
            [k, f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v]
            for k, v in info.items()
            if not isinstance(v, dict) and v != "" and k != "source_detail"
        ]
        rows += [[f"published.{k}", v] for k, v in info["published"].items()]
        return tabulate(rows, tablefmt="simple", disable_numparse=True)
    rows = [[k, v] for k, v in info.items() if not isinstance(v, dict) and k != "source_detail"]
    rows += [[f"params.{k}", f"{v:,}"] for k, v in info["params_breakdown"].items()]
    return tabulate(rows, tablefmt="simple")


def gpus_table(gpus: list[Accelerator]) -> str:
    rows = [
        [
            g.name,
            g.vendor,
            g.memory_gb,
            g.memory_bandwidth_gb_s,
            g.dense_tflops.get("bf16"),
            g.dense_tflops.get("fp8"),
            g.dense_tflops.get("fp4"),
            f"{g.scale_up.kind} x{g.scale_up.domain_size}",
            g.tdp_w,
            g.rental_usd_per_hour,
        ]
        for g in gpus
    ]
    head = [
        "gpu",
        "vendor",
        "GB",
        "GB/s",
        "bf16 TF",
        "fp8 TF",
        "fp4 TF",
        "scale-up",
        "TDP W",
        "$/h",
    ]
    return tabulate(rows, headers=head)


def gpu_text(d: dict) -> str:
    rows = []
    for k, v in d.items():
        if isinstance(v, dict):
            rows += [[f"{k}.{kk}", vv] for kk, vv in v.items()]
        else:
            rows.append([k, v])
    return tabulate(rows, tablefmt="simple", maxcolwidths=[None, 90])
