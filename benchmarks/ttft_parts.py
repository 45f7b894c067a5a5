"""Whether the TTFT miss is one of scale: every published TTFT row that `planner validate`
scores through the load model (a closed loop or a request rate), its prediction split into
the serving stack's own time (F), the prompt's lone prefill (A) and its wait behind other
prompts (Q, the rest), and three free factors on those parts fitted in-sample per regime
(robust least squares on log(predicted / measured)). If the median barely moves with the
factors free, what the rows miss is not the size of a part the model has but scatter from
row to row. Not a speed benchmark: evidence, run by hand.

Run: python benchmarks/ttft_parts.py
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from calibration import shipped_dir
from calibration.cases import Case, load_rows, prepare
from calibration.params import current_params, request_key
from calibration.scoring import efficiency_of, serving_metric
from estimator.steps import ServingOptions, prepare_steps


def parts() -> list[dict]:
    rows = load_rows(sorted(shipped_dir().glob("llm_measured_*.csv")))
    cases = [
        c
        for i, r in enumerate(rows)
        if isinstance(c := prepare(i, r), Case)
        and c.metric == "ttft_ms"
        and c.kind in ("closed", "open")
    ]
    params = current_params(sorted({c.family for c in cases}))
    out = []
    for c in cases:
        eff = efficiency_of(params, c.family, c.ev.engine.name, c.precision, request_key(c))
        st = prepare_steps(
            c.ev.with_efficiency(eff), c.isl, c.osl, ServingOptions(arrivals=c.arrivals)
        )
        pred = serving_metric(c, params)
        f, a = float(st.request_s) * 1e3, float(st.s_alone) * 1e3
        regime = "request rate" if c.kind == "open" else "one client"
        if c.kind == "closed" and c.clients > 1:
            regime = f"clients, {c.arrivals}"
        out.append(
            dict(
                regime=regime,
                measured=c.measured,
                parts=(f, a, pred - f - a),
                publisher=c.source_key,
            )
        )
    return out


def report(name: str, rows: list[dict]) -> None:
    m = np.array([r["measured"] for r in rows])
    p = np.array([r["parts"] for r in rows])

    def resid(k):
        return np.log(np.clip(p @ k, 1e-3, None) / m)

    fit = least_squares(resid, [1.0, 1.0, 1.0], bounds=(0, 10), loss="soft_l1", f_scale=0.2)
    before, after = (np.median(np.abs(np.exp(resid(k)) - 1)) * 100 for k in ([1, 1, 1], fit.x))
    factors = ", ".join(f"{n} {v:.2f}" for n, v in zip("FAQ", fit.x, strict=True))
    print(f"{name:22s} {len(m):4d} rows  median {before:5.1f}% -> {after:5.1f}%  ({factors})")


def publisher_oracle(rows: list[dict]) -> None:
    """The median miss left when each publisher's rows are scaled by their own median
    measured/predicted: the scatter inside a publisher's runs."""
    lr = np.array([np.log(sum(r["parts"]) / r["measured"]) for r in rows])
    pubs = np.array([r["publisher"] for r in rows])
    off = np.zeros(len(rows))
    for p in set(pubs):
        off[pubs == p] = np.median(lr[pubs == p])
    before, after = (np.median(np.abs(np.exp(x) - 1)) * 100 for x in (lr, lr - off))
    print(
        f"{'publisher offsets':22s} {len(rows):4d} rows  median {before:5.1f}% -> {after:5.1f}%"
        f"  ({len(set(pubs))} publishers, each scaled by its own median)"
    )


def main() -> None:
    rows = parts()
    report("all", rows)
    for regime in sorted({r["regime"] for r in rows}):
        report(regime, [r for r in rows if r["regime"] == regime])
    publisher_oracle(rows)


if __name__ == "__main__":
    main()
