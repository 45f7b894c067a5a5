"""Capacity of one replica: the most concurrent sessions (seats) it serves while meeting the
workload's targets *under load* (queueing, prefill/decode interference, think time; see
:mod:`estimator.load`) and fitting memory. This is the interface other model families
implement with their own demand unit (images/s, audio streams, docs/s...)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator import Evaluator
from estimator.bands import pessimistic_factor
from estimator.curves import load_curve, users_past_saturation
from estimator.knots import BATCH_KNOTS, last_knot
from estimator.load import load_point, saturation_rate
from estimator.steps import Steps, prepare_steps_many

from . import seat_search
from .workloads import LLMWorkload


@dataclass(frozen=True)
class Capacity:
    units: int  # seats this replica serves within every target (0: none)
    binding: str  # what stops it going higher: memory | ttft | tokens_per_s
    best_ttft_s: float  # at one session: the best this candidate can do
    best_tokens_per_s: float
    max_batch_memory: int  # KV slots


@dataclass(frozen=True)
class OperatingPoint:
    """Metrics at a given load per replica."""

    batch: int  # sessions (seats) on the replica
    ttft_s: float  # at the workload's percentile
    ttft_mean_s: float
    tokens_per_s: float
    output_tokens_per_s: float
    bottleneck: str
    kv_gb: float


def targets(w: LLMWorkload, ev: Evaluator) -> tuple[float | None, float | None]:
    """The TTFT and per-user speed the point estimate must reach on this replica (its GPU
    and model class) so the real ones meet the workload's targets at the scenario's
    confidence (bands: estimator/bands.py). Without a confidence, the targets themselves."""
    c, two, g, m = *(w._error_at or (None, False)), ev.gpu, ev.model
    ttft = w.ttft_s / pessimistic_factor("ttft", g, c, m, two) if w.ttft_s else None
    tps = w.tokens_per_s * pessimistic_factor("tpot", g, c, m, two) if w.tokens_per_s else None
    return ttft, tps


def steps_for(ev: Evaluator, w: LLMWorkload, part: tuple | None = None):
    """The load model's inputs for a workload on a candidate (remembered per
    :func:`replica_key`). A vision-language workload adds its images' visual tokens to every
    prompt and its image encoder's time to every prefill (on this candidate's GPUs)."""
    return memo(("steps", *replica_key(ev, w, part)), lambda: _prepare([ev], w)[0])


def prefetch_steps(evs: list[Evaluator], w: LLMWorkload, part: tuple | None = None) -> None:
    """Remember :func:`steps_for` of many candidates of one workload, those not remembered
    yet prepared together (:func:`~estimator.steps.prepare_steps_many`: one step-time call
    per split for every GPU type, not one per candidate)."""
    part = part or workload_part(w)
    keys = [("steps", *replica_key(ev, w, part)) for ev in evs]
    todo = {k: ev for k, ev in zip(keys, evs, strict=True) if k not in _MEMO}
    if todo:
        for k, st in zip(todo, _prepare(list(todo.values()), w), strict=True):
            _remember(k, st)


def _prepare(evs: list[Evaluator], w: LLMWorkload) -> list:
    vlm = w.vision_model
    if vlm is None or not w.images_per_request:
        return prepare_steps_many(evs, w.input_tokens, w.output_tokens, w.serving())
    width, height = w.image_size()
    vis, _ = vlm.tokens(width, height)
    enc = [
        float(vlm.vision_seconds(ev.gpu, ev.par, w.images_per_request, width, height)) for ev in evs
    ]
    tokens = w.input_tokens + w.images_per_request * vis
    return prepare_steps_many(evs, tokens, w.output_tokens, w.serving(), encoder_s=enc)


def _proxy(st: Steps) -> tuple:
    """The load-model inputs capacity rises with, once per (remembered, unchanging) steps:
    kept on the steps themselves, so it lives exactly as long as they are remembered."""
    proxy = st.__dict__.get("_proxy")
    if proxy is None:
        proxy = (
            st.slots,
            saturation_rate(st) if st.slots else 0.0,
            -float(st.t_iter(1)),
            -st.s_alone,
        )
        st.__dict__["_proxy"] = proxy
    return proxy


def pareto_splits(cands, w: LLMWorkload, part: tuple | None = None):
    """Of the splits of one GPU type and size, keep those no other split beats on every
    load-model input at once (KV slots, saturation rate, single-stream iteration, idle
    prefill): capacity rises with each, so a split beaten on all of them serves fewer seats.
    Yields (candidate, evaluator, steps). ``part``: :func:`workload_part` of ``w``, when the
    caller already has it."""
    groups: dict[tuple, list] = {}
    part = part or workload_part(w)
    for cand, ev in cands:
        st = steps_for(ev, w, part)
        proxy = _proxy(st)
        groups.setdefault((cand.gpu.name, cand.gpus), []).append((cand, ev, st, proxy))
    for members in groups.values():
        for cand, ev, st, p in members:
            beaten = any(
                all(a >= b for a, b in zip(q, p, strict=True)) and q != p for _, _, _, q in members
            )
            if not beaten:
                yield cand, ev, st


def _curve(ev: Evaluator, w: LLMWorkload, st, split: tuple[int, int] | None):
    """The load curve of one replica (``split`` None) or a disaggregated unit, and a user
    count past its saturation (the top of the capacity scan)."""
    think = w.serving().think_time_s
    curve = load_curve(ev, st, think, w.ttft_percentile, split, w.serving().arrivals)
    return curve, users_past_saturation(st, think, split)


# Capacities and operating points depend only on the replica and the workload's per-request
# shape and targets, not on its demand (users, hours), budget or prices: a solve that changes
# only those (a slider, a sweep over users) reuses them. Keyed by every input they read.
_MEMO: OrderedDict[tuple, Any] = OrderedDict()
MEMO_MAX = 50_000  # entries kept (least recently used dropped first)


def replica_key(ev: Evaluator, w: LLMWorkload, part: tuple | None = None) -> tuple:
    """Everything a replica's load-model inputs (:func:`steps_for`) depend on. ``part``:
    :func:`workload_part` of ``w``, when the caller keys many replicas of it."""
    return (*_evaluator_key(ev), *(part or workload_part(w)))


def _evaluator_key(ev: Evaluator) -> tuple:
    """The replica's part of :func:`replica_key`, once per evaluator (kept on it: candidates'
    evaluators are remembered across solves, and hashing its frozen fields each time was
    most of a warm solve's keying)."""
    key = ev.__dict__.get("_replica_key")
    if key is None:
        key = (
            config_digest(ev.model),  # a digest: whole configs would fill memory
            config_digest(ev.gpu),
            ev.par,  # frozen: hashed and compared by its fields
            ev.wfmt.name,
            ev.kvfmt.name,
            ev.engine,
            ev.machine.eff,
        )
        key = (_Hashed(key),)
        ev.__dict__["_replica_key"] = key
    return key


