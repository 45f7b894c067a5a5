"""How long the page waits: response times of the page's API (`planner serve`) over a local
HTTP connection, as the browser sees them: an estimate (what a slider move asks), the
saturation/scaling/fit checks, a load curve, and a solve of a one-workload scenario over the
whole catalogue (first call cold, then warm), each as min / median / max.

Run: python benchmarks/bench_api.py [runs]
"""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn

from planner.web.app import create_app

HERE = Path(__file__).resolve().parent


def _stats(xs: list[float]) -> str:
    ms = [1e3 * x for x in xs]
    return f"min {min(ms):.1f} ms, median {statistics.median(ms):.1f} ms, max {max(ms):.1f} ms"


def _time(url: str, data: bytes | None = None) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=600) as r:
        r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - t


def main(runs: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(), port=port, log_level="warning"))
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    est = "model=llama-3.1-70b&gpu=h100-sxm&gpus=2&weights=fp8&batch={b}&input_tokens=2000"
    cases = {
        "estimate (slider move)": [f"/api/estimate?{est.format(b=b)}" for b in range(1, runs + 1)],
        "saturation": ["/api/saturation?model=llama-3.1-8b&gpu=h100-sxm&compare_weights=int4"],
        "scaling": ["/api/scaling?model=llama-3.1-70b&gpu=a100-80gb-sxm,a100-80gb-pcie&batch=32"],
        "fit (whole catalogue)": ["/api/fit?model=llama-3-70b&weights=int4&users=4"],
        "curve": ["/api/curve?model=llama-3.1-8b&gpu=l4"],
    }
    _time(base + "/api/models")  # the first call loads the catalogue
    for name, urls in cases.items():
        xs = [_time(base + urls[i % len(urls)]) for i in range(runs)]
        print(f"{name:28s} {_stats(xs)}")
    body = (HERE / "one_workload.yaml").read_bytes()
    cold = _time(base + "/api/solve", body)
    warm = [_time(base + "/api/solve", body) for _ in range(runs)]
    print(f"{'solve, first (cold caches)':28s} {1e3 * cold:.0f} ms")
    print(f"{'solve, warm':28s} {_stats(warm)}")
    srv.should_exit = True


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
