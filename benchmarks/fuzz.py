"""Fuzz the CLI with malformed and extreme input: every run must end in exit 0, 1 or 2, never
a traceback, within 5 s of CPU, and every CSV it writes must hold no live formula cell.

The cases are Hypothesis strategies (so a failure in the tests shrinks to a small example):
mutated scenarios (hostile values at random keys, unknown and duplicate keys, other
encodings, deep nesting, truncation, byte noise), hostile `--set` values, and `estimate`,
`curve`, `models show` and `gpus show` with random names, splits, formats, numbers and
family options. tests/test_fuzz.py runs a bounded budget; by hand:

    python benchmarks/fuzz.py 10000          # the issue's 10,000 cases (about an hour)
"""

from __future__ import annotations

import copy
import csv
import io
import sys
import tempfile
import time
from pathlib import Path

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import main

CPU_LIMIT_S = 5.0
FORMULA = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")
BASE = {
    "name": "fuzz",
    "workloads": [
        {
            "name": "chat",
            "model": "llama-3.1-8b",
            "users": 500,
            "hours_per_person": 4,
            "utilisation": 0.6,
            "input_tokens": 1000,
            "output_tokens": 200,
            "ttft_s": 2.0,
            "tokens_per_s": 20,
            "think_time_s": 10,
        },
        {"name": "emb", "kind": "embedding", "model": "bge-m3", "docs_per_s": 50},
    ],
    "fleet": {"gpus": ["l40s", "h100-sxm"], "max_gpus_per_replica": 4},
    "cost": {"basis": "purchase", "years": 3},
    "budget": {},
}
HOSTILE = st.one_of(
    st.sampled_from(
        [
            -1,
            0,
            1,
            2**63,
            1e308,
            -1e-300,
            float("nan"),
            float("inf"),
            "yes",
            "true",
            "off",
            None,
            "",
            "=HYPERLINK(1)",
            "x\r=1+1",
            "@SUM(A1)",
            "\x00",
            "é" * 3,
            [],
            {},
            [1, 2],
            {"a": 1},
            "x" * 5000,
            1e12,
            True,
            "1e6",
            "0x10",
        ]
    ),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
KEYS = [
    ("name",),
    ("workloads", 0, "name"),
    ("workloads", 0, "model"),
    ("workloads", 0, "users"),
    ("workloads", 0, "hours_per_person"),
    ("workloads", 0, "utilisation"),
    ("workloads", 0, "input_tokens"),
    ("workloads", 0, "output_tokens"),
    ("workloads", 0, "ttft_s"),
    ("workloads", 0, "ttft_percentile"),
    ("workloads", 0, "tokens_per_s"),
    ("workloads", 0, "think_time_s"),
    ("workloads", 0, "weights"),
    ("workloads", 0, "kv_cache"),
    ("workloads", 0, "engine"),
    ("workloads", 0, "prefix_hit_rate"),
    ("workloads", 0, "chunk_tokens"),
    ("workloads", 0, "disaggregation"),
    ("workloads", 0, "speculative"),
    ("workloads", 0, "images_per_request"),
    ("workloads", 0, "kind"),
    ("workloads", 1, "docs_per_s"),
    ("workloads", 1, "model"),
    ("workloads", 1, "input_tokens"),
    ("workloads", 1, "max_batch_latency_s"),
    ("workloads", 1, "kind"),
    ("fleet", "gpus"),
    ("fleet", "vendors"),
    ("fleet", "max_gpus_per_replica"),
    ("fleet", "available"),
    ("fleet", "max_types"),
    ("fleet", "single_type"),
    ("cost", "basis"),
    ("cost", "years"),
    ("cost", "pue"),
    ("cost", "electricity_usd_per_kwh"),
    ("cost", "cost_of_capital"),
    ("budget", "max_usd"),
    ("budget", "max_power_kw"),
    ("confidence",),
    ("error_quantile",),
    ("workloads",),
    ("fleet",),
    ("unknown_key",),
]


@st.composite
def scenario_text(draw) -> bytes:
    data = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(0, 4))):
        path = draw(st.sampled_from(KEYS))
        cur = data
        for p in path[:-1]:
            cur = cur[p] if isinstance(cur, dict | list) and _has(cur, p) else None
            if cur is None:
                break
        if isinstance(cur, dict | list) and _has(cur, path[-1]) or isinstance(cur, dict):
            if draw(st.booleans()) and isinstance(cur, dict):
                cur.pop(path[-1], None)
            else:
                cur[path[-1]] = draw(HOSTILE)
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    kind = draw(st.sampled_from(["plain"] * 6 + ["dup", "deep", "truncate", "noise", "enc"]))
    if kind == "dup":
        text = text.replace("users:", "users: 1\n  users:", 1)
    elif kind == "deep":
        n = draw(st.integers(10, 3000))
        text += "deep: " + "[" * n + "]" * n + "\n"
    elif kind == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    raw = text.encode()
    if kind == "noise":
        i = draw(st.integers(0, max(len(raw) - 1, 0)))
        raw = raw[:i] + draw(st.binary(min_size=1, max_size=8)) + raw[i:]
    elif kind == "enc":
        raw = text.encode(
            draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "cp1252"])), "replace"
        )
    return raw


