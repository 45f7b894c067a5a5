"""Shipped preset data (YAML): accelerators in ``gpus/``, model architectures in ``models/``.

Data only; validated by the pydantic schemas in :mod:`estimator.hardware` and
:mod:`estimator.model`. Every value carries its source.
"""
