"""Any model name a user types -> a built model: a language-model preset (by name, alias,
Hugging Face id or a derivative of one), a family preset (diffusion, speech, ...), or a local
``config.json`` (a file, a model folder, or a Hugging Face cache folder). Unknown names
suggest the closest from every catalogue; ambiguous ones list the candidates."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import build_model, model_catalog
from .errors import EstimatorError, UnknownNameError
from .families import family_catalog, get_family_model, is_family_model
from .hf_config import load_config_file
from .model import LanguageModel
from .model_files import config_path
from .names import config_weight_format


@dataclass(frozen=True)
class ModelRef:
    """What a typed model name resolved to: the preset (None for a local config), the file
    read (None for a preset), the weight format the name or the config implies (None: not
    stated, bf16 by default), and one line on how it was read."""

    query: str
    preset: str | None
    path: Path | None
    weights: str | None
    how: str


def _file_weights(path: Path) -> str | None:
    try:
        return config_weight_format(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None  # load_config_file reports the unreadable file


def resolve_model(name_or_path: str, extra_dirs: tuple[str, ...] = ()) -> ModelRef:
    """Read a typed language-model name or path (see the module docstring)."""
    path = config_path(name_or_path)
    if path is not None:
        return ModelRef(name_or_path, None, path, _file_weights(path), f"config file {path}")
    cat = model_catalog(extra_dirs)
    try:
        r = cat.resolve(name_or_path)
    except UnknownNameError:
        # suggest from every preset a user can name, the other model families included
        known = cat.names() + family_catalog(extra_dirs).names()
        raise UnknownNameError("model", name_or_path, known) from None
    weights = r.weights or config_weight_format(cat.items[r.key].config)
    return ModelRef(name_or_path, r.key, None, weights, r.how)


# a family as people name its models
_READ_AS = {
    "encoder": "embedding",
    "asr": "speech-recognition",
    "diffusion_image": "image-generation",
    "diffusion_video": "video-generation",
    "var": "image-generation (VAR)",
    "vla": "robot-policy (VLA)",
    "jepa": "video world-model (JEPA)",
}


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def get_model(name_or_path: str, extra_dirs: tuple[str, ...] = ()) -> LanguageModel:
    """A language-model preset by name, alias or Hugging Face id, or a local config. A
    preset of another family is refused with what times it instead."""
    if is_family_model(name_or_path, extra_dirs):
        fam = get_family_model(name_or_path, extra_dirs).family
        kind = _READ_AS.get(fam, fam)
        what = (
            "a vision-language model: `planner estimate` sizes it with its images (and "
            "`under_load` for users)"
            if fam == "vlm"
            else f"{_article(kind)} {kind} model: "
            f"`planner estimate --model {name_or_path} --batch N` times it"
        )
        raise EstimatorError(f"'{name_or_path}' is {what}; this command takes text language models")
    ref = resolve_model(name_or_path, extra_dirs)
    if ref.path is not None:
        return load_config_file(ref.path)
    return build_model(ref.preset, extra_dirs)


def implied_weights(name: str | None, extra_dirs: tuple[str, ...] = ()) -> str | None:
    """The weight format a model name implies (a -FP8/-AWQ suffix, or the checkpoint's
    quantization_config); None for family presets and names that state none."""
    if not name or is_family_model(name, extra_dirs):
        return None
    return resolve_model(name, extra_dirs).weights


def weights_for(name: str | None, weights: str | None, extra_dirs: tuple[str, ...] = ()) -> str:
    """The weight format to size with: the user's, else the one the name implies, else bf16."""
    return weights or implied_weights(name, extra_dirs) or "bf16"


def get_any_model(name: str | None, config_path: str | None, extra_dirs=()) -> Any:
    """Exactly one of a preset name (any family) or a config path -> the built model."""
    if bool(name) == bool(config_path):
        raise EstimatorError("give exactly one of --model NAME or --model-config PATH")
    if name and is_family_model(name, extra_dirs):
        return get_family_model(name, extra_dirs)
    return get_model(config_path or name, extra_dirs)


def all_model_names(extra_dirs: tuple[str, ...] = ()) -> list[str]:
    return model_catalog(extra_dirs).names() + family_catalog(extra_dirs).names()
