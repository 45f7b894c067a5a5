"""``planner models list|show`` and ``planner gpus list|show``."""

from __future__ import annotations

import click

from estimator import get_gpu, gpu_catalog
from estimator.describe import describe_model, list_models
from estimator.formats import KV_FORMATS

from ..render.catalog import gpu_text, gpus_table, model_text, models_table
from .common import FiniteRange, dump, friendly_errors, presets_of

LIST_FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")


@click.group("models")
def models_group():
    """List and inspect model presets."""


@models_group.command("list")
@click.option("--family", help="llm, dense, moe, mla, hybrid, sliding-window, diffusion_image...")
@click.option("--vendor", help="The maker's Hugging Face org, or part of it (meta, qwen...).")
@click.option("--series", help="Name prefix of the series (llama-3.1, qwen2.5, gemma-3...).")
@click.option("--min-params", type=FiniteRange(0, 1e15), help="Least total parameters (7e9).")
@click.option("--max-params", type=FiniteRange(0, 1e15), help="Most total parameters (100e9).")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def models_list(ctx, fmt, **filters):
    """Every model preset with its derived size, filtered as asked."""
    rows = list_models(presets_of(ctx), **filters)
    click.echo(dump(rows) if fmt == "json" else models_table(rows))


@models_group.command("show")
@click.argument("name")
@click.option("--kv", type=click.Choice(list(KV_FORMATS), case_sensitive=False), default="bf16")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def models_show(ctx, name, kv, fmt):
    """One model: derived parameters, KV bytes per token, layer make-up, source.
    NAME may also be a path to a local config.json."""
    info = describe_model(name, kv, presets_of(ctx))
    click.echo(dump(info) if fmt == "json" else model_text(info))


@click.group("gpus")
def gpus_group():
    """List and inspect accelerator presets."""


@gpus_group.command("list")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def gpus_list(ctx, fmt):
    """Every accelerator preset."""
    cat = gpu_catalog(presets_of(ctx))
    gpus = [cat.items[n] for n in cat.names()]
    click.echo(dump([g.model_dump() for g in gpus]) if fmt == "json" else gpus_table(gpus))


@gpus_group.command("show")
@click.argument("name")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def gpus_show(ctx, name, fmt):
    """One accelerator with every value and its source."""
    g = get_gpu(name, presets_of(ctx))
    d = g.model_dump()
    # what the estimator sizes with: device capacity as the runtime reports it
    d["capacity_runtime_gb"] = round(g.memory_bytes / 1e9, 2)
    d["capacity_runtime_gib"] = round(g.memory_bytes / 2**30, 2)
    click.echo(dump(d) if fmt == "json" else gpu_text(d))
