"""One split of one model on many GPU types, evaluated as one: the evaluators of a planner's
candidates differ in their GPU alone (peaks, bandwidth, efficiency factors, links), so one
evaluator whose GPU numbers are columns (:meth:`~estimator.roofline.Machine.stack`) gives
every candidate's step times in one array call: each row the numbers its evaluator gives
alone (the same arithmetic, element by element), for the per-call cost of one.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable

from . import comm
from .llm import Evaluator
from .roofline import Machine


def stack_key(ev: Evaluator) -> Hashable:
    """Evaluators with equal keys stack: the same model (object), split, formats and engine,
    and collectives in the same regime (each group fits its domain or not, a NIC or none:
    the branches the step takes)."""
    par = ev.par
    regime = comm.regime(ev.machine.fabric, ev.tp, par.ep, ev.gpus)
    return (id(ev.model), par, ev.wfmt.name, ev.kvfmt.name, ev.engine, regime)


def stack(evs: list[Evaluator]) -> Evaluator:
    """An evaluator for every one of ``evs`` at once (equal :func:`stack_key`): its
    ``decode_step`` and ``prefill`` give a row per evaluator. What is per GPU beyond the
    step times (memory budget, notes) is read from each evaluator itself."""
    first = evs[0]
    key = stack_key(first)
    if any(stack_key(e) != key for e in evs[1:]):
        raise ValueError("stacked evaluators differ in more than their GPU")
    out = copy.copy(first)
    out.machine = Machine.stack([e.machine for e in evs])
    out.gpu = None  # many GPUs: their numbers are the machine's columns
    return out
