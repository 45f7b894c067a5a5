"""Model families beyond language models: each a set of transformer stacks (see
:mod:`estimator.stack`) with its own workload, metrics and demand unit, evaluated on the same
roofline (:mod:`estimator.roofline`), formats and efficiency factors as the LLMs.

Families so far: text encoders and rerankers (``encoder``, ``reranker``), speech recognition
(``asr``, Whisper), and JEPA world models (``jepa``).
"""

from .catalog import FamilyModel, family_catalog, get_family_model

__all__ = ["FamilyModel", "family_catalog", "get_family_model"]
