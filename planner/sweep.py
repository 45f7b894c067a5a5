"""What-if sweeps: rerun the solve for every combination of overridden scenario values (and,
with ``samples``, for draws of the scenario's uncertain inputs), on this process, on local
cores (forks of this process, or joblib's loky workers) or on a Dask cluster. Every point
is solved alone from its inputs, so its rows are the same whichever backend ran it; rows
stream into a partial CSV as points finish, and an interrupted sweep resumes from it."""

from __future__ import annotations

import csv
import io
import itertools
import logging
import math
import os
import queue
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import BrokenExecutor
from pathlib import Path

from .errors import ScenarioError, SweepStopped
from .progress import Progress
from .results import PLAN_ROW_FIELDS, Sweep, SweepPoint, ranked_rows, result_json
from .scenario import load_scenario, validate_scenario
from .solve import plan_scenario
from .uncertain import draw_all, find_distributions
from .yaml_input import load_yaml


def parse_value(text: str):
    t = text.strip()
    low = t.lower()
    if low in ("null", "none", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t


def parse_sets(sets: tuple[str, ...]) -> list[tuple[str, list]]:
    out = []
    for s in sets:
        if "=" not in s:
            raise ScenarioError(f"--set expects KEY=V1,V2,... , got '{s}'")
        k, v = s.split("=", 1)
        vals = [parse_value(x) for x in v.split(",") if x.strip()]
        if not k.strip() or not vals:
            raise ScenarioError(f"--set expects KEY=V1,V2,... , got '{s}'")
        if k.strip() in {key for key, _ in out}:
            raise ScenarioError(f"--set {k.strip()} is given twice; list its values once")
        out.append((k.strip(), vals))
    return out


MAX_COMBINATIONS = 1000  # combinations in one sweep (each is a full solve)
MAX_POINTS = 100_000  # combinations x samples


def sweep_combinations(sets: list[tuple[str, list]]) -> list[dict]:
    keys = [k for k, _ in sets]
    total = math.prod(len(v) for _, v in sets)
    if total > MAX_COMBINATIONS:
        raise ScenarioError(
            f"--set gives {total:,} combinations; a sweep may have at most {MAX_COMBINATIONS:,}"
        )
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*[v for _, v in sets])
    ]


def sweep_points(
    scenario: str | Path, sets: list[tuple[str, list]], samples: int = 0, seed: int = 0
) -> tuple[list[str], list[dict]]:
    """(column keys, every point's overrides): each combination of ``sets``, and with
    ``samples`` each of ``samples`` draws of the scenario's distributions per combination.
    Every point is validated here, so bad input stops the sweep before any solve."""
    combos = sweep_combinations(sets) if sets else [{}]
    keys = [k for k, _ in sets]
    node, data = load_yaml(Path(scenario))  # read once; every point's overrides checked
    if samples:
        dists = find_distributions(data)
        if not dists:
            raise ScenarioError(
                f"{scenario}: --samples needs uncertain inputs: give a number as a "
                "distribution, e.g. users: {dist: lognormal, median: 2000, sigma: 0.4}"
            )
        if len(combos) * samples > MAX_POINTS:
            raise ScenarioError(
                f"{len(combos):,} combinations x {samples:,} samples: at most {MAX_POINTS:,}"
            )
        # a swept key fixes its value: it is not drawn
        drawn = [k for k in sorted(dists) if k not in keys]
        keys += ["sample", *drawn]
        draws = [draw_all(dists, seed, k) for k in range(samples)]  # the same for every combination
        points = [
            {**c, "sample": k, **{x: d[x] for x in drawn}}
            for c in combos
            for k, d in enumerate(draws)
        ]
    else:
        points = combos
    for pt in points:
        try:
            validate_scenario(Path(scenario), node, data, _overrides(pt))
        except ScenarioError as e:
            if "sample" not in pt:
                raise
            drawn = ", ".join(f"{k}={pt[k]!r}" for k in keys[keys.index("sample") + 1 :])
            raise ScenarioError(
                f"sample {pt['sample']} drew {drawn}, which the scenario refuses: {e}\n"
                "bound the distribution (low:, high:) or draw whole numbers (round: true)"
            ) from None
    return keys, points


def _overrides(point: dict) -> dict:
    return {k: v for k, v in point.items() if k != "sample"}


