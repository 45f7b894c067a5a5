"""Validation and calibration of the estimator against published GPU measurements.

Imports the estimator, never the planner. The shipped measurements are package data in
``calibration/data/`` (read through :mod:`importlib.resources`, so an installed wheel has
them); ``calibration/data/README.md`` gives their columns, conventions and sources.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_dir() -> Path:
    """The folder of shipped measurement CSVs."""
    return Path(str(resources.files("calibration") / "data"))


def shipped_files() -> list[Path]:
    """The language-model measurement files ``validate`` and ``calibrate`` use by default."""
    return sorted(shipped_dir().glob("llm_*.csv"))


def display_name(f: Path) -> str:
    """A shipped file by its stable name (``validation/<file>``), any other by its path."""
    return f"validation/{f.name}" if f.parent == shipped_dir() else str(f)
