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

from ..catalog import Published, read_yaml, shipped_dir, user_dirs
from ..errors import EstimatorError, UnknownNameError
from ..lookup import ModelCatalog


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
    items: dict[str, FamilyPreset] = {}
    aliases: dict[str, str] = {}
    roots = [shipped_dir() / "families"] + [d / "families" for d in user_dirs(extra_dirs)]
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*/*.yaml")):
            try:
                preset = FamilyPreset.model_validate(read_yaml(path))
            except ValidationError as e:
                raise EstimatorError(f"{path}: invalid preset: {e.errors()[0]['msg']}") from None
            if preset.family not in FAMILIES:
                continue  # transcribed, but this family's physics is not built yet
            items[preset.name] = preset
            aliases.update({a: preset.name for a in preset.aliases})
    return ModelCatalog("model", items, aliases)


@lru_cache(maxsize=128)
def _build(name: str, extra_dirs: tuple[str, ...]) -> Any:
    p = family_catalog(extra_dirs).items[name]
    return FAMILIES[p.family].build(p)


def get_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> Any:
    return _build(family_catalog(extra_dirs).resolve_name(name), extra_dirs)


def is_family_model(name: str, extra_dirs: tuple[str, ...] = ()) -> bool:
    try:
        family_catalog(extra_dirs).resolve_name(name)
        return True
    except UnknownNameError:
        return False
