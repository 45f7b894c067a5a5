"""Forward estimator: model + accelerator + split + workload -> fit, speed, bottleneck.

Knows nothing of scenarios, costs or solvers (those live in :mod:`planner`).
"""

from .errors import EstimatorError, SplitError, UnknownNameError
from .estimate import Estimate, Evaluator, Workload, estimate, expert_touch, parallel_for
from .hardware import Accelerator
from .model import LanguageModel
from .parallel import Parallel, check_split
from .presets import get_gpu, get_model, get_model_preset, gpu_catalog, model_catalog

__all__ = [
    "Accelerator",
    "Estimate",
    "EstimatorError",
    "Evaluator",
    "LanguageModel",
    "Parallel",
    "SplitError",
    "UnknownNameError",
    "Workload",
    "check_split",
    "estimate",
    "expert_touch",
    "get_gpu",
    "get_model",
    "get_model_preset",
    "gpu_catalog",
    "model_catalog",
    "parallel_for",
]
