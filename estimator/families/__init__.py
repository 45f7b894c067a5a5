"""Model families beyond language models, one module each (its model schema, its builder
from a preset's config, its estimate), all on the roofline of :mod:`estimator.roofline` and
the efficiency factors the language models are calibrated with.

The registry (:mod:`.registry`) maps a family name to its builder and estimate; importing
this package registers every family below.
"""

from . import asr, diffusion, encoder, jepa, var, vla, vlm  # noqa: F401  (register themselves)
from .base import FamilyEstimate, FamilyOptions
from .registry import (
    FAMILIES,
    Family,
    FamilyPreset,
    family_catalog,
    family_of,
    get_family_model,
    is_family_model,
)

__all__ = [
    "FAMILIES",
    "Family",
    "FamilyEstimate",
    "FamilyOptions",
    "FamilyPreset",
    "family_catalog",
    "family_of",
    "get_family_model",
    "is_family_model",
]
