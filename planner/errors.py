"""The planner's input error (exit code 2), a kind of the estimator's."""

from estimator.errors import EstimatorError


class ScenarioError(EstimatorError):
    """Bad scenario input (exit code 2)."""
