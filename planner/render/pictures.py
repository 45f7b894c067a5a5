"""Terminal pictures: the memory box, the pipe, the die and the interconnect share."""

from __future__ import annotations

from estimator import Estimate

WIDTH = 50


def bar(share: float, width: int = 30) -> str:
    s = max(0.0, min(1.0, share))
    n = round(s * width)
    return "[" + "#" * n + "." * (width - n) + f"] {100 * share:5.1f}%"


def memory_box(e: Estimate, width: int = WIDTH) -> list[str]:
    """Stacked bar of weights / KV / activations / overhead against the GPU's capacity,
    with ``|`` at the engine's usable limit; overflow is drawn past the box in ``!``."""
    m = e.memory_gb
    scale = width / m.capacity
    parts = [("W", m.weights), ("K", m.kv_cache), ("A", m.activations), ("O", m.overhead)]
    cells: list[str] = []
    acc = 0.0
    for ch, gb in parts:
        start, acc = round(acc * scale), acc + gb
        cells.extend(ch * max(0, round(acc * scale) - start))
    inside = cells[:width] + ["."] * max(0, width - len(cells))
    over = len(cells) - width
    limit = min(width - 1, max(0, round(m.usable * scale) - 1))
    if inside[limit] == ".":
        inside[limit] = "|"
    line = "[" + "".join(inside) + "]" + ("!" * min(over, 20) if over > 0 else "")
    return [
        f"{line} {m.total:.1f} / {m.capacity:.1f} GB ({m.capacity * 1e9 / 2**30:.1f} GiB as "
        "the runtime reports it)",
        f" W weights {m.weights:.1f}  K KV/state {m.kv_cache:.1f}"
        f"  A activations {m.activations:.1f}"
        f"  O overhead {m.overhead:.1f}  | engine limit {m.usable:.1f} GB",
    ]


def pictures(e: Estimate) -> list[str]:
    s = e.shares
    lines = [f"Memory box, per GPU ({e.gpu}):"]
    lines += ["  " + x for x in memory_box(e)]
    lines += [
        f"Pipe: HBM bandwidth used in decode       {bar(s['hbm_bandwidth_in_decode'])}",
        f"Die: compute used in prefill             {bar(s['compute_in_prefill'])}",
        f"Interconnect: share of decode step time  {bar(s['interconnect_in_decode'])}"
        f"  ({e.interconnect})",
    ]
    return lines
