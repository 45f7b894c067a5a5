"""What ``planner models list|show`` prints: every preset with its derived size, and one model
in detail (parameters, KV bytes per token, layer make-up, source)."""

from __future__ import annotations

from dataclasses import asdict

from .catalog import get_model_preset, model_catalog
from .errors import EstimatorError
from .families import family_catalog, get_family_model, is_family_model
from .formats import kv_format
from .resolve import get_model


def list_models(presets: tuple[str, ...] = ()) -> list[dict]:
    """Every model preset, language models first, with derived total and active sizes."""
    rows = []
    for name in model_catalog(presets).names():
        m = get_model(name, presets)
        rows.append(
            {
                "name": name,
                "display_name": m.display_name,
                "total_params_b": round(m.total_params / 1e9, 2),
                "active_params_b": round(m.active_params / 1e9, 2),
                "architecture": m.kind_label(),
                "family": "llm",
            }
        )
    fcat = family_catalog(presets)
    for name in fcat.names():
        fm = get_family_model(name, presets)
        rows.append(
            {
                "name": name,
                "display_name": fcat.items[name].display_name,
                "total_params_b": round(fm.params / 1e9, 3),
                "active_params_b": None,
                "architecture": fcat.items[name].family,
                "family": fcat.items[name].family,
            }
        )
    return rows


def describe_model(name: str, kv: str = "bf16", presets: tuple[str, ...] = ()) -> dict:
    """One model (a preset of any family, or a config.json path) in detail."""
    if is_family_model(name, presets):  # a config.json path is never a family preset name
        return _describe_family(name, presets)
    m = get_model(name, presets)
    info = {
        "name": m.name,
        "display_name": m.display_name,
        "model_type": m.model_type,
        "architecture": m.kind_label(),
        "total_params": m.total_params,
        "active_params": m.active_params,
        "kv_format": kv,
        "kv_bytes_per_token": m.kv_bytes_per_token(kv_format(kv).bytes_per_value),
        "state_bytes_per_sequence": m.state_bytes_per_sequence(),
        "layers": m.num_layers,
        "attention_layers": m.num_attention_layers,
        "hidden_size": m.hidden_size,
        "vocab_size": m.vocab_size,
        "max_context": m.max_context,
        "params_breakdown": asdict(m.counts),
    }
    if m.attention:
        info["attention"] = m.attention.model_dump(exclude_none=True)
    if m.moe:
        info["moe"] = m.moe.model_dump()
    if m.extra_params_note:
        info["extra_params_note"] = m.extra_params_note
    try:
        preset = get_model_preset(m.name, presets)
        info.update(_source(preset.source))
        info["published"] = preset.published.model_dump()
        info["verified"] = preset.verified
    except EstimatorError:
        info["source"] = m.display_name
    return info


def _source(text: str) -> dict:
    """Where the config was read (the address), apart from how it was transcribed."""
    address, _, detail = text.partition(" (")
    out = {"source": address}
    if detail:
        out["source_detail"] = detail.rstrip(")")
    return out


def _describe_family(name: str, presets: tuple[str, ...]) -> dict:
    """A non-LLM preset: its family, derived size against the published one, and source."""
    p = family_catalog(presets).get(name)
    fm = get_family_model(name, presets)
    return {
        "name": p.name,
        "display_name": p.display_name,
        "family": p.family,
        "total_params": int(fm.params),
        "published": p.published.model_dump(exclude_none=True),
        "verified": p.verified,
        **_source(p.source),
        "notes": p.notes,
    }
