"""What ``planner models list|show`` prints: every preset with its derived size, and one model
in detail (parameters, KV bytes per token, layer make-up, source)."""

from __future__ import annotations

import re
from dataclasses import asdict

from .catalog import get_model_preset, model_catalog
from .errors import EstimatorError
from .families import family_catalog, get_family_model, is_family_model
from .formats import kv_format
from .model import LanguageModel
from .resolve import get_model, resolve_model

# A size token ends a preset's series: 70b, 1.5b, 135m, 8x7b, a3b (the MoE active size).
_SIZE = re.compile(r"^(\d+x)?\d+(\.\d+)?[bm]$")


def series_of(name: str) -> str:
    """The series a preset belongs to: its name up to the size ('llama-3.1-70b' ->
    'llama-3.1', 'mixtral-8x7b' -> 'mixtral'); names without a size are their own series."""
    parts = name.split("-")
    for i, t in enumerate(parts):
        if i and _SIZE.match(t):
            return "-".join(parts[:i])
    return name


def _maker(aliases: list[str]) -> str:
    """Who publishes it: the Hugging Face org of its first aliased repo id."""
    return next((a.split("/", 1)[0] for a in aliases if "/" in a), "")


def _llm_tags(m: LanguageModel) -> list[str]:
    tags = ["llm", "moe" if m.is_moe else "dense"]
    if m.uses_mla:
        tags.append("mla")
    if m.num_mamba_layers or m.num_linear_layers:
        tags.append("hybrid")
    if any(layer.window for layer in m.layers):
        tags.append("sliding-window")
    return tags


def list_models(
    presets: tuple[str, ...] = (),
    *,
    family: str | None = None,
    vendor: str | None = None,
    series: str | None = None,
    min_params: float | None = None,
    max_params: float | None = None,
) -> list[dict]:
    """Every model preset, language models first, with derived total and active sizes;
    filtered by family or architecture tag (llm, moe, dense, mla, hybrid, diffusion...),
    maker (a Hugging Face org, substring), series (prefix) and total parameters."""
    rows = []
    cat = model_catalog(presets)
    for name in cat.names():
        m = get_model(name, presets)
        rows.append(
            {
                "name": name,
                "display_name": m.display_name,
                "total_params_b": round(m.total_params / 1e9, 3),
                "active_params_b": round(m.active_params / 1e9, 3),
                "architecture": m.kind_label(),
                "family": "llm",
                "tags": _llm_tags(m),
                "vendor": _maker(cat.items[name].aliases),
                "series": series_of(name),
                "max_context": m.max_context,
            }
        )
    fcat = family_catalog(presets)
    for name in fcat.names():
        fm = get_family_model(name, presets)
        p = fcat.items[name]
        rows.append(
            {
                "name": name,
                "display_name": p.display_name,
                "total_params_b": round(fm.params / 1e9, 3),
                "active_params_b": None,
                "architecture": p.family,
                "family": p.family,
                "tags": [p.family],
                "vendor": _maker(p.aliases),
                "series": series_of(name),
                "max_context": None,
            }
        )

    def keep(r: dict) -> bool:
        total = r["total_params_b"] * 1e9
        return (
            (family is None or family.lower() in r["tags"] or family.lower() == r["family"])
            and (vendor is None or vendor.lower() in r["vendor"].lower())
            and (series is None or r["series"].startswith(series.lower()))
            and (min_params is None or total >= min_params)
            and (max_params is None or total <= max_params)
        )

    return [r for r in rows if keep(r)]


def describe_model(name: str, kv: str = "bf16", presets: tuple[str, ...] = ()) -> dict:
    """One model (a preset of any family, or a config.json path) in detail."""
    if is_family_model(name, presets):  # a config.json path is never a family preset name
        return _describe_family(name, presets)
    ref = resolve_model(name, presets)
    m = get_model(name, presets)
    info = {
        "query": name,
        "resolved_to": ref.preset or str(ref.path),
        "resolved_how": ref.how,
        "implied_weights": ref.weights or "bf16 (none stated)",
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
        "params_derivation": param_derivation(m),
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


def param_derivation(m: LanguageModel) -> list[str]:
    """The parameter count as arithmetic a reader can check against the config."""
    c, h, v = m.counts, m.hidden_size, m.vocab_size
    lines = [f"embedding: vocab {v:,} x hidden {h:,} = {c.embed:,}"]
    lines.append(
        "lm_head: tied to the embedding (0)"
        if m.tie_word_embeddings
        else f"lm_head: vocab {v:,} x hidden {h:,} = {c.lm_head:,}"
    )

    def per(label: str, total: int, n: int, what: str) -> None:
        if n and total:
            lines.append(f"{label}: {n} {what} x {total // n:,} = {total:,}")

    per("attention", c.attention, m.num_attention_layers, "attention layers")
    per("mamba", c.mamba, m.num_mamba_layers, "Mamba layers")
    if m.linear is not None:
        kind = m.linear.kind.replace("_", " ")
        per("linear attention", c.linear, m.num_linear_layers, f"{kind} layers")
    n_dense = sum(1 for la in m.layers if la.mlp == "dense")
    per("dense MLP", c.dense_mlp, n_dense, "layers")
    if m.is_moe:
        e = m.moe.num_experts
        per(
            "routed experts",
            c.routed_experts,
            m.num_moe_layers * e,
            f"experts ({m.num_moe_layers} MoE layers x {e})",
        )
        per("router + shared experts", c.moe_always_on, m.num_moe_layers, "MoE layers")
    lines.append(f"norms: {c.norms:,}")
    if c.extra:
        lines.append(f"outside the language model: {c.extra:,} ({m.extra_params_note})")
    lines.append(f"total: {c.total:,} ({c.total / 1e9:.3f} B)")
    if m.mtp_params:
        lines.append(
            f"not loaded: {m.mtp_layers} multi-token-prediction layer(s), {m.mtp_params:,} "
            "(engines load them only to draft for speculative decoding)"
        )
    if m.is_moe:
        lines.append(
            f"active per token: {m.active_params:,} (routed experts at "
            f"{m.moe.top_k}/{m.moe.num_experts})"
        )
    return lines


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
