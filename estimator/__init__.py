"""Forward estimator: model + accelerator + split + workload -> fit, speed, bottleneck.

Knows nothing of scenarios, costs or solvers (those live in :mod:`planner`).

For people: :func:`estimate` and :func:`curve` take names and return typed results whose
``to_dict()`` is what ``planner estimate`` / ``planner curve --format json`` print. For
programs: :class:`Evaluator` evaluates numpy arrays of batches and contexts at once.
"""

from .api import ServingEstimate, estimate
from .catalog import get_gpu, get_model_preset, gpu_catalog, model_catalog
from .curve import CurveResult, curve
from .errors import AmbiguousNameError, EstimatorError, SplitError, UnknownNameError
from .families import FamilyEstimate, FamilyOptions, family_catalog, get_family_model
from .hardware import Accelerator
from .llm import Estimate, Evaluator, Workload, estimate_replica, expert_touch, parallel_for
from .load import ServingOptions, Speculative
from .model import LanguageModel
from .parallel import Parallel, check_split
from .resolve import all_model_names, get_any_model, get_model

__all__ = [
    "Accelerator",
    "CurveResult",
    "Estimate",
    "EstimatorError",
    "Evaluator",
    "FamilyEstimate",
    "FamilyOptions",
    "LanguageModel",
    "Parallel",
    "ServingEstimate",
    "ServingOptions",
    "Speculative",
    "SplitError",
    "UnknownNameError",
    "AmbiguousNameError",
    "Workload",
    "all_model_names",
    "check_split",
    "curve",
    "estimate",
    "estimate_replica",
    "expert_touch",
    "family_catalog",
    "get_any_model",
    "get_family_model",
    "get_gpu",
    "get_model",
    "get_model_preset",
    "gpu_catalog",
    "model_catalog",
    "parallel_for",
]
