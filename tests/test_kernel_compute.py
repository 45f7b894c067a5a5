"""The compute-bound GEMM rates measured at kernel level, and the compute share a GPU family
with no published runs of its own that measure compute takes from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import estimator.efficiency as eff
from calibration import kernel_compute as kc
from estimator.catalog import get_gpu
from estimator.efficiency import calibration, compute_share, efficiency_for, kernel_share


def test_the_rate_is_the_median_of_the_compute_bound_gemms_of_one_dtype():
    g = pd.DataFrame(
        {
            "gemm_dtype": ["bfloat16"] * 4 + ["fp8", "bfloat16"],
            "m": [4096, 8192, 2048, 1024, 4096, 4096],
            "n": [8192, 8192, 4096, 8192, 8192, 2048],
            "k": [8192, 8192, 4096, 8192, 8192, 8192],
            # ms: the 1024-row GEMM, the FP8 one and the 2048-wide one are not counted
            "latency": [1.0, 1.5, 0.2, 0.001, 0.001, 0.001],
        }
    )
    n, tflops = kc.compute_tflops(g, "bfloat16")
    flops = [2 * 4096 * 8192**2 / 1e-3, 2 * 8192**3 / 1.5e-3, 2 * 2048 * 4096**2 / 0.2e-3]
    assert n == 3
    assert tflops == pytest.approx(np.median(flops) / 1e12)


def test_shares_are_measured_rates_over_the_presets_datasheet_peaks():
    rows = {(r["gpu"], r["precision"]): r["tflops"] for r in kc.load()}
    shares = kc.gemm_shares()
    # A100 SXM: 261.8 of 312 BF16 TFLOPS; H100 SXM: 1,204.7 of 1,978.9 FP8 TFLOPS
    assert shares["a100-80gb-sxm"]["bf16"] == pytest.approx(261.8 / 312.0, abs=1e-4)
    assert shares["h100-sxm"]["fp8"] == pytest.approx(1204.7 / 1978.9, abs=1e-4)
    for (gpu, p), tflops in rows.items():  # every measured system is a preset, below its peak
        assert 0.2 < tflops / get_gpu(gpu).dense_tflops[p] <= 1.0, (gpu, p)
    for r in kc.load():
        assert "aiconfigurator-core" in r["source"]
    # 8-bit GEMMs reach less of their doubled peak than 16-bit ones on every measured GPU
    for gpu, s in shares.items():
        if "fp8" in s:
            assert s["fp8"] < s["bf16"], gpu


def test_the_calibration_holds_the_table_the_writer_makes():
    table = kc.gemm_table()
    assert calibration()["gemm_share"] == table
    hopper = table["families"]["hopper"]
    assert hopper["fp8"] == pytest.approx(
        (table["gpus"]["h100-sxm"]["fp8"] + table["gpus"]["h200"]["fp8"]) / 2, abs=1e-4
    )
    assert kernel_share("hopper", "fp16") == kernel_share("hopper", "bf16")  # one rate
    assert kernel_share("cdna3", "fp8") is None  # no AMD system measured


def _pooled(families: dict) -> float:
    """By hand: the row-weighted mean over the fitted 8/16-bit groups of the families with
    kernel data of fitted share / kernel share."""
    num = den = 0.0
    for f, fam in families.items():
        groups = {}
        if fam.get("compute_precision"):
            groups[fam["compute_precision"]] = (fam["compute"], fam.get("rows", 1))
        for p, g in (fam.get("compute_at") or {}).items():
            groups[p] = (g["compute"], g.get("rows", 1))
        for p, (c, n) in groups.items():
            k = kernel_share(f, p)
            if p != "fp4" and k:
                num, den = num + c / k * n, den + n
    return num / den


def test_a_family_without_its_own_compute_runs_at_its_kernels_rate():
    """Ampere and Ada have no published runs that measure their compute: each runs at its
    own GPUs' GEMM rate times the share of their kernels' rate the fitted families reach."""
    fams = calibration()["families"]
    pooled = _pooled(fams)
    assert 0.5 < pooled < 1.0
    for fam in ("ampere", "ada-gddr"):
        assert "compute" not in fams[fam]
        for p in ("bf16", "fp8"):
            if kernel_share(fam, p):
                assert efficiency_for(fam, p).compute == pytest.approx(
                    pooled * kernel_share(fam, p)
                )
    # A100's BF16 GEMMs reach more of their peak than L40S's: so does its served model
    assert efficiency_for("ampere", "bf16").compute > efficiency_for("ada-gddr", "bf16").compute
    # FP8 GEMMs reach less of their doubled peak than BF16 ones on the same board
    assert efficiency_for("ada-gddr", "fp8").compute < efficiency_for("ada-gddr", "bf16").compute
    # a family fitted at its own precision keeps its fitted factor
    h = fams["hopper"]
    assert efficiency_for("hopper", h["compute_precision"]).compute == pytest.approx(h["compute"])


def test_more_kernel_rate_never_lowers_an_unfitted_familys_compute(monkeypatch):
    cal = calibration()
    fams = cal["families"]
    base = compute_share(fams, 0.3, "ampere", "bf16")
    for scale in (0.5, 0.9, 1.1):
        table = {
            **cal["gemm_share"],
            "families": {
                **cal["gemm_share"]["families"],
                "ampere": {"bf16": cal["gemm_share"]["families"]["ampere"]["bf16"] * scale},
            },
        }
        monkeypatch.setattr(eff, "calibration", lambda t=table: {**cal, "gemm_share": t})
        got = compute_share(fams, 0.3, "ampere", "bf16")
        assert (got > base) == (scale > 1.0) and got == pytest.approx(base * scale)


def test_fp4_and_unmeasured_families_keep_shares_of_peak(monkeypatch):
    """FP4 on a family not fitted at it takes the FP4 factors fitted on the others (the
    engines' FP4 paths beat the FP4 kernels measured alone); a family with no kernel data
    the factors fitted at its precision, else the defaults."""
    fams = calibration()["families"]
    fp4 = [(f["compute"], f["rows"]) for f in fams.values() if f.get("compute_precision") == "fp4"]
    mean = sum(c * n for c, n in fp4) / sum(n for _, n in fp4)
    assert compute_share(fams, 0.3, "ampere", "fp4") == pytest.approx(mean)
    assert compute_share(fams, 0.3, "no-such-family", "bf16") == 0.3  # none fitted at bf16
    fp8 = [
        (g["compute"], g["rows"])
        for f in fams.values()
        for p, g in (f.get("compute_at") or {}).items()
        if p == "fp8"
    ] + [(f["compute"], f["rows"]) for f in fams.values() if f.get("compute_precision") == "fp8"]
    mean8 = sum(c * n for c, n in fp8) / sum(n for _, n in fp8)
    assert compute_share(fams, 0.3, "no-such-family", "fp8") == pytest.approx(mean8)
    # no kernel table at all (an older calibration): the defaults, as before it
    monkeypatch.setattr(eff, "calibration", lambda: {"families": fams})
    assert compute_share(fams, 0.3, "ampere", "bf16") == 0.3


def test_published_rates_are_put_on_the_kernel_tables_footing():
    """A board AIConfigurator does not measure takes its published BF16 rate (the median of
    its rows) times the ratio the family's boards measured both ways show."""
    table = kc.gemm_table()
    pub = kc.load_published()
    # RTX 4090: four published runs (162.39, 163.09, 170.06, 173.31), Ada's bridge from the
    # L40S (204.5 of AIConfigurator's over 269.15 published)
    assert pub["rtx-4090"] == pytest.approx((163.09 + 170.06) / 2)
    l40s = table["gpus"]["l40s"]["bf16"] * 362.05
    assert table["bridges"]["ada-gddr"] == pytest.approx(l40s / 269.15, abs=1e-3)
    assert table["gpus"]["rtx-4090"]["bf16"] == pytest.approx(
        pub["rtx-4090"] * table["bridges"]["ada-gddr"] / 165.2, abs=1e-3
    )
    # a family with no board measured both ways takes the families' median bridge
    assert "ampere-gddr" not in table["bridges"]
    assert table["gpus"]["rtx-a6000"]["bf16"] == pytest.approx(
        123.34 * table["bridges"]["all"] / 154.8, abs=1e-3
    )
    # the family's rate is its AIConfigurator boards' alone: a published board does not move it
    assert table["families"]["ada-gddr"]["bf16"] == table["gpus"]["l40s"]["bf16"]
    assert set(table["reference"]) >= {"l40s", "h100-sxm", "a100-80gb-sxm"}
    assert "rtx-4090" not in table["reference"]


def test_a_board_runs_at_its_familys_share_times_its_own_rate_over_the_familys():
    from estimator import Parallel
    from estimator.efficiency import board_ratio
    from estimator.roofline import Machine

    table = calibration()["gemm_share"]
    g4090, l40s = get_gpu("rtx-4090"), get_gpu("l40s")
    ratio = table["gpus"]["rtx-4090"]["bf16"] / table["families"]["ada-gddr"]["bf16"]
    assert board_ratio(g4090) == pytest.approx(ratio) and ratio > 1.2  # 450 W vs 350 W
    assert board_ratio(l40s) == 1.0  # the family's own board
    assert board_ratio(get_gpu("t4")) == 1.0  # unmeasured: its family's
    fam = efficiency_for("ada-gddr", "bf16").compute
    for p in ("bf16", "fp8"):  # one standing for every precision the board runs
        share = efficiency_for("ada-gddr", p).compute * ratio
        assert Machine(g4090, Parallel(), p).peak == pytest.approx(g4090.peak_flops(p) * share)
    assert Machine(l40s, Parallel(), "bf16").peak == pytest.approx(l40s.peak_flops("bf16") * fam)