def _has(container, key) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(key, int) and key < len(container)


NUMBER_TEXT = st.one_of(
    st.integers(-5, 5000).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "x", "", "0", "-1", "3.5", "1e12"]),
)
NAMES = st.sampled_from(
    [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "qwen3-30b-a3b",
        "deepseek-v3",
        "mixtral-8x7b",
        "flux1-dev",
        "whisper-large-v3",
        "bge-m3",
        "pi0",
        "var-d30",
        "qwen2.5-vl-7b",
        "vjepa2-vitl",
        "nonexistent",
        "LLAMA-3.1-8B",
        "=cmd",
        "",
        "../../etc/passwd",
    ]
)
BAD_WORDS = ["int3", "tgi", "0x0", "x", "7x9", "0:1", "3:", "=1+1", "\x00", "max"]
GPU_NAMES = st.sampled_from(["h100-sxm", "l4", "mi300x", "b200", "rtx-4090", "gaudi3", "nope"])


def _sometimes(draw) -> bool:
    return draw(st.integers(0, 2)) == 0


@st.composite
def cli_args(draw) -> list[str]:
    cmd = draw(
        st.sampled_from(["estimate", "estimate", "curve", "curve", "models", "gpus", "sweep"])
    )
    if cmd == "models":
        return ["models", "show", draw(NAMES)]
    if cmd == "gpus":
        return ["gpus", "show", draw(GPU_NAMES)]
    if cmd == "sweep":
        key = draw(st.sampled_from(["workloads.chat.users", "budget.max_usd", "fleet.gpus", "x.y"]))
        vals = ",".join(draw(st.lists(NUMBER_TEXT, min_size=1, max_size=3)))
        return ["sweep", "SCENARIO", "--set", f"{key}={vals}"]
    args = [cmd, "--model", draw(NAMES), "--gpu", draw(GPU_NAMES)]
    options = {
        "--gpus": ["1", "2", "4", "8"],
        "--tp": ["1", "2", "4", "8"],
        "--pp": ["1", "2"],
        "--ep": ["1", "2", "8"],
        "--input-tokens": ["16", "1024", "8000", "32000"],
        "--output-tokens": ["1", "64", "512", "4000"],
        "--think-time": ["0", "1.5", "30"],
        "--prefix-hit-rate": ["0", "0.5", "0.9"],
        "--spec-tokens": ["2", "4"],
        "--spec-acceptance": ["0", "0.7", "1"],
        "--weights": ["bf16", "fp8", "int4", "fp4"],
        "--kv": ["bf16", "fp8", "int4"],
        # every family's engines, and a near miss the estimator must name
        "--engine": [
            "vllm",
            "sglang",
            "trtllm",
            "faster-whisper",
            "torch-compile",
            "tensorrt",
            "torch-compil",
        ],
    }
    if cmd == "estimate":
        options |= {
            "--batch": ["1", "8", "64", "max"],
            "--steps": ["1", "20", "50"],
            "--frames": ["1", "49", "64"],
            "--cameras": ["1", "3"],
            "--images": ["0", "1", "4"],
            "--beam": ["1", "5"],
            "--audio-seconds": ["5", "30", "600"],
            "--control-hz": ["10", "50", "200"],
            "--resolution": ["512x512", "1024x1024", "256x256"],
        }
    else:
        options |= {
            "--users-max": ["8", "64", "500"],
            "--ttft-s": ["0.2", "1", "5"],
            "--tokens-per-s": ["5", "30"],
            "--percentile": ["50", "90", "99"],
            "--disaggregate": ["1:2", "2:1", "1:1"],
        }
    # a clean case reaches the physics; a hostile one changes one option to a hostile value
    hostile = draw(st.one_of(st.none(), st.sampled_from(list(options))))
    for opt, valid in options.items():
        if opt == hostile:
            args += [opt, draw(st.one_of(NUMBER_TEXT, st.sampled_from(BAD_WORDS)))]
        elif _sometimes(draw):
            args += [opt, draw(st.sampled_from(valid))]
    if cmd == "curve" and _sometimes(draw):
        args += ["--users", ",".join(draw(st.lists(st.sampled_from(["1", "4", "32"]), max_size=4)))]
    if cmd == "estimate":  # the family switches, on any model (others ignore them)
        flags = ["--fast-accum", "--offload", "--guidance", "--no-guidance"]
        args += draw(st.lists(st.sampled_from(flags), max_size=2, unique=True))
    return args


