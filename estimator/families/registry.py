"""The estimator's family registry: family -> how its presets build a model and how the model
is estimated. Family presets live in ``presets/families/<family>/*.yaml``, each the model's
verbatim config (or published architecture values) plus where it was read.

Adding a family: one module in this package that defines its model, its builder and its
estimate and calls :func:`register`; its presets; its row in the planner's workload kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..catalog import (
    LazyPresets,
    Published,
    parsed_cache,
    preset_head,
    read_text,
    read_yaml,
    shipped_dir,
    user_dirs,
)
from ..errors import EstimatorError, UnknownNameError
from ..lookup import ModelCatalog
from ..model_files import config_path


class FamilyPublished(Published):
    model_config = ConfigDict(extra="allow")  # e.g. denoiser_params_b beside the total


class FamilyPreset(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    display_name: str = ""
    family: str
    aliases: list[str] = []
    source: str
    verified: bool = True
    published: FamilyPublished = FamilyPublished()
    notes: str = ""
    config: dict[str, Any] = {}


@dataclass(frozen=True)
class Family:
    """One model family: ``build(preset) -> model``; ``estimate(model, gpu, parallel,
    weights, FamilyOptions) -> FamilyEstimate``. ``language_model``: the family serves
    requests as an LLM with extra prompt work (vision-language models), so it is estimated
    by the language-model path with ``model.llm``. ``engines``: the serving engines its
    estimate tells apart (``FamilyOptions.engine``; the first is the default), empty when the
    family is timed on the roofline alone."""

    name: str
    build: Callable[[FamilyPreset], Any]
    estimate: Callable[..., Any] | None = None
    language_model: bool = False
    engines: tuple[str, ...] = ()


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def family_of(model: Any) -> Family | None:
    """The registry row of a built model's family; None for a language model."""
    return FAMILIES.get(getattr(model, "family", ""))


@lru_cache(maxsize=8)
def family_catalog(extra_dirs: tuple[str, ...] = ()) -> ModelCatalog[FamilyPreset]:
    """Every family preset by name: names, aliases and family from the top of each file,
    the whole file read and validated when the preset is first used (a language-model solve
    asks only whether its model's name is one of these)."""
    items = LazyPresets(_family_preset)
    aliases: dict[str, str] = {}
    roots = [shipped_dir() / "families"] + [d / "families" for d in user_dirs(extra_dirs)]
    with parsed_cache("families", roots, "heads") as cache:
        for path in (p for root in roots if root.is_dir() for p in sorted(root.glob("*/*.yaml"))):
            text = read_text(path)
            head = preset_head(text, cache)
            if head is None or not isinstance(head.get("family"), str):
                head = _family_preset(path, read_yaml(path, text)).model_dump()
            if head["family"] not in FAMILIES:
                continue  # transcribed, but this family's physics is not built yet
            items.paths[head["name"]] = (path, text)
            aliases.update({a: head["name"] for a in head.get("aliases", [])})
    return ModelCatalog("model", items, aliases)


def _family_preset(path, data: Any) -> FamilyPreset:
    try:
        preset = FamilyPreset.model_validate(data)
    except ValidationError as e:
        raise EstimatorError(f"{path}: invalid preset: {e.errors()[0]['msg']}") from None
    return preset


@lru_cache(maxsize=128)
def _build(name: str, extra_dirs: tuple[str, ...]) -> Any:
    p = family_catalog(extra_dirs).items[name]
    return FAMILIES[p.family].build(p)


# a local config.json (or model folder, or Hugging Face cache folder) of these model types is
# another family's model, built as its presets are: family by model_type, and for the BERT
# kinds a sequence-classification head makes a cross-encoder (reranker)
_CONFIG_FAMILIES = {
    "bert": "encoder",
    "roberta": "encoder",
    "xlm-roberta": "encoder",
    "whisper": "asr",
}


def config_preset(name_or_path: str) -> FamilyPreset | None:
    """The preset a local config of another family's model stands for (None: not a path,
    or a language model's config)."""
    import json

    try:
        path = config_path(name_or_path)
    except EstimatorError:  # a folder without a config: a preset's name may still match
        return None
    if path is None or not path.is_file():
        return None
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # the language-model reader reports the unreadable file
    family = _CONFIG_FAMILIES.get(cfg.get("model_type", "")) if isinstance(cfg, dict) else None
    if family is None or family not in FAMILIES:
        return None
    heads = [a for a in cfg.get("architectures") or [] if a.endswith("ForSequenceClassification")]
    if family == "encoder" and heads:
        family = "reranker"
    name = path.parent.name if path.name == "config.json" else path.stem
    return FamilyPreset(name=name, family=family, source=f"config file {path}", config=cfg)


def get_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> Any:
    if (local := config_preset(name)) is not None:
        return FAMILIES[local.family].build(local)
    return _build(family_catalog(extra_dirs).resolve_name(name), extra_dirs)


def is_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> bool:
    if config_preset(name) is not None:
        return True
    try:
        family_catalog(extra_dirs).resolve_name(name)
        return True
    except UnknownNameError:
        return False
