"""Name -> preset key indexes: exact names and aliases for any catalogue, plus the readings
of :mod:`estimator.names` for models (Hugging Face ids and derivatives) and GPUs (product
names as the tools print them). Unknown names suggest the closest; names that fit several
presets list them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import AmbiguousNameError, UnknownNameError
from .names import compact, derivations, gpu_key, model_key, without_org

T = TypeVar("T")


class Catalog(Generic[T]):
    """Name -> item with case-insensitive aliases and closest-name suggestions."""

    def __init__(self, kind: str, items: dict[str, T], aliases: dict[str, str]):
        self.kind, self.items, self.aliases = kind, items, aliases
        self._index = {k.lower(): k for k in items}
        self._index.update({a.lower(): n for a, n in aliases.items()})

    def names(self) -> list[str]:
        return sorted(self.items)

    def resolve_name(self, name: str) -> str:
        key = self._index.get(name.strip().lower())
        if key is None:
            raise UnknownNameError(self.kind, name, self.names())
        return key

    def get(self, name: str) -> T:
        return self.items[self.resolve_name(name)]


@dataclass(frozen=True)
class Resolution:
    """A typed model name read as a preset: the preset, the weight format a quantisation
    suffix implies (None: none stated), and how it was read (for `models show`)."""

    key: str
    weights: str | None
    how: str


class ModelCatalog(Catalog[T]):
    """Models: exact name or alias first, then Hugging Face readings (org dropped, org--name,
    derivative suffixes stripped one at a time)."""

    def __init__(self, kind: str, items: dict[str, T], aliases: dict[str, str]):
        super().__init__(kind, items, aliases)
        self._full: dict[str, str] = {}
        short: dict[str, set[str]] = defaultdict(set)
        tight: dict[str, set[str]] = defaultdict(set)
        for spelling, key in [*((n, n) for n in items), *aliases.items()]:
            k = model_key(spelling)
            self._full[k] = key
            short[without_org(k)].add(key)
            tight[compact(k)].add(key)
        self._short, self._compact = dict(short), dict(tight)

    def _lookup(self, key: str) -> str | None:
        if key in self._full:
            return self._full[key]
        for index, k in ((self._short, without_org(key)), (self._compact, compact(key))):
            hits = index.get(k, set())
            if len(hits) > 1:
                raise AmbiguousNameError(self.kind, key, sorted(hits))
            if hits:
                return next(iter(hits))
        return None

    def resolve(self, name: str) -> Resolution:
        key = model_key(name)
        for d in derivations(key):
            hit = self._lookup(d.key)
            if hit is None:
                continue
            if not d.stripped:
                how = "preset name" if hit.lower() == key else f"alias of {hit}"
            else:
                suffix = "".join(reversed(d.stripped)).strip()
                how = f"{name.strip()} derives from {hit} (suffix {suffix})"
            return Resolution(hit, d.weights, how)
        self._ambiguous_prefix(key, name)
        raise UnknownNameError(self.kind, name, self.names())

    def _ambiguous_prefix(self, key: str, name: str) -> None:
        """A name that is the leading words of several presets ('llama-3', 'mixtral')."""
        base = without_org(key)
        hits = sorted({v for k, vs in self._short.items() if k.startswith(base + "-") for v in vs})
        if len(hits) > 1:
            raise AmbiguousNameError(self.kind, name, hits)

    def resolve_name(self, name: str) -> str:
        return self.resolve(name).key


class GpuCatalog(Catalog[T]):
    """GPUs: exact name or alias, else the part's folded name and stated memory, checked
    against the preset's memory so 'A100-40GB' never reads as the 80 GB part."""

    def __init__(self, kind: str, items: dict[str, T], aliases: dict[str, str], memory):
        super().__init__(kind, items, aliases)
        self._memory = memory  # preset name -> GB
        self._by_key: dict[tuple[str, float | None], set[str]] = defaultdict(set)
        self._by_base: dict[str, set[str]] = defaultdict(set)
        for spelling, key in [*((n, n) for n in items), *aliases.items()]:
            base, mem = gpu_key(spelling)
            self._by_key[(base, mem)].add(key)
            self._by_base[base].add(key)

    def _fits(self, key: str, mem: float | None) -> bool:
        return mem is None or abs(self._memory[key] - mem) <= 0.08 * mem

    def resolve_name(self, name: str) -> str:
        exact = self._index.get(name.strip().lower())
        if exact is not None:
            return exact
        base, mem = gpu_key(name)
        # a spelling with the same memory figure is taken as the alias says (nvidia-smi
        # calls the 96 GB GH200 'GH200 480GB', its module memory); otherwise the memory
        # a name states must be the preset's
        exact = self._by_key.get((base, mem), set())
        loose = {h for h in self._by_key.get((base, None), set()) if self._fits(h, mem)}
        spread = {h for h in self._by_base.get(base, set()) if self._fits(h, mem)}
        for hits in (exact, loose, spread):
            if len(hits) == 1:
                return next(iter(hits))
            if len(hits) > 1:
                raise AmbiguousNameError(self.kind, name, sorted(hits))
        raise UnknownNameError(self.kind, name, self.names())
