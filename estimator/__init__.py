"""Forward estimator: model + accelerator + split + workload -> fit, speed, bottleneck.

Knows nothing of scenarios, costs or solvers (those live in :mod:`planner`).

For people: :func:`estimate`, :func:`curve` (language models against users) and
:func:`batch_curve` (the other families against their batch) take names and return typed
results whose ``to_dict()`` is what ``planner estimate`` / ``planner curve --format json``
print. For
programs: :class:`Evaluator` evaluates numpy arrays of batches and contexts at once.

The names below load their module on first use, so importing one light part (the errors,
the engine table) does not import the whole estimator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the module that defines it
_WHERE = {
    "ServingEstimate": ".api",
    "estimate": ".api",
    "BatchCurve": ".batch_curves",
    "batch_curve": ".batch_curves",
    "get_gpu": ".catalog",
    "get_model_preset": ".catalog",
    "gpu_catalog": ".catalog",
    "model_catalog": ".catalog",
    "CurveResult": ".curves",
    "curve": ".curves",
    "AmbiguousNameError": ".errors",
    "EstimatorError": ".errors",
    "SplitError": ".errors",
    "UnknownNameError": ".errors",
    "FamilyEstimate": ".families",
    "FamilyOptions": ".families",
    "family_catalog": ".families",
    "get_family_model": ".families",
    "Accelerator": ".hardware",
    "Estimate": ".llm",
    "Evaluator": ".llm",
    "Workload": ".llm",
    "estimate_replica": ".llm",
    "expert_touch": ".routing",
    "parallel_for": ".parallel",
    "ServingOptions": ".steps",
    "Speculative": ".steps",
    "LanguageModel": ".model",
    "Parallel": ".parallel",
    "check_split": ".parallel",
    "all_model_names": ".resolve",
    "get_any_model": ".resolve",
    "get_model": ".resolve",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'estimator' has no attribute '{name}'")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


if TYPE_CHECKING:  # for type checkers and editors: the names as if imported eagerly
    from .api import ServingEstimate, estimate
    from .batch_curves import BatchCurve, batch_curve
    from .catalog import get_gpu, get_model_preset, gpu_catalog, model_catalog
    from .curves import CurveResult, curve
    from .errors import AmbiguousNameError, EstimatorError, SplitError, UnknownNameError
    from .families import FamilyEstimate, FamilyOptions, family_catalog, get_family_model
    from .hardware import Accelerator
    from .llm import Estimate, Evaluator, Workload, estimate_replica
    from .model import LanguageModel
    from .parallel import Parallel, check_split, parallel_for
    from .resolve import all_model_names, get_any_model, get_model
    from .routing import expert_touch
    from .steps import ServingOptions, Speculative
