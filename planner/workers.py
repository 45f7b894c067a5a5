"""The local worker processes of a sweep, kept apart from the solver so the command line
can start them before it loads the planner itself.

On Linux the workers are forks of this process, made when the sweep starts: each begins
with the planner imported and the scenario loaded, in about a hundredth of a second. Where
forking is not the platform's way (macOS, Windows) they are joblib's loky processes, each
of which starts an interpreter and imports the planner (about half a second), so the
command line starts them early (:func:`prestart`) to overlap its own imports."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import Executor, ProcessPoolExecutor


def processes(jobs: int) -> int:
    """The processes ``jobs`` asks for: itself, or one per core for 0."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)


def forks() -> bool:
    """Whether sweep workers are forks of this process: on Linux, where ``fork`` is the
    platform's own way to start a process and copies this one's loaded modules as they are
    (macOS has it but its system libraries are not safe to use after it), and only while
    this process runs one thread (a fork copies only the thread that calls it, so a lock
    another thread holds, in a notebook's kernel or a web server, would never be freed)."""
    return (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
    )


def executor(jobs: int) -> Executor:
    """An executor of ``jobs − 1`` worker processes (this process is the other): a fresh
    pool of forks (the caller shuts it down with :func:`done_with`: a fork copies this
    process as it is now, so a later sweep forks again), or loky's reusable executor."""
    if forks():
        return _Forks(
            jobs - 1, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_sigint
        )
    return _loky(jobs)


def _ignore_sigint() -> None:
    """A fork's Ctrl-C is its parent's to act on: the parent stops the sweep and ends its
    workers (:func:`done_with`); a worker that took it too would print its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Forks(ProcessPoolExecutor):
    """A pool of forks (made all at once, before the pool starts its own thread)."""


def done_with(pool: Executor, stopped: bool = False) -> None:
    """Stop a pool of forks once the sweep has its rows (loky's stays for :func:`release`);
    ``stopped``: the sweep ends early (an error, Ctrl-C): its forks are ended now rather
    than left to finish the points they hold (loky's finish theirs)."""
    if not isinstance(pool, _Forks):
        return
    if stopped:
        for proc in list((pool._processes or {}).values()):  # the stdlib has no kill call
            proc.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


_LOKY: Executor | None = None  # loky's reusable executor, once this process has started it


def _loky(jobs: int) -> Executor:
    global _LOKY
    from joblib.externals.loky import get_reusable_executor

    _LOKY = get_reusable_executor(max_workers=jobs - 1)
    return _LOKY


def prestart(jobs: int) -> None:
    """Start loky's workers now and have them import the solver: a worker's interpreter
    start and imports then overlap this process's own, instead of following them. The
    sweep later takes the same executor with its workers ready. Forks need no head start:
    they are made from this process once it has loaded everything."""
    if jobs > 1 and not forks():
        _loky(jobs).submit(_warm)


def _warm() -> None:
    import planner.solve  # noqa: F401 - the import is the work: the solver and estimator
    from estimator.catalog import gpu_catalog

    gpu_catalog()


def release() -> None:
    """Stop loky's workers now, if this process started them, without waiting for each to
    wind its interpreter down (a command that exits next would otherwise wait about a fifth
    of a second for them)."""
    global _LOKY
    if _LOKY is not None:
        _LOKY.shutdown(wait=True, kill_workers=True)
        _LOKY = None
