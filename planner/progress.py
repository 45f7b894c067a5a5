"""A sweep's progress line: done/total, elapsed and time left, on a terminal's stderr;
silent when the stream is piped."""

from __future__ import annotations

import sys
import time


class Progress:
    """done/total, elapsed and time left on a terminal's stderr; silent when piped."""

    def __init__(self, total: int, done: int = 0, stream=None):
        self.total, self.done, self.t0 = total, done, time.monotonic()
        self.start_done = done
        self.stream = stream or sys.stderr
        self.on = hasattr(self.stream, "isatty") and self.stream.isatty()

    def step(self) -> None:
        self.done += 1
        if not self.on:
            return
        el = time.monotonic() - self.t0
        rate = (self.done - self.start_done) / el if el > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        self.stream.write(
            f"\rsweep {self.done}/{self.total} ({100 * self.done / self.total:.0f}%) "
            f"elapsed {_clock(el)}, left ~{_clock(left)} "
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _clock(s: float) -> str:
    if s != s:
        return "?"
    m, sec = divmod(int(round(s)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"
