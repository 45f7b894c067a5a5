"""The local worker processes of a sweep (joblib's loky executor), kept apart from the
solver so the command line can start them before it loads the planner itself."""

from __future__ import annotations


def executor(jobs: int):
    """The reusable executor of ``jobs − 1`` worker processes (this process is the other)."""
    from joblib.externals.loky import get_reusable_executor

    return get_reusable_executor(max_workers=jobs - 1)


def prestart(jobs: int) -> None:
    """Start the workers now and have them import the solver: a worker's interpreter start
    and imports (about a second) then overlap this process's own, instead of following
    them. The sweep later takes the same executor (``executor``) with its workers ready."""
    if jobs > 1:
        executor(jobs).submit(_warm)


def _warm() -> None:
    import planner.solve  # noqa: F401 - the import is the work: the solver and estimator
    from estimator.catalog import gpu_catalog

    gpu_catalog()


def release(jobs: int) -> None:
    """Stop the workers now, without waiting for each to wind its interpreter down (a
    command that exits next would otherwise wait about a fifth of a second for them)."""
    if jobs > 1:
        executor(jobs).shutdown(wait=True, kill_workers=True)
