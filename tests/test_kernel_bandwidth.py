"""The memory shares measured at kernel level, and how the fit uses them and weighs sources."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from calibration import kernel_bandwidth as kb
from calibration import shipped_files
from calibration.cases import load_cases
from calibration.fit import fit
from estimator.catalog import get_gpu
from estimator.efficiency import efficiency_for


def test_streaming_bandwidth_is_bytes_over_latency_of_large_one_row_bf16_gemms():
    g = pd.DataFrame(
        {
            "gemm_dtype": ["bfloat16", "bfloat16", "bfloat16", "fp8", "bfloat16"],
            "m": [1, 1, 1, 1, 8],
            "n": [16384, 8192, 4096, 16384, 16384],
            "k": [16384, 16384, 4096, 16384, 16384],
            # ms: 536.9 MB in 0.2 ms = 2.68 TB/s; 268.4 MB in 0.1 ms = 2.68 TB/s; the 33.5 MB
            # GEMM (under MIN_BYTES), the FP8 one and the eight-row one are not counted
            "latency": [0.2, 0.1, 0.001, 0.001, 0.001],
        }
    )
    n, tb_s = kb.streaming_tb_s(g)
    weights = 16384 * 16384 * 2.0
    assert n == 2
    assert tb_s == pytest.approx(
        np.median(
            [
                (weights + 2 * 32768) / 0.2e-3,
                (weights / 2 + 2 * (8192 + 16384)) / 0.1e-3,
            ]
        )
        / 1e12
    )


def test_shares_are_measured_bandwidth_over_the_presets_datasheet():
    rows = {r["gpu"]: r["tb_s"] for r in kb.load()}
    shares = kb.memory_shares()
    # H100 SXM 2.8209 of 3.35 TB/s and H200 4.0253 of 4.8 TB/s: Hopper 0.8403
    h = (rows["h100-sxm"] / 3.35 + rows["h200-sxm"] / 4.8) / 2
    assert shares["hopper"]["memory"] == pytest.approx(h, abs=1e-4)
    assert shares["hopper"]["gpus"] == ["h100-sxm", "h200-sxm"]
    for r in kb.load():  # every measured system is a preset, below its datasheet
        assert 0.5 < r["tb_s"] * 1e12 / get_gpu(r["gpu"]).bandwidth_bytes_s <= 1.0
        assert "aiconfigurator-core" in r["source"]


def test_the_estimator_runs_at_the_kernel_shares_even_without_rows():
    for fam, v in kb.memory_shares().items():
        assert efficiency_for(fam).memory == pytest.approx(v["memory"], abs=1e-4), fam
    # ada-gddr (L40S, L4) has kernel data and no serving rows: its own share, not the defaults'
    assert efficiency_for("ada-gddr").memory != efficiency_for("__none__").memory


@pytest.fixture(scope="module")
def cases():
    return load_cases(shipped_files())


def test_the_fit_pins_the_memory_shares_it_is_given(cases):
    p, info = fit(cases, pinned={"hopper": 0.7, "ampere": 0.9})
    assert p.families["hopper"][0] == 0.7 and p.families["ampere"][0] == 0.9
    assert not any(n.startswith(("hopper.memory", "ampere.memory")) for n in info["at_bounds"])
    free, _ = fit(cases, pinned={})
    assert free.families["hopper"][0] != 0.7


def test_each_source_has_one_vote(cases):
    """Repeating every row of one source (twice the rows, the same evidence) leaves the fit
    where it was: a source's rows share one weight."""
    src = max({c.source_key for c in cases}, key=lambda s: sum(c.source_key == s for c in cases))
    twice = cases + [dataclasses.replace(c) for c in cases if c.source_key == src]
    a, _ = fit(cases)
    b, _ = fit(twice)
    for f in a.families:
        assert b.families[f][0] == pytest.approx(a.families[f][0], rel=1e-2), f
        assert b.families[f][1] == pytest.approx(a.families[f][1], rel=1e-2), f
    assert b.layer_overhead_us == pytest.approx(a.layer_overhead_us, rel=1e-2)


def test_a_front_ends_time_is_what_it_adds_on_an_idle_server(cases):
    """A front end with three one-client TTFTs or more has the median of their excess over
    the GPU's time as its request time: after the fit their median residual is 0, whatever
    the loaded TTFTs through it would have pulled it to. A dense model's key (where its
    engine has one) the same over its dense models' light-load rows, which then leave the
    engine's own."""
    from calibration.batch import Batch
    from calibration.fit import DENSE_PIN_CLIENTS
    from calibration.params import DENSE_STACK, request_key

    p, info = fit(cases)
    pinned = dense = 0
    for e, ms in p.requests.items():
        rows = [
            c for c in cases if c.fit and c.metric == "ttft_ms" and p.resolve(request_key(c)) == e
        ]
        top = DENSE_PIN_CLIENTS if e.endswith(DENSE_STACK) else 1
        idle = [c for c in rows if c.clients <= top and (top == 1 or c.kind == "closed")]
        if len(idle) < 3:
            continue
        pinned += 1
        dense += e.endswith(DENSE_STACK)
        resid = np.array([c.measured for c in idle]) - Batch(idle).predict(p)
        assert abs(np.median(resid)) < 1.0, (e, ms)  # ms
        assert 0.0 < ms < 500.0 and f"engines.{e}.request_overhead_ms" not in info["at_bounds"]
    assert pinned >= 4 and dense >= 2  # SGLang's and trtllm-serve's, each with a dense one