def solve_point(scenario: str, index: int, point: dict, presets: tuple[str, ...]) -> SweepPoint:
    """One point of a sweep, solved from its inputs alone (what every backend runs): the
    recommendation only (no alternatives, no best plan per GPU type: a solve per type)."""
    sc = load_scenario(scenario, overrides=_overrides(point))
    res = plan_scenario(sc, presets, top=1, per_gpu=False)
    rows = ranked_rows(res, {"point": index, **point})
    return SweepPoint(index, point, rows, {"set": point, **result_json(res)})


def solve_points(
    scenario: str, points: list[tuple[int, dict]], presets: tuple[str, ...]
) -> list[SweepPoint]:
    """A block of points solved one after another in one process (sharing its caches)."""
    return [solve_point(scenario, i, pt, presets) for i, pt in points]


# Workload fields that only scale the demand: points differing only in these (or in budget,
# cost and fleet keys) reuse one process's replica capacities, so they are sent together.
# Only where points run depends on this; their rows do not.
DEMAND_KEYS = {
    "users",
    "hours_per_person",
    "utilisation",
    "streams",
    "audio_hours_per_day",
    "docs_per_s",
    "images_per_s",
    "images_per_hour",
    "videos_per_hour",
    "robots",
    "clips_per_s",
}


def blocks(todo: list[tuple[int, dict]], workers: int) -> list[list[tuple[int, dict]]]:
    """The points in blocks for ``workers`` processes: points that need the same replica
    capacities together (see :data:`DEMAND_KEYS`), a block at most an even share."""
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for i, pt in todo:
        sig = tuple(
            (k, repr(v))
            for k, v in sorted(pt.items())
            if k.startswith("workloads.") and k.rsplit(".", 1)[-1] not in DEMAND_KEYS
        )
        groups.setdefault(sig, []).append((i, pt))
    share = max(1, math.ceil(len(todo) / max(workers, 1)))
    out = []
    for g in groups.values():
        out += [g[j : j + share] for j in range(0, len(g), share)]
    return out


def _run_backend(
    todo: list[tuple[int, dict]],
    jobs: int,
    cluster: str | None,
    scenario: str,
    presets: tuple[str, ...],
) -> Iterator[SweepPoint]:
    """Points as they finish: in this process, on ``jobs`` local processes (this one and
    ``jobs − 1`` workers: forks, or loky's), or on a Dask scheduler (``cluster``: an address, or
    "local" for a local cluster), in :func:`blocks` so each process reuses its capacities."""
    if cluster:
        yield from _dask(todo, cluster, jobs, scenario, presets)
    elif jobs > 1 and len(todo) > 1:
        yield from _local(todo, jobs, scenario, presets)
    else:
        for i, pt in todo:
            yield solve_point(scenario, i, pt, presets)


def _local(
    todo: list[tuple[int, dict]], jobs: int, scenario: str, presets: tuple[str, ...]
) -> Iterator[SweepPoint]:
    """``jobs`` processes take blocks from one queue as each comes free: this one (its
    modules loaded: it starts at once) and ``jobs − 1`` workers (:mod:`planner.workers`:
    forks of this one on Linux, joblib's loky processes elsewhere; joblib's own Parallel
    would run a single worker's tasks in this process). A worker that finishes a block takes
    the next at once (from the executor's thread), not when this process is next between
    two of its own points: over the whole catalogue a block's first point takes ~0.1 s,
    which each worker otherwise sat idle for (200 points: 2.8 -> ~2.6 s)."""
    from .workers import done_with
    from .workers import executor as local_executor

    work = deque(blocks(todo, 4 * jobs))  # a few blocks each: whoever is free takes the next
    total = len(work)
    lock = threading.Lock()  # this process and the executor's thread both take blocks
    # lists of points, or an error, put by the executor's thread as blocks finish
    done: queue.SimpleQueue = queue.SimpleQueue()

    def take():
        with lock:
            return work.popleft() if work else None

    executor = local_executor(jobs)  # loky's started early by the command line (prestart)

    def submit() -> None:
        b = take()
        if b is not None:
            executor.submit(solve_points, scenario, b, presets).add_done_callback(finished)

    def finished(fut) -> None:
        if fut.cancelled():  # the sweep stopped: its blocks are not wanted
            return
        error = fut.exception()
        done.put(error or fut.result())
        if error is None:
            try:
                submit()
            except Exception as e:  # noqa: BLE001 - a pool broken or shut down: the sweep's error
                done.put(e)

    def collect(block: bool) -> Iterator[SweepPoint]:
        nonlocal collected
        while mine + collected < total:
            try:
                item = done.get(block=block)
            except queue.Empty:
                return
            if isinstance(item, BaseException):
                raise item
            collected += 1
            yield from item

    mine = collected = 0
    try:
        for _ in range(jobs - 1):
            submit()
        while (b := take()) is not None:
            for i, pt in b:
                yield solve_point(scenario, i, pt, presets)
                yield from collect(block=False)
            mine += 1
        yield from collect(block=True)
    except BrokenExecutor:  # a worker died: its result, or a submit to the broken pool
        done_with(executor, stopped=True)
        raise SweepStopped(
            "a sweep worker stopped before its points were solved (interrupted, or killed, "
            "e.g. for memory)"
        ) from None
    except BaseException:
        done_with(executor, stopped=True)
        raise
    done_with(executor)


