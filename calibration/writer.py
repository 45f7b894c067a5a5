"""Writing the one file the estimator reads its efficiency factors from
(``estimator/calibration.yaml``): the fitted factors (:func:`calibration.fit.fit`), their
errors in sample and leave-one-source-out, the error bands, and the speech engines' host
times, with the inputs' hashes."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from estimator.engines import ENGINES
from estimator.files import atomic_write_text

from . import display_name
from .batch import Batch
from .cases import load_cases
from .fit import METRIC_CLASSES, cross_validate, fit, summarise
from .params import DENSE_STACK


def write_calibration(paths: list[Path], date: str, target: Path | None = None) -> dict:
    """Fit on every shipped/given row, cross-validate by source, and write the one file the
    estimator reads its efficiency factors from."""
    import hashlib

    import yaml

    from estimator.efficiency import calibration

    from . import shipped_dir
    from .bands import error_bands
    from .collectives import FILE as COLLECTIVE_FILE
    from .collectives import bus_shares
    from .kernel_bandwidth import FILE as KERNEL_FILE
    from .kernel_compute import FILE as GEMM_FILE
    from .kernel_compute import PUBLISHED as GEMM_PUBLISHED
    from .kernel_compute import gemm_table
    from .scoring import score

    kernel_file = shipped_dir() / KERNEL_FILE  # the memory shares the fit pins
    # the kernel-level tables beside the rows: memory shares, GEMM rates, collectives
    measured = (
        kernel_file,
        shipped_dir() / GEMM_FILE,
        shipped_dir() / GEMM_PUBLISHED,
        shipped_dir() / COLLECTIVE_FILE,
    )
    links = {"nic_latency_us": 8.0, "allreduce_bus_share": bus_shares()}
    gemm = gemm_table()
    # the rows are decomposed with the links and GEMM rates this file will hold (measured,
    # not fitted)
    calibration()["links"] = links
    calibration()["gemm_share"] = gemm
    cases = load_cases(paths)
    params, info = fit(cases)
    pred = score(cases, params, Batch(cases).predict(params))
    cv = cross_validate(cases)
    ins, cvs = summarise(cases, pred), summarise(cases, cv)

    def r4(x):
        return round(float(x), 4)

    fams = {}
    for f, (m, c) in params.families.items():
        if f == "default":
            continue
        g = params.groups.get(f)
        if g is None:  # its rows do not measure compute: the defaults' share holds
            fams[f] = {"memory": r4(m)}
            continue
        fams[f] = {
            "memory": r4(m),
            "compute": r4(c),
            "compute_precision": g.get("compute_precision"),
            "rows": g.get("rows", 0),
        }
        if g.get("compute_at"):
            fams[f]["compute_at"] = {
                q: {"compute": r4(v["compute"]), "rows": v["rows"]}
                for q, v in g["compute_at"].items()
            }
    dm, dc = params.families["default"]
    doc = {
        "status": "fitted",
        "fitted_on": date,
        "command": "planner calibrate --write",
        "inputs": [
            {
                "file": display_name(p),
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest()[:16],
            }
            for p in [*paths, *measured]
        ],
        "rows_evaluated": len(cases),
        "rows_in_fit": info["rows"],
        # factors pinned at a bound are not identified by the data (or absorb missing physics)
        "at_bounds": info["at_bounds"],
        "defaults": {
            "memory": r4(dm),
            "compute": r4(dc),
            "comm_latency_scale": 1.0,
            "collective_base_us": r4(params.collective_base_us),
            "layer_overhead_us": r4(params.layer_overhead_us),
            "step_overhead_ms": r4(params.step_overhead_ms),
            "seq_overhead_us": r4(params.seq_overhead_us),
            "int4_stream": r4(params.int4_stream),
        },
        "families": fams,
        "engines": {
            e: {
                **(
                    {
                        "step_overhead_ms": r4(params.engines[e][0]),
                        "seq_overhead_us": r4(params.engines[e][1]),
                    }
                    if e in params.engines
                    else {}
                ),
                **({"request_overhead_ms": r4(params.requests[e])} if e in params.requests else {}),
                **(
                    {"dense_request_overhead_ms": r4(params.requests[e + DENSE_STACK])}
                    if e + DENSE_STACK in params.requests
                    else {}
                ),
                "rows": info["rows_per_engine"].get(e, 0),
            }
            for e in sorted({*params.engines, *(f for f in params.requests if f in ENGINES)})
        },
        # front ends other than the engines' own servers (calibration.cases.frontend_of),
        # where fitted: what a row measured through them carries; sizing uses the engine's
        **(
            {"frontends": {f: {"request_overhead_ms": r4(v)} for f, v in others.items()}}
            if (
                others := {
                    f: v
                    for f, v in params.requests.items()
                    if f not in ENGINES and not f.endswith(DENSE_STACK)
                }
            )
            else {}
        ),
        "links": links,
        "gemm_share": gemm,
        # quantiles of measured / predicted from the leave-one-source-out predictions, by
        # kind of number, model class and GPU family (>= 20 rows from >= 6 sources), widened
        # to hold 80% of a held-out source's rows, for the bands every estimate carries;
        # TTFT's from the rows the replica sets (bands.replica_set)
        "error_bands": error_bands(cases, cv),
        "error": {
            "in_sample": {k: _slim(ins["metric"].get(k)) for k in METRIC_CLASSES},
            "leave_one_source_out": {k: _slim(cvs["metric"].get(k)) for k in METRIC_CLASSES},
        },
    }
    target = target or Path(str(resources.files("estimator") / "calibration.yaml"))
    header = (
        "# Efficiency factors: the achieved share of datasheet peaks. The ONE place they live.\n"
        "# Written by `planner calibrate --write` (calibration/fit.py): a bounded, robust\n"
        "# least-squares fit of log(predicted/measured) over the published measurements in the\n"
        "# inputs below, each source's rows sharing one weight; families with fewer than 15\n"
        "# rows, or with rows of one model only, use the defaults. Do not edit by hand: change\n"
        "# the physics or the data and refit.\n"
        "# memory/compute: achieved share of peak HBM bandwidth / dense FLOPS. The memory share\n"
        "# of a family with kernel-level data is not fitted: it is the bandwidth its GPUs'\n"
        "# weight-streaming GEMMs reach (calibration/data/kernel_bandwidth.csv). A family with no\n"
        "# compute share of its own runs at its GPUs' compute-bound GEMM kernels' measured share\n"
        "# of peak (gemm_share: calibration/data/kernel_compute.csv, not fitted) times the share\n"
        "# of their kernels' rate the families fitted at 8 or 16 bits reach\n"
        "# (estimator.efficiency.compute_share).\n"
        "# collective_base_us: fixed start-up latency per collective; layer_overhead_us: fixed\n"
        "# cost per layer per step (kernel launches and gaps); step_overhead_ms: per engine step;\n"
        "# seq_overhead_us: host work per running sequence per step (sampling, scheduling);\n"
        "# int4_stream: the share of the memory share W4A16 (int4 weight-only) kernels reach\n"
        "# streaming their weights (they dequantise beside the loads), fitted on int4 rows;\n"
        "# engines: those two for each serving engine with enough rows (the defaults' serve\n"
        "# the others), and request_overhead_ms, the time its own server (vllm serve,\n"
        "# sglang.launch_server, trtllm-serve) adds to a first token, where that server's TTFTs\n"
        "# come from two sources or more (0 elsewhere): the median of its one-client TTFTs less\n"
        "# their GPU time where it has three; dense_request_overhead_ms, the same for dense\n"
        "# models, the median of their TTFTs at up to 4 clients less their GPU time where\n"
        "# those come from two sources, and then the first is its MoE models' alone (their\n"
        "# prompt passes carry time the roofline does not price); frontends: the same for\n"
        "# other front ends (NIM's), fitted on the same rule, used only to score their rows.\n"
        "# links.nic_latency_us: per-hop latency of the scale-out NIC (not fitted: no data);\n"
        "# links.allreduce_bus_share: the share of the x16 rate a tensor-parallel ring\n"
        "# all-reduce over PCIe reaches, by GPUs in the group: the median measured server\n"
        "# (NCCL bus bandwidth, calibration/data/collective_bandwidth.csv; not fitted). NVLink\n"
        "# keeps its datasheet rate: engines run their own all-reduce kernels there.\n"
        "# error_bands: quantiles of measured / predicted, leave-one-source-out, by number,\n"
        "# model class and GPU family (20 rows or more from 6 sources or more;\n"
        "# calibration/bands.py), widened about their median in log space (width_scale) so\n"
        "# that p10-p90 holds 80% of the rows of a source they were not built from; TTFT's\n"
        "# from the rows whose TTFT the replica sets (one client, or a request rate), not a\n"
        "# benchmark harness's queue.\n"
        "# family_engines: host time per decoder layer per decoding step (layer_us) and per\n"
        "# running sequence (layer_seq_us) of the eager speech engines, fitted on their runs,\n"
        "# and the time factor of a diffusion engine on the denoiser (time_factor), the median\n"
        "# over sources of published runs paired with the same pipeline in eager PyTorch\n"
        "# (validation/nonllm_*.csv; calibration/family_engines.py); and the eager encoder\n"
        "# engine's host time per layer (layer_us) and time factor over fused kernels,\n"
        "# fitted on published pairs (validation/encoder_engine_pairs.csv;\n"
        "# calibration/encoder_engines.py).\n"
        "# family_error_bands: quantiles of measured / predicted time of the other families'\n"
        "# rows, leave-one-source-out, per family with 10 rows or more, and all together\n"
        "# (calibration/bands.py), widened like error_bands, for the bands their estimates\n"
        "# carry.\n"
    )
    from estimator.efficiency import calibration

    from . import families
    from .bands import family_error_bands
    from .encoder_engines import PAIRS_FILE, fit_encoder_engines
    from .family_cases import all_cases
    from .family_engines import fit_family_engines

    def write() -> None:
        text = header + yaml.safe_dump(doc, sort_keys=False)
        atomic_write_text(target, text, inputs=(*paths, *measured))
        calibration.cache_clear()

    write()  # the engines' host times are fitted on top of the GPU times just written
    doc["family_engines"] = fit_family_engines(all_cases()[0])
    if encoder := fit_encoder_engines():  # from measured pairs alone: no GPU time in it
        doc["family_engines"]["encoder"] = encoder
    doc["family_engine_inputs"] = [
        {"file": display_name(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()[:16]}
        for p in sorted([*shipped_dir().glob("nonllm_*.csv"), shipped_dir() / PAIRS_FILE])
    ]
    write()  # and the other families' bands on the engines' host times just written
    doc["family_error_bands"] = family_error_bands(families.run())
    write()
    return doc


def _slim(s: dict | None) -> dict | None:
    keys = ("median_abs_pct", "p90_abs_pct", "bias_pct")
    return {"n": s["n"], **{k: round(s[k], 2) for k in keys}} if s else None


def calibrate(files: list[Path] | None = None, write: bool = False) -> dict:
    """Fit the efficiency factors (``planner calibrate``); ``write``: also write them to the
    estimator's calibration file, with the errors in and out of sample."""
    import datetime

    from . import shipped_files

    paths = [Path(f) for f in files] if files else shipped_files()
    if write:
        doc = write_calibration(paths, datetime.date.today().isoformat())
        return {k: doc[k] for k in ("defaults", "families", "error", "rows_in_fit")}
    cases = load_cases(paths)
    params, info = fit(cases)
    return {
        "params": {
            "families": {k: list(map(float, x)) for k, x in params.families.items()},
            "collective_base_us": float(params.collective_base_us),
            "layer_overhead_us": float(params.layer_overhead_us),
            "step_overhead_ms": float(params.step_overhead_ms),
            "seq_overhead_us": float(params.seq_overhead_us),
            "int4_stream": float(params.int4_stream),
            "engines": params.engines,
            "request_overhead_ms": params.requests,
        },
        "fit": info,
    }