CASES = st.one_of(
    st.tuples(st.just("scenario"), scenario_text(), st.sampled_from(["table", "json", "csv"])),
    st.tuples(st.just("cli"), cli_args(), st.just("json")),
)


def check(case, folder: Path) -> str:
    """Run one case; returns a short description; raises AssertionError on a failure."""
    kind, payload, fmt = case
    scenario = folder / "scenario.yaml"
    out = folder / "out.csv"
    out.unlink(missing_ok=True)
    if kind == "scenario":
        scenario.write_bytes(payload)
        args = ["solve", str(scenario), "--top", "2"]
        args += ["--format", "json"] if fmt == "json" else []
        args += ["--out", str(out)] if fmt == "csv" else []
    else:
        scenario.write_text(yaml.safe_dump(BASE))
        args = [str(scenario) if a == "SCENARIO" else a for a in payload]
        args += ["--format", "json"] if args[0] in ("estimate", "curve", "sweep") else []
    t0 = time.process_time()
    res = CliRunner().invoke(main, args)
    cpu = time.process_time() - t0
    where = " ".join(a[:40] for a in args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"traceback: {res.exception!r} on {where}")
    assert res.exit_code in (0, 1, 2), f"exit {res.exit_code} on {where}"
    assert cpu <= CPU_LIMIT_S, f"{cpu:.1f} s CPU on {where}"
    if out.exists():
        for row in csv.reader(io.StringIO(out.read_text())):
            for cell in row:
                for line in cell.split("\n"):
                    assert not line.startswith(FORMULA), f"live formula {cell!r} on {where}"
    return f"{args[0]} exit {res.exit_code}"


def run(count: int, seed: int = 0) -> dict[str, int]:
    """Run ``count`` generated cases; returns counts of outcomes (fails on the first bad one)."""
    counts: dict[str, int] = {}
    folder = Path(tempfile.mkdtemp(prefix="planner-fuzz-"))

    @settings(
        max_examples=count,
        derandomize=seed == 0,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(CASES)
    def one(case):
        outcome = check(case, folder)
        counts[outcome] = counts.get(outcome, 0) + 1

    one()
    return counts


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    t0 = time.perf_counter()
    counts = run(n)
    total = sum(counts.values())
    print(f"{total} runs (Hypothesis also replays and shrinks), 0 tracebacks, exit codes:")
    for k, v in sorted(counts.items()):
        print(f"  {k}: {v}")
    print(f"{time.perf_counter() - t0:.0f} s")
