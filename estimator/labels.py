"""Results that carry display names for tables (``labels``: a model's or GPU's full name)
beside their data: their JSON, ``to_dict()``, leaves the names out."""

from __future__ import annotations

from dataclasses import asdict


class Labelled:
    """Mixin for a dataclass result with a ``labels`` field."""

    def to_dict(self) -> dict:
        d = asdict(self)  # type: ignore[call-overload]
        d.pop("labels")
        return d
