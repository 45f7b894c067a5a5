"""The fitted factors as one value (:class:`Params`): per GPU family memory and compute
shares, per family x precision compute groups, the overheads, and per serving engine its
host overheads; and the ones the estimator runs with now (:func:`current_params`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.efficiency import calibration, compute_share, efficiency_for

# A dense model's request key beside its engine's (request_key below):
# MoE models' prompt passes carry time the roofline does not price, which their one-client
# TTFTs put into the engine's fitted front end (SGLang's MoE models 86-213 ms beyond their
# GPU time, its dense ones -67 to +59 ms); where dense models' light-load TTFTs say what the
# stack itself adds, their own value serves them (calibration.fit)
DENSE_STACK = ":dense"


def request_key(case) -> str:
    """The request time a row is predicted with: a dense model's through its engine's own
    server (``DENSE_STACK``), else its front end's (``case.server``)."""
    own = case.server == case.ev.engine.name
    return case.server + DENSE_STACK if own and not case.ev.model.is_moe else case.server


GLOBAL = ("collective_base_us", "layer_overhead_us", "step_overhead_ms", "seq_overhead_us")


@dataclass
class Params:
    families: dict[str, tuple[float, float]]  # family -> (memory, compute)
    collective_base_us: float
    layer_overhead_us: float
    step_overhead_ms: float
    seq_overhead_us: float
    # engine -> (step_overhead_ms, seq_overhead_us): its host's work per step and per
    # running sequence (engines without enough rows use the two above)
    engines: dict[str, tuple[float, float]] = field(default_factory=dict)
    # family -> calibration-shaped compute groups (compute_precision, rows, compute_at)
    groups: dict[str, dict] = field(default_factory=dict)
    # serving front end (an engine's own server, or another: calibration.cases.frontend_of)
    # -> the serving stack's own time to a first token, ms (0 for the others)
    requests: dict[str, float] = field(default_factory=dict)
    int4_stream: float = 1.0  # Efficiency.int4_stream

    def eff(self, family: str) -> tuple[float, float]:
        return self.families.get(family, self.families.get("default", (0.8, 0.6)))

    def compute(self, family: str, precision: str | None) -> float:
        """The compute factor at ``precision``, by the estimator's own rule."""
        shaped = {
            f: {"compute": c, **self.groups[f]}
            for f, (_, c) in self.families.items()
            if f in self.groups
        }
        return compute_share(shaped, self.eff("default")[1], family, precision)

    def host(self, engine: str) -> tuple[float, float]:
        return self.engines.get(engine, (self.step_overhead_ms, self.seq_overhead_us))

    def resolve(self, key: str) -> str:
        """The key whose request time a row reads: a dense model's (``<engine>:dense``)
        falls back to its engine's where dense models have none of their own."""
        if key not in self.requests and key.endswith(DENSE_STACK):
            return key[: -len(DENSE_STACK)]
        return key

    def request(self, key: str) -> float:
        return self.requests.get(self.resolve(key), 0.0)


def current_params(families: list[str]) -> Params:
    """The factors the estimator runs with now: for ``families`` and every calibrated one
    (the compute rule averages over all of them)."""
    fams = {}
    cal_fams = list(calibration().get("families") or {})
    for f in dict.fromkeys([*families, *cal_fams, "default"]):
        e = efficiency_for(f if f != "default" else "__none__")
        fams[f] = (e.memory, e.compute)
    e = efficiency_for("__none__")
    engines, requests = {}, {}  # host work where an engine has its own; request time
    for n, entry in (calibration().get("engines") or {}).items():
        h = efficiency_for("__none__", engine=n)
        if "step_overhead_ms" in entry:
            engines[n] = (h.step_overhead_ms, h.seq_overhead_us)
        if h.request_overhead_ms > 0:
            requests[n] = h.request_overhead_ms
        if "dense_request_overhead_ms" in entry:
            requests[n + DENSE_STACK] = float(entry["dense_request_overhead_ms"])
    for n, entry in (calibration().get("frontends") or {}).items():
        requests[n] = float(entry.get("request_overhead_ms", 0.0))
    cal = (calibration().get("families") or {}).items()
    groups = {
        f: {k: v for k, v in g.items() if k not in ("memory", "compute")}
        for f, g in cal
        if "compute" in g
    }
    return Params(
        fams,
        e.collective_base_us,
        e.layer_overhead_us,
        e.step_overhead_ms,
        e.seq_overhead_us,
        engines,
        groups,
        requests,
        e.int4_stream,
    )
