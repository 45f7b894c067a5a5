"""Preset catalogues: shipped YAML under ``presets/`` (GPUs, language models), plus user
folders; names resolve case-insensitively through aliases, unknown ones suggest the closest.

User folders come from ``PLANNER_PRESETS`` (os.pathsep-separated) or the ``extra_dirs``
argument (the CLI's ``--presets DIR``); a user entry with the same name overrides a
shipped one, so any value can be overridden without editing the package.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import EstimatorError
from .hardware import Accelerator
from .hf_config import model_from_config
from .lookup import GpuCatalog, ModelCatalog
from .model import LanguageModel
from .yaml_cache import ParsedYaml


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    total_params_b: float | None = None
    active_params_b: float | None = None
    # the published total counts the multi-token-prediction layers the checkpoint ships
    # (LanguageModel.mtp_params), which engines load only for speculative decoding
    mtp_included: bool = False
    source: str = ""


class ModelPreset(BaseModel):
    """A model preset file: the verbatim config.json plus where it came from."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    aliases: list[str] = []
    family: str = "llm"
    source: str
    verified: bool = True
    published: Published = Published()
    notes: str = ""
    config: dict[str, Any]

    def build(self) -> LanguageModel:
        return model_from_config(self.config, name=self.name, display_name=self.display_name)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster


def shipped_dir() -> Path:
    return Path(str(resources.files("presets")))


def user_dirs(extra_dirs: tuple[str, ...]) -> list[Path]:
    env = [d for d in os.environ.get("PLANNER_PRESETS", "").split(os.pathsep) if d]
    return [Path(d) for d in (*env, *extra_dirs)]


def read_yaml(path: Path, text: str | None = None) -> Any:
    """Parse a YAML file (its ``text``, where already read); syntax errors name the file and
    line."""
    return _parse(read_text(path) if text is None else text, path)


def read_text(path: Path) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise EstimatorError(f"cannot read {path}: {e.strerror}") from None


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)


def _load(text: str, cache: ParsedYaml | None) -> Any:
    """The YAML ``text`` parsed (remembered in ``cache``, if one is given)."""
    return cache.parse(text, _yaml) if cache else _yaml(text)


def _parse(text: str, path: Path, cache: ParsedYaml | None = None) -> Any:
    try:
        return _load(text, cache)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise EstimatorError(f"{where}: malformed YAML: {e.problem}") from None


def _validation_message(path: Path, e: ValidationError, prefix: str = "") -> str:
    lines = []
    for err in e.errors():
        key = ".".join(str(x) for x in err["loc"])
        lines.append(f"  {prefix}{key}: {err['msg']}")
    return f"{path}: invalid preset\n" + "\n".join(lines)


def _dirs(kind: str, extra_dirs: tuple[str, ...]) -> list[Path]:
    dirs = [shipped_dir() / kind]
    for d in user_dirs(extra_dirs):
        if not d.is_dir():
            raise EstimatorError(f"presets folder not found: {d}")
        sub = d / kind
        dirs.append(sub if sub.is_dir() else d)
    return dirs


def parsed_cache(kind: str, roots: list[Path], part: str = "files") -> ParsedYaml:
    """The remembered parses of a catalogue's files (``part``: whole files, or heads), read
    from its folders (``roots``)."""
    where = "|".join(str(d.resolve()) for d in roots)
    return ParsedYaml(f"{kind}:{part}:{_LOADER.__name__}:{where}")


def read_catalogue(kind: str, extra_dirs: tuple[str, ...]) -> list[tuple[Path, Any]]:
    """Every YAML file of a catalogue (shipped, then the user's folders), parsed
    (remembered between runs by each text's digest: :mod:`estimator.yaml_cache`)."""
    dirs = _dirs(kind, extra_dirs)
    with parsed_cache(kind, dirs) as cache:
        return [(p, _parse(read_text(p), p, cache)) for p in _yaml_files(dirs)]


