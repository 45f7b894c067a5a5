"""Errors the estimator raises for bad input. The CLI turns these into exit code 2."""

from __future__ import annotations

import difflib


class EstimatorError(ValueError):
    """Bad input to the estimator: unknown name, impossible split, malformed config."""


class UnknownNameError(EstimatorError):
    """A model or GPU name that matches no preset; carries the closest matches, found when
    first asked for (a lookup that tries one catalogue and then another raises and catches
    these: it should not pay for suggestions nobody reads)."""

    def __init__(self, kind: str, name: str, known: list[str]):
        super().__init__(kind, name, known)
        self.kind, self.name, self._known = kind, name, known
        self._suggestions: list[str] | None = None

    @property
    def suggestions(self) -> list[str]:
        if self._suggestions is None:
            self._suggestions = closest(self.name, self._known)
        return self._suggestions

    def __str__(self) -> str:
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        return (
            f"unknown {self.kind} '{self.name}'.{hint} "
            f"(`planner {self.kind}s list` shows all {len(self._known)})"
        )


class AmbiguousNameError(EstimatorError):
    """A name that fits several presets equally; carries them so the user can pick one."""

    def __init__(self, kind: str, name: str, candidates: list[str]):
        self.kind, self.name, self.candidates = kind, name, candidates
        super().__init__(
            f"{kind} name '{name}' is ambiguous: it fits {', '.join(candidates)}; give one of these"
        )


class SplitError(EstimatorError):
    """A TP/PP/EP split that the model or the hardware cannot run; names the rule."""


def closest(name: str, known: list[str], n: int = 3) -> list[str]:
    """Closest known names: difflib on lowercase, plus substring hits (e.g. '70b')."""
    low = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(low), n=n, cutoff=0.5)
    if len(hits) < n:
        for k in sorted(low):
            if name.lower() in k and k not in hits:
                hits.append(k)
            if len(hits) >= n:
                break
    return [low[h] for h in hits]