class _Hashed:
    """A tuple whose hash is computed once (tuples hash every field on every lookup)."""

    __slots__ = ("items", "_hash")

    def __init__(self, items: tuple):
        self.items, self._hash = items, hash(items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return isinstance(other, _Hashed) and (self is other or self.items == other.items)


def workload_part(w: LLMWorkload) -> tuple:
    """What of a workload the load-model inputs read: the request's shape and serving."""
    return (
        w.input_tokens,
        w.output_tokens,
        w.serving().model_dump_json(),
        w.images_per_request,
        w.image_resolution,
        _digest(repr(w.vision_model)),  # a dataclass of its config values (None: no images)
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_DIGESTS: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept alive; its digest)


def config_digest(obj) -> str:
    """A model's or GPU's config digest, computed once per object: a solve keys hundreds of
    candidates on the same few objects (dumping a config is most of a warm solve's keying).
    Model and GPU objects are not changed in place once built (the catalogue shares them
    between calls already)."""
    hit = _DIGESTS.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    if len(_DIGESTS) > 4096:
        _DIGESTS.clear()
    digest = _digest(obj.model_dump_json())
    _DIGESTS[id(obj)] = (obj, digest)
    return digest


def config_key(
    ev: Evaluator, w: LLMWorkload, split: tuple[int, int] | None, part: tuple | None = None
) -> tuple:
    """Everything a replica's capacity and operating points depend on: the replica, the
    targets it is held to and the percentile they are read at, and the disaggregation."""
    ttft, tps = targets(w, ev)
    return (*replica_key(ev, w, part), w.ttft_percentile, ttft, tps, split)


def memo(key: tuple, compute: Callable[[], Any]) -> Any:
    """The remembered value of ``key``, or ``compute()`` remembered."""
    if key in _MEMO:
        _MEMO.move_to_end(key)
        return _MEMO[key]
    return _remember(key, compute())


def _remember(key: tuple, value: Any) -> Any:
    _MEMO[key] = value
    if len(_MEMO) > MEMO_MAX:
        _MEMO.popitem(last=False)
    return value


def llm_capacity(
    ev: Evaluator, w: LLMWorkload, steps=None, split: tuple[int, int] | None = None
) -> Capacity:
    """Seats one replica (or disaggregated unit) serves within the targets (remembered per
    :func:`config_key`; see :func:`scan_capacity`)."""
    return memo(("capacity", *config_key(ev, w, split)), lambda: scan_capacity(ev, w, steps, split))


def scan_capacity(
    ev: Evaluator, w: LLMWorkload, steps=None, split: tuple[int, int] | None = None
) -> Capacity:
    """Largest number of sessions whose TTFT (at the percentile) and per-user speed meet the
    targets and whose KV demand fits (:func:`~planner.seat_search.search`). ``split``: a
    disaggregated unit (prefill, decode replicas)."""
    st = steps or steps_for(ev, w)
    if st.slots < 1:
        return Capacity(0, "memory", float("inf"), 0.0, 0)
    curve, n_hi = _curve(ev, w, st, split)
    ttft, tps = _nan_if_none(targets(w, ev))

    def evaluate(users, _k, bracket):  # a disaggregated unit's curve takes no rate bracket
        return curve(users) if split else curve(users, rate_bracket=bracket)

    found = seat_search.search(evaluate, [n_hi], [ttft], [tps])
    return _capacities(found, [st.slots])[0]


def llm_capacities(items: list[tuple[Evaluator, Steps, LLMWorkload]]) -> list[Capacity]:
    """:func:`llm_capacity` of many replicas, of one workload or several: their load curves
    solved together, each search round one stacked :func:`~estimator.load.load_point` call
    over every replica (rows are independent: the same numbers)."""
    out: list[Capacity | None] = [None] * len(items)
    parts: dict[int, tuple] = {}
    todo, keys = [], []
    for i, (ev, st, w) in enumerate(items):
        part = parts.get(id(w))
        if part is None:
            part = parts[id(w)] = workload_part(w)
        key = ("capacity", *config_key(ev, w, None, part))
        if key in _MEMO:
            out[i] = memo(key, lambda: None)  # a hit: compute is not called
        elif st.slots < 1:
            out[i] = _remember(key, Capacity(0, "memory", float("inf"), 0.0, 0))
        else:
            todo.append(i)
            keys.append(key)
    if todo:
        steps = [items[i][1] for i in todo]
        loads = [items[i][2] for i in todo]
        stacked = Steps.stack(steps)
        think = np.array([w.serving().think_time_s for w in loads])
        pct = np.array([w.ttft_percentile for w in loads])
        goals = np.array(
            [_nan_if_none(targets(w, items[i][0])) for i, w in zip(todo, loads, strict=True)]
        )
        n_hi = [users_past_saturation(st, t) for st, t in zip(steps, think.tolist(), strict=True)]

        def evaluate(users, k, bracket):
            return load_point(stacked, users, think[k], pct[k], config=k, rate_bracket=bracket)

        guess = speed_bound_users(stacked, think, goals[:, 1], np.asarray(n_hi, float))
        found = seat_search.search(evaluate, n_hi, goals[:, 0], goals[:, 1], guess)
        for i, key, cap in zip(
            todo, keys, _capacities(found, [st.slots for st in steps]), strict=True
        ):
            out[i] = _remember(key, cap)
    return out  # type: ignore[return-value]


def speed_bound_users(st: Steps, think, tokens_per_s, n_hi) -> np.ndarray:
    """Per replica of stacked steps, about the users at which the per-user speed target
    binds (NaN where there is none, or the KV slots bind first). There an iteration takes
    ``t = E / target`` and a request decodes for ``d = (O − 1) / target``; at ``λ`` requests
    per second ``b = λ·d`` decode and the prompts take ``ρ = λ·I·s`` of the time, which
    stretches each iteration to ``t_iter(b) / (1 − ρ)``: the largest batch knot with
    ``t_iter(b) + b·t·I·s / d <= t``, times a user's cycle over its decoding,
    ``(think + prefill + d) / d`` (Little's law). It only places the capacity search's
    first counts, never its answer."""
    table = np.atleast_2d(st.iter_table)
    last = last_knot(st.slots, table.shape[1])
    t = np.asarray(st.tokens_per_iter, float) / tokens_per_s
    d = (np.asarray(st.output_tokens, float) - 1) / tokens_per_s
    with np.errstate(divide="ignore", invalid="ignore"):
        per_seq = t * np.asarray(st.input_tokens * st.s_token, float) / d  # ρ's share of t
        ok = table[:, 1:] + BATCH_KNOTS[1 : table.shape[1]] * per_seq[:, None] <= t[:, None]
    knots = np.arange(1, table.shape[1])
    j = np.where(ok & (knots[None, :] <= last[:, None]), knots[None, :], 0).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        users = BATCH_KNOTS[j] * (think + st.s_alone + d) / d
    known = (j >= 1) & (j < last) & np.isfinite(users)
    return np.where(known, np.minimum(users, n_hi), np.nan)


def _nan_if_none(goals: tuple[float | None, float | None]) -> tuple[float, float]:
    return tuple(float("nan") if g is None else g for g in goals)  # type: ignore[return-value]


def _capacities(found: seat_search.Found, slots: list[int]) -> list[Capacity]:
    return [
        Capacity(int(u), b, float(t), float(v), int(s))
        for u, b, t, v, s in zip(
            found.units,
            found.names(),
            found.best_ttft_s,
            found.best_tokens_per_s,
            slots,
            strict=True,
        )
    ]


def _stacked_points(stacked: Steps, w: LLMWorkload, users, config):
    """The load points of many replicas (one configuration per user count) under the
    workload's serving: users' arrivals spread in time, as :func:`_curve` gives one replica
    (the planner sizes for people, not a benchmark harness)."""
    return load_point(stacked, users, w.serving().think_time_s, w.ttft_percentile, config=config)


def operating_point(
    ev: Evaluator, w: LLMWorkload, sessions: int, split: tuple[int, int] | None = None
) -> OperatingPoint:
    """Metrics of one replica carrying ``sessions`` (remembered per :func:`config_key`)."""
    key = ("point", sessions, *config_key(ev, w, split))
    return memo(key, lambda: _operating_point(ev, w, sessions, split))


def operating_points(items: list[tuple[Evaluator, int]], w: LLMWorkload) -> None:
    """Remember the operating points of many replicas of one workload (``(evaluator,
    sessions)``, no disaggregation) from one stacked load-point evaluation; those already
    remembered are skipped."""
    todo: dict[tuple, tuple[Evaluator, int]] = {}
    part = workload_part(w)
    for ev, sessions in items:
        key = ("point", sessions, *config_key(ev, w, None, part))
        if key not in _MEMO:
            todo[key] = (ev, sessions)
    if not todo:
        return
    stacked = Steps.stack([steps_for(ev, w, part) for ev, _ in todo.values()])
    users = np.array([max(n, 1) for _, n in todo.values()], float)
    lp = _stacked_points(stacked, w, users, np.arange(len(todo)))
    for k, (key, (ev, sessions)) in enumerate(todo.items()):
        _remember(key, _point_of(ev, w, sessions, lp.take(slice(k, k + 1))))


def _operating_point(
    ev: Evaluator, w: LLMWorkload, sessions: int, split: tuple[int, int] | None
) -> OperatingPoint:
    st = steps_for(ev, w)
    curve, _ = _curve(ev, w, st, split)
    return _point_of(ev, w, sessions, curve([max(sessions, 1)]))


def _point_of(ev: Evaluator, w: LLMWorkload, sessions: int, lp) -> OperatingPoint:
    """The operating point read from a one-user-count load point."""
    b = float(lp.batch[0])
    bottleneck = str(ev.decode_step(max(b, 1.0), w.input_tokens + w.output_tokens / 2).bottleneck())
    return OperatingPoint(
        int(sessions),
        float(lp.ttft_pct_s[0]),
        float(lp.ttft_s[0]),
        float(lp.per_user_tokens_per_s[0]),
        float(lp.output_tokens_per_s[0]),
        bottleneck,
        float(lp.memory_gb[0]),
    )
