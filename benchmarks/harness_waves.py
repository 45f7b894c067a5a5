"""How a synchronised benchmark harness behaves: published closed-loop TTFTs (fixed lengths,
no think time, every client started together) beside the waves formula `planner validate`
scores them with (`estimator.harness.waves_point`, through `calibration.scoring`), the
spread-arrivals load model the planner sizes people with (`arrivals="spread"`), where the
measurement sits between the two (0: spread, 1: waves, on a log scale), and the
iteration-level simulator started the same way (`estimator.simulate.simulate(start=
"together")`, the first two waves left out), on the very steps validate builds for each row.
Not a speed benchmark: evidence for the harness model, run by hand.

Run: python benchmarks/harness_waves.py [source substring] [max clients] [tokens per step]
     (default: the NIM sweeps, up to 100 clients; "" and 100000: every source and load;
     tokens per step: the simulator's prefill budget per iteration, default the engine's as
     the row ran it). Neither NIM sweep publishes its budget: at 2048 the simulator puts the
     Llama-3.3-70B TP2 sweep's TTFTs at 0.6-1.5x the measured below saturation (500/2000 at
     25-100 clients: 199-210 ms against 148-230), while the Llama-3.1-8B sweep keeps rising
     with clients past what any budget of 8192 or less gives (1000/1000: 268/415/615 ms
     measured, 131-138 simulated at 8192): the budget decides whether a harness stays in
     lockstep.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from calibration import shipped_dir
from calibration.cases import Case, load_rows, prepare
from calibration.params import current_params, request_key
from calibration.scoring import efficiency_of, serving_metric
from estimator.simulate import simulate
from estimator.steps import ServingOptions, prepare_steps


def main(source: str = "docs.nvidia.com/nim", most: int = 100, chunk: int | None = None) -> None:
    rows = load_rows(sorted(shipped_dir().glob("llm_measured_*.csv")))
    cases = [c for i, r in enumerate(rows) if isinstance(c := prepare(i, r), Case)]
    cases = [
        c
        for c in cases
        if c.kind == "closed" and c.metric == "ttft_ms" and source in c.row.get("source", "")
    ]
    cases = [c for c in cases if 1 < c.clients <= most and c.replicas == 1]
    params = current_params(sorted({c.family for c in cases}))
    head = ("model", "in/out", "clients", "measured", "waves", "spread", "position", "simulator")
    print("{:28} {:>11} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9}  (ms)".format(*head))
    err_w, err_s = [], []
    for c in cases:
        eff = efficiency_of(params, c.family, c.ev.engine.name, c.precision, request_key(c))
        ev = c.ev.with_efficiency(eff)
        st = prepare_steps(ev, c.isl, c.osl, ServingOptions(arrivals="waves", chunk_tokens=chunk))
        n = int(c.clients)
        sim = simulate(st, n, 0.0, requests=4 * n, warmup=2 * n, start="together")
        waves = serving_metric(replace(c, arrivals="waves"), params)  # as the formula reads it
        spread = serving_metric(replace(c, arrivals="spread"), params)
        # where the measurement sits, in log terms: 0 at spread arrivals, 1 at the waves
        pos = np.log(c.measured / spread) / np.log(waves / spread) if waves > spread else np.nan
        err_w.append(abs(waves / c.measured - 1))
        err_s.append(abs(sim.ttft_mean_s * 1e3 / c.measured - 1))
        name = c.row["model"].split("/")[-1][:28]
        print(
            f"{name:28} {c.isl:>5}/{c.osl:<5} {n:>7} {c.measured:>9.0f} {waves:>9.0f} "
            f"{spread:>9.0f} {pos:>8.2f} {sim.ttft_mean_s * 1e3:>9.0f}"
        )
    if not cases:
        print("no closed-loop TTFT rows match")
        return
    for label, err in (("waves", err_w), ("simulator", err_s)):
        e = 100 * np.array(err)
        print(
            f"{label}: {len(e)} rows, median abs. error {np.median(e):.1f}%, "
            f"p90 {np.percentile(e, 90):.1f}%"
        )


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "docs.nvidia.com/nim",
        int(sys.argv[2]) if len(sys.argv) > 2 else 100,
        int(sys.argv[3]) if len(sys.argv) > 3 else None,
    )
