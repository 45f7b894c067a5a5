"""Where a local model's ``config.json`` is: the file itself, a model folder holding one, or
a Hugging Face cache folder (``models--org--name``) with its snapshots."""

from __future__ import annotations

from pathlib import Path

from .errors import EstimatorError


def _cache_snapshot(folder: Path) -> Path | None:
    """The config.json of a Hugging Face cache folder ``models--org--name``: the snapshot
    that ``refs/main`` names, else the only (or newest) snapshot holding one."""
    snaps = folder / "snapshots"
    if not snaps.is_dir():
        return None
    ref = folder / "refs" / "main"
    if ref.is_file():
        p = snaps / ref.read_text().strip() / "config.json"
        if p.is_file():
            return p
    found = sorted(snaps.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def config_path(name_or_path: str) -> Path | None:
    """The config.json a name points at, or None when it is not a local path."""
    p = Path(name_or_path).expanduser()
    if name_or_path.endswith(".json"):
        return p
    if not p.is_dir():
        return None
    if (p / "config.json").is_file():
        return p / "config.json"
    found = _cache_snapshot(p)
    if found is None:
        raise EstimatorError(
            f"model folder {p} has no config.json (nor a Hugging Face cache snapshot "
            "under snapshots/<revision>/)"
        )
    return found