def _dask(
    todo: list[tuple[int, dict]],
    cluster: str,
    jobs: int,
    scenario: str,
    presets: tuple[str, ...],
) -> Iterator[SweepPoint]:
    from distributed import Client, KilledWorker, LocalCluster, as_completed

    local = None
    try:
        if cluster == "local":
            local = LocalCluster(
                n_workers=max(jobs, 1),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,  # a failed point is raised here, not logged there
            )
            client = Client(local)
        else:
            client = Client(cluster, timeout="10s")
    except (OSError, ValueError, TypeError) as e:
        raise ScenarioError(
            f"--cluster {cluster}: cannot reach the Dask scheduler ({e}); give 'local' or "
            "an address such as tcp://HOST:8786"
        ) from None
    try:
        # blocks for the workers the scheduler has (a remote cluster's, not --jobs)
        workers = max(1, len(client.scheduler_info().get("workers", {})), jobs)
        work = blocks(todo, workers)
        futures = [client.submit(solve_points, scenario, b, presets, pure=False) for b in work]
        for fut in as_completed(futures):
            try:
                rows = fut.result()
            except KilledWorker:  # Dask retried the block on other workers; each died
                raise SweepStopped(
                    "the Dask workers solving a block of points died (killed, e.g. for memory)"
                ) from None
            yield from rows
    finally:
        client.close()
        if local is not None:
            local.close()


