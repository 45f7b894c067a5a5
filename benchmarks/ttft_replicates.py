"""How much the same published setup measures differently from run to run: InferenceX's
history of DeepSeek-R1 runs (the same hardware, engine, precision, split, lengths and clients
re-run on other days), pair by pair, for median TTFT, median time per output token and
throughput per GPU. Runs days apart (mostly the same engine image) say what a re-run costs;
months apart, engine versions changed too. The answer bounds what any model's TTFT error can
be: a miss much larger than the re-run spread is the model's, not the measurement's.

Not a speed benchmark: evidence, run by hand on the public capture of InferenceX's API
(github:vngcloud/InferenceX-app packages/app/cypress/fixtures/api/benchmarks-history.json,
read at 7fe6d62ad57a3df061be692e86578c7111d880c7: 1,462 rows, 133 runs, 2025-12-05 to
2026-06-11).

Run: python benchmarks/ttft_replicates.py PATH/TO/benchmarks-history.json
"""

from __future__ import annotations

import itertools
import json
import sys
from datetime import date

import numpy as np

SETUP = ("hardware", "framework", "precision", "decode_tp", "decode_ep", "decode_dp_attention")
LOAD = ("isl", "osl", "conc")
METRICS = {"TTFT": "median_ttft", "time per token": "median_tpot", "tok/s per GPU": "tput_per_gpu"}


def pairs(rows: list[dict]) -> list[dict]:
    """|log ratio| of each metric between every two runs of one setup at one load."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["spec_method"] != "none" or r["disagg"]:
            continue  # speculative and disaggregated runs are other setups
        groups.setdefault(tuple(r[k] for k in SETUP + LOAD), []).append(r)
    out = []
    for runs in groups.values():
        for a, b in itertools.combinations(runs, 2):
            if a["run_url"] == b["run_url"]:
                continue
            days = abs((date.fromisoformat(a["date"]) - date.fromisoformat(b["date"])).days)
            ratio = {}
            for name, key in METRICS.items():
                x, y = a["metrics"].get(key), b["metrics"].get(key)
                ratio[name] = abs(np.log(y / x)) if x and y else np.nan
            out.append({"days": days, **ratio})
    return out


def report(label: str, ps: list[dict]) -> None:
    cells = []
    for name in METRICS:
        v = np.array([p[name] for p in ps], float)
        v = v[np.isfinite(v)]
        med, p90 = np.exp(np.median(v)), np.exp(np.percentile(v, 90))
        cells.append(f"{name} {100 * (med - 1):4.1f}% / {100 * (p90 - 1):4.1f}%")
    print(f"{label:24s} {len(ps):5d} pairs  " + "   ".join(cells))


def main(path: str) -> None:
    with open(path) as f:
        rows = json.load(f)
    ps = pairs(rows)
    print("median / p90 of the difference between two runs of one setup (|log ratio|)")
    report("runs <= 7 days apart", [p for p in ps if p["days"] <= 7])
    report("8-60 days apart", [p for p in ps if 7 < p["days"] <= 60])
    report("> 60 days apart", [p for p in ps if p["days"] > 60])
    report("all", ps)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
