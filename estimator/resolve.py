"""Any model name a user types -> a built model: a language-model preset, a family preset
(diffusion, speech, ...), or a local ``config.json`` (a file, or a folder holding one).
Unknown names suggest the closest from every catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .catalog import build_model, model_catalog
from .errors import EstimatorError, UnknownNameError
from .families import family_catalog, get_family_model, is_family_model
from .hf_config import load_config_file
from .model import LanguageModel


def _is_config_path(name_or_path: str) -> bool:
    p = Path(name_or_path)
    return name_or_path.endswith(".json") or (p.is_dir() and (p / "config.json").is_file())


def get_model(name_or_path: str, extra_dirs: tuple[str, ...] = ()) -> LanguageModel:
    """A language-model preset by name or alias, or a local config.json."""
    if _is_config_path(name_or_path):
        return load_config_file(Path(name_or_path))
    cat = model_catalog(extra_dirs)
    try:
        key = cat.resolve_name(name_or_path)
    except UnknownNameError:
        # suggest from every preset a user can name, the other model families included
        known = cat.names() + family_catalog(extra_dirs).names()
        raise UnknownNameError("model", name_or_path, known) from None
    return build_model(key, extra_dirs)


def get_any_model(name: str | None, config_path: str | None, extra_dirs=()) -> Any:
    """Exactly one of a preset name (any family) or a config path -> the built model."""
    if bool(name) == bool(config_path):
        raise EstimatorError("give exactly one of --model NAME or --model-config PATH")
    if name and is_family_model(name, extra_dirs):
        return get_family_model(name, extra_dirs)
    return get_model(config_path or name, extra_dirs)


def all_model_names(extra_dirs: tuple[str, ...] = ()) -> list[str]:
    return model_catalog(extra_dirs).names() + family_catalog(extra_dirs).names()