def _yaml_files(dirs: list[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        out.extend(sorted(p for p in d.glob("*.yaml") if p.is_file()))
        out.extend(sorted(p for p in d.glob("*.yml") if p.is_file()))
    return out


@lru_cache(maxsize=8)
def gpu_catalog(extra_dirs: tuple[str, ...] = ()) -> GpuCatalog[Accelerator]:
    items: dict[str, Accelerator] = {}
    aliases: dict[str, str] = {}
    for path, data in read_catalogue("gpus", extra_dirs):
        entries = data if isinstance(data, list) else [data]
        for i, entry in enumerate(entries):
            try:
                gpu = Accelerator.model_validate(entry)
            except ValidationError as e:
                raise EstimatorError(_validation_message(path, e, f"[{i}].")) from None
            items[gpu.name] = gpu
            aliases.update({a: gpu.name for a in gpu.aliases})
    return GpuCatalog("gpu", items, aliases, {k: g.memory_gb for k, g in items.items()})


T = TypeVar("T")
_CONFIG = re.compile(r"^(config|components):", re.M)  # where the bulk of a preset begins


class LazyPresets(Mapping[str, T]):
    """Presets by name, each file read in full (and validated by ``build(path, data)``) when
    first used: a name lookup needs only the name and aliases at the top of each file, before
    its ``config:`` (the bulk of it; most of a catalogue's load time)."""

    def __init__(self, build: Callable[[Path, Any], T]) -> None:
        self.build = build
        self.paths: dict[str, tuple[Path, str]] = {}
        self._built: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        if name not in self._built:
            path, text = self.paths[name]
            self._built[name] = self.build(path, _parse(text, path))
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


def _model_preset(path: Path, data: Any) -> ModelPreset:
    try:
        return ModelPreset.model_validate(data)
    except ValidationError as e:
        raise EstimatorError(_validation_message(path, e)) from None


def preset_head(text: str, cache: ParsedYaml | None = None) -> dict | None:
    """The keys of a preset file before its ``config:`` (a diffusion pipeline's
    ``components:``): name, aliases, family... where they give a name and a list of string
    aliases (None otherwise: read the whole file)."""
    cut = _CONFIG.search(text)
    if not cut:
        return None
    try:
        head = _load(text[: cut.start()], cache)
    except yaml.YAMLError:
        return None
    if not isinstance(head, dict) or not isinstance(head.get("name"), str):
        return None
    aliases = head.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        return None
    return head


def _head(path: Path, text: str, cache: ParsedYaml) -> tuple[str, list]:
    """A model preset's name and aliases from the lines before its ``config:`` (the whole
    file, validated, where those lines do not give them)."""
    head = preset_head(text, cache)
    if head is not None:
        return head["name"], head.get("aliases", [])
    preset = _model_preset(path, _parse(text, path))
    return preset.name, preset.aliases


@lru_cache(maxsize=8)
def model_catalog(extra_dirs: tuple[str, ...] = ()) -> ModelCatalog[ModelPreset]:
    items = LazyPresets(_model_preset)
    aliases: dict[str, str] = {}
    dirs = _dirs("models", extra_dirs)
    with parsed_cache("models", dirs, "heads") as cache:
        for path in _yaml_files(dirs):
            text = read_text(path)
            name, names = _head(path, text, cache)
            items.paths[name] = (path, text)  # a user file later overrides a shipped one
            aliases.update({a: name for a in names})
    return ModelCatalog("model", items, aliases)


@lru_cache(maxsize=256)
def build_model(name: str, extra_dirs: tuple[str, ...]) -> LanguageModel:
    return model_catalog(extra_dirs).items[name].build()


def get_gpu(name: str, extra_dirs: tuple[str, ...] = ()) -> Accelerator:
    return gpu_catalog(extra_dirs).get(name)


def get_model_preset(name: str, extra_dirs: tuple[str, ...] = ()) -> ModelPreset:
    return model_catalog(extra_dirs).get(name)