def _partial(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def _journal(partial: Path) -> Path:
    """Beside the partial CSV: the sweep's fingerprint, then ``index rows`` for each point
    whose rows were written whole (appended only after they were)."""
    return partial.with_name(partial.name + ".done")


def fingerprint(scenario: str, pairs, samples: int, seed: int, presets, fields) -> str:
    """What must not change for a partial sweep to be resumed: the scenario file's bytes,
    the swept values, the sampling, the presets and the columns."""
    import hashlib
    import json

    try:
        body = Path(scenario).read_bytes()
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {scenario}: {e.strerror}") from None
    doc = {
        "scenario": hashlib.sha256(body).hexdigest(),
        "sets": repr(pairs),
        "samples": samples,
        "seed": seed,
        "presets": list(presets),
        "fields": fields,
    }
    return json.dumps(doc, sort_keys=True)


def _resume(partial: Path, stamp: str, n_points: int) -> dict[int, list[dict]]:
    """Rows of the points the journal lists as written whole, from a sweep with the same
    fingerprint; anything else in the partial file is solved again."""
    journal = _journal(partial)
    try:
        lines = journal.read_text().split("\n") if journal.is_file() else []
        text = partial.read_text() if partial.is_file() else ""
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read {partial} to resume ({e}); delete it") from None
    if not lines or not text:
        return {}
    if lines[0] != stamp:
        raise ScenarioError(
            f"{partial} is from a different sweep (scenario, --set values, samples, seed or "
            "presets differ); delete it or drop --resume"
        )
    whole: dict[int, int] = {}
    for line in lines[1:-1]:  # the last piece has no newline: an entry being written
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            whole[int(parts[0])] = int(parts[1])
    rows: dict[int, list[dict]] = {}
    for r in csv.DictReader(io.StringIO(text)):
        i = str(r.get("point", ""))
        if i.isdigit() and int(i) in whole and len(rows.get(int(i), [])) < whole[int(i)]:
            rows.setdefault(int(i), []).append({k: _typed(v) for k, v in r.items()})
    return {i: r for i, r in rows.items() if i < n_points and len(r) == whole[i]}


def _typed(v: str | None):
    """A CSV cell read back as the value a fresh run holds (numbers, booleans, empty)."""
    return None if not v else parse_value(v)


def _csv_text(rows: list[dict], fields: list[str], header: bool) -> str:
    from estimator.files import csv_safe

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    if header:
        w.writeheader()
    w.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def sweep(
    scenario: str | Path,
    sets: dict[str, list] | list[tuple[str, list]] | None = None,
    presets: tuple[str, ...] = (),
    *,
    jobs: int = 1,
    cluster: str | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    samples: int = 0,
    seed: int = 0,
    progress: bool = False,
) -> Sweep:
    """One solve (the recommendation only) per combination of ``sets`` values, e.g.
    ``{"workloads.chat.users": [1000, 2000], "budget.max_usd": [2e6, 4e6]}`` (dotted scenario
    keys, list items by name), and with ``samples`` per draw of the scenario's distributions
    (seeded by ``seed``). ``jobs`` local processes (0: one per core) or a Dask ``cluster``
    ("local" or an address) run the points; with ``out`` their rows stream into
    ``out.partial`` and land in ``out`` (atomically, in point order) when all are done;
    ``resume`` skips the points the partial file already holds."""
    from .workers import processes

    jobs = processes(jobs)
    pairs = list((sets or {}).items()) if isinstance(sets, dict) or sets is None else list(sets)
    keys, points = sweep_points(scenario, pairs, samples, seed)
    fields = ["point", *keys, *PLAN_ROW_FIELDS]
    scenario = str(scenario)
    done: dict[int, list[dict]] = {}
    partial = _partial(Path(out)) if out else None
    if resume and partial is None:
        raise ScenarioError("--resume needs --out: the sweep resumes from its CSV")
    stamp = fingerprint(scenario, pairs, samples, seed, presets, fields) if partial else ""
    if resume:
        done = _resume(partial, stamp, len(points))
    todo = [(i, pt) for i, pt in enumerate(points) if i not in done]
    bar = Progress(len(points), len(points) - len(todo)) if progress else None
    results: dict[int, SweepPoint] = {
        i: SweepPoint(i, points[i], rows, None) for i, rows in done.items()
    }
    sink = log = None

    def put(f, text: str) -> None:
        try:
            f.write(text)
            f.flush()
        except OSError as e:
            raise ScenarioError(f"cannot write {partial}: {e.strerror or e}") from None

    try:
        if partial is not None:
            keep = _csv_text([r for i in sorted(done) for r in done[i]], fields, header=True)
            try:
                partial.parent.mkdir(parents=True, exist_ok=True)
                sink = open(partial, "w", newline="")  # noqa: SIM115 - streamed into
                log = open(_journal(partial), "w")  # noqa: SIM115 - appended to
            except OSError as e:
                raise ScenarioError(f"cannot write {partial}: {e.strerror or e}") from None
            put(sink, keep)
            put(log, stamp + "\n" + "".join(f"{i} {len(done[i])}\n" for i in sorted(done)))
        try:
            for pt in _run_backend(todo, jobs, cluster, scenario, presets):
                results[pt.index] = pt
                if sink is not None:
                    put(sink, _csv_text(pt.rows, fields, header=False))
                    put(log, f"{pt.index} {len(pt.rows)}\n")  # only once its rows are written
                if bar:
                    bar.step()
        except SweepStopped as e:
            where = (
                f"; the points solved whole are in {partial}: --resume finishes it"
                if partial
                else ""
            )
            raise SweepStopped(f"{e}{where}") from None
    finally:
        for f in (sink, log):
            if f is not None:
                f.close()
    sw = Sweep(keys, [results[i] for i in range(len(points))], fields, samples)
    if out:
        from estimator.files import atomic_write_text

        text = _csv_text([r for p in sw.points for r in p.rows], fields, header=True)
        atomic_write_text(out, text, inputs=(scenario,))
        os.unlink(partial)
        os.unlink(_journal(partial))
    return sw
