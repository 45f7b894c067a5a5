"""The planner's input error (exit code 2), a kind of the estimator's, and a sweep's stop."""

from estimator.errors import EstimatorError


class ScenarioError(EstimatorError):
    """Bad scenario input (exit code 2)."""


class SweepStopped(RuntimeError):
    """A sweep's worker process ended before its points were solved (interrupted, or killed:
    e.g. for memory). The points written whole stay in the partial CSV for ``--resume``."""
