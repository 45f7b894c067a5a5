"""Tables for ``planner models`` and ``planner gpus``."""

from __future__ import annotations

from tabulate import tabulate

from estimator import Accelerator
from estimator.efficiency import efficiency_key, fitted


def models_table(rows: list[dict]) -> str:
    if not rows:
        return "no model preset matches these filters"
    return (
        tabulate(
            [
                [
                    r["name"],
                    r["vendor"] or "-",
                    f"{r['total_params_b']:.3g}",
                    "-" if r["active_params_b"] is None else f"{r['active_params_b']:.3g}",
                    r["max_context"] or "-",
                    r["architecture"],
                ]
                for r in rows
            ],
            headers=["model", "maker", "total B", "active B", "context", "architecture / family"],
            disable_numparse=True,
        )
        + f"\n{len(rows)} models"
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
    rows = [
        [k, v] for k, v in info.items() if not isinstance(v, dict | list) and k != "source_detail"
    ]
    lines = [tabulate(rows, tablefmt="simple")]
    lines.append("\nparameter count, derived from the config:")
    lines += [f"  {line}" for line in info["params_derivation"]]
    if "published" in info and info["published"].get("total_params_b"):
        pub = info["published"]
        lines.append(f"  published: {pub['total_params_b']} B ({pub.get('source', '')})")
    return "\n".join(lines)


def _fitted(g: Accelerator) -> str:
    """Which of the GPU's efficiency factors are its family's own (calibration.yaml)."""
    mem, cmp = fitted(efficiency_key(g))
    return ", ".join(w for w, own in (("bw", mem), ("compute", cmp)) if own) or "-"


def gpus_table(gpus: list[Accelerator]) -> str:
    rows = [
        [
            g.name,
            g.vendor,
            g.segment,
            g.memory_gb,
            g.memory_bandwidth_gb_s,
            g.dense_tflops.get("bf16"),
            g.dense_tflops.get("fp8"),
            g.dense_tflops.get("fp4"),
            f"{g.scale_up.kind} x{g.scale_up.domain_size}",
            g.tdp_w,
            g.rental_usd_per_hour,
            _fitted(g),
        ]
        for g in gpus
    ]
    head = [
        "gpu",
        "vendor",
        "segment",
        "GB",
        "GB/s",
        "bf16 TF",
        "fp8 TF",
        "fp4 TF",
        "scale-up",
        "TDP W",
        "$/h",
        "own factors",
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


SERVER_COLUMNS = ["name", "gpu", "gpus", "scale_up", "power_w", "rack_units", "host_usd", "kind"]
INSTANCE_COLUMNS = ["cloud", "name", "gpu", "gpus", "usd_per_hour", "region", "date"]


def procurement_table(rows: list[dict], columns: list[str]) -> str:
    """Servers or instances, one per line (``-`` where a value is not published)."""
    body = [["-" if r.get(c) is None else r.get(c) for c in columns] for r in rows]
    return tabulate(body, headers=columns)
