"""The non-LLM published rows as machine-readable cases: their conditions as the estimator's
family options, the estimate of each, and the published metric read back from it. Shared by
the validation report (:mod:`.families`) and the speech-engine fit (:mod:`.family_engines`)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from estimator import EstimatorError, Parallel, get_gpu
from estimator.families import FamilyOptions, family_of, get_family_model

from . import shipped_dir


@dataclass
class FamilyRow:
    row: int
    family: str
    model: str
    gpu: str
    metric: str
    measured: float
    predicted: float | None
    assumptions: str
    status: str = "evaluated"
    source: str = ""  # the repository or site, for leave-one-source-out
    engine: str = ""
    cv_predicted: float | None = None  # with engine host costs fitted on the other sources

    @property
    def cv_error_pct(self) -> float | None:
        if self.cv_predicted is None:
            return None
        return 100.0 * (self.cv_predicted - self.measured) / self.measured

    @property
    def error_pct(self) -> float | None:
        if self.predicted is None:
            return None
        return 100.0 * (self.predicted - self.measured) / self.measured


def _int(v: str) -> int | None:
    return int(v) if v not in ("", None) else None


# published metric -> (the estimate's metric, whether it scales with the GPUs: the rows run
# one replica per GPU)
METRICS = {
    "images_per_s": ("images_per_s", True),
    "audio_s_per_s": ("audio_s_per_s", True),
    "sentences_per_s": ("docs_per_s", True),
    "docs_per_s": ("docs_per_s", True),
    "rtf": ("rtf", False),
    "s_per_image": ("s_per_image", False),
    "s_per_video": ("s_per_video", False),
    "latency_ms_per_chunk": ("latency_ms", False),
    "wall_time_s": ("s_per_batch", False),
}
# metrics that are times (lower is faster); the others are rates
TIME_METRICS = {"rtf", "s_per_image", "s_per_video", "latency_ms_per_chunk", "wall_time_s"}


def time_ratio(metric: str, measured: float, predicted: float | None) -> float | None:
    """A row's measured / predicted *time* (a rate's inverse ratio), or None where the row
    times nothing (memory) or has no prediction."""
    if not predicted or not measured > 0 or not predicted > 0:
        return None
    if metric in TIME_METRICS:
        return measured / predicted
    if metric in METRICS or metric == "steps_per_s":
        return predicted / measured
    return None


def source_key(source: str) -> str:
    """A row's source as a repository or site (``owner/repo:path (section)`` -> ``owner/repo``;
    a web address -> its site, and on code hosts its owner/repo), the unit left out together
    in cross-validation."""
    s = source.strip()
    if "://" in s:
        host, _, path = s.split("://", 1)[1].split(" ")[0].partition("/")
        repo = [p for p in path.split("/") if p][:2] if host in CODE_HOSTS else []
        return "/".join([host, *repo])
    return s.split(":", 1)[0].split(" (")[0].strip()


CODE_HOSTS = ("github.com", "huggingface.co", "gitlab.com")


def options(case: dict) -> FamilyOptions:
    """A row's machine-readable conditions as the estimator's family options."""
    res = _int(case.get("resolution", ""))
    return FamilyOptions(
        batch=int(case["batch"]),
        input_tokens=_int(case.get("input_tokens", "")),
        audio_seconds=float(case.get("audio_seconds") or 30.0),
        beam=int(case.get("beam") or 1),
        resolution=(res, res) if res else None,
        frames=_int(case.get("frames", "")),
        steps=_int(case.get("steps", "")),
        guidance=case.get("guidance") == "true",
        cameras=int(case.get("cameras") or 1),
        engine=case.get("engine") or None,
        fast_accum=case.get("fast_accum") == "true",
    )


def estimate_case(case: dict):
    """The family estimate of a row's conditions."""
    model = get_family_model(case["preset"])
    fam = family_of(model)
    if fam is None or fam.estimate is None:
        raise EstimatorError(f"no validation path for {model.family}")
    return fam.estimate(
        model, get_gpu(case["gpu_preset"]), Parallel(), case["weights"], options(case)
    )


def predict(case: dict) -> tuple[str, float]:
    e = estimate_case(case)
    return e.family, metric_value(case, e)


def metric_value(case: dict, e) -> float:
    """The row's published metric from an estimate."""
    metric, m = case["metric"], e.metrics
    if metric == "steps_per_s":
        return int(case["steps"]) / m["denoiser_s"] if m["denoiser_s"] else 0.0
    if metric == "peak_memory_gb":
        return e.memory_gb.total
    key, per_gpu = METRICS[metric]
    return int(case["n_gpus"]) * m.get(key, 0.0) if per_gpu else m[key]


def evaluate_row(number: int, case: dict, src: dict) -> FamilyRow:
    """One row's prediction (or why it could not be made); ``src`` holds its published
    columns (model, GPU, source), ``case`` its machine-readable conditions."""
    common = dict(
        model=src["model"],
        gpu=src["gpu"],
        metric=case["metric"],
        measured=float(case.get("value") or "nan"),
        assumptions=case.get("assumptions", ""),
        source=source_key(src.get("source", "")),
        engine=case.get("engine", ""),
    )
    try:
        fam, pred = predict(case)
    except (EstimatorError, KeyError, ValueError, TypeError) as e:
        return FamilyRow(
            number, src.get("model_type", ""), predicted=None, status=f"skipped: {e}", **common
        )
    return FamilyRow(number, fam, predicted=float(pred), **common)


def all_cases(
    cases_path: Path | None = None, public_path: Path | None = None
) -> tuple[list[tuple[int, dict, dict]], list[dict]]:
    """Every machine-readable row as (number, conditions, published columns), the shared
    set's numbered by their 0-based row and the extra file's -1, -2, ...; and the shared
    set's rows themselves."""
    cases = list(csv.DictReader(open(cases_path or shipped_dir() / "nonllm_cases.csv")))
    public = list(csv.DictReader(open(public_path or shipped_dir() / "nonllm_measured_public.csv")))
    out = [(int(c["row"]), c, public[int(c["row"])]) for c in cases]
    extra = shipped_dir() / "nonllm_measured_extra.csv"
    if extra.is_file():
        out += [(-1 - i, c, c) for i, c in enumerate(csv.DictReader(open(extra)))]
    return out, public
