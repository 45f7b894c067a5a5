"""``planner models list|show``, ``planner gpus list|show``, ``planner servers list`` and
``planner instances list``."""

from __future__ import annotations

import click

from estimator.formats import KV_FORMATS

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
    from estimator.describe import list_models

    from ..render.catalog import models_table

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
    from estimator.describe import describe_model

    from ..render.catalog import model_text

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
    from estimator import gpu_catalog

    from ..render.catalog import gpus_table

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
    from estimator import get_gpu
    from estimator.comm import ring_shares
    from estimator.efficiency import summary

    from ..render.catalog import gpu_text

    g = get_gpu(name, presets_of(ctx))
    d = g.model_dump()
    # what the estimator sizes with: device capacity as the runtime reports it
    d["capacity_runtime_gb"] = round(g.memory_bytes / 1e9, 2)
    d["capacity_runtime_gib"] = round(g.memory_bytes / 2**30, 2)
    d["efficiency"] = summary(g)  # the factors it runs at, and which are its family's own
    # the share of its link's rate a tensor-parallel all-reduce reaches, by GPUs in the group
    shares = ring_shares(g)
    d["efficiency"]["allreduce_share"] = {
        n: round(x, 4) for n, x in zip((2, 4, 8), shares, strict=True)
    }
    click.echo(dump(d) if fmt == "json" else gpu_text(d))


@click.group("servers")
def servers_group():
    """List the servers a purchase plan buys (presets/servers, plus a generic 8-GPU server
    for each data-centre GPU)."""


@servers_group.command("list")
@click.option("--gpu", help="Only the servers of this GPU type.")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def servers_list(ctx, gpu, fmt):
    """Every server preset: GPUs, scale-up domain, power, height, host price."""
    from estimator import get_gpu

    from ..procurement import server_catalog
    from ..render.catalog import SERVER_COLUMNS, procurement_table

    cat = server_catalog(presets_of(ctx))
    rows = [cat.items[n].model_dump(exclude={"sources", "aliases"}) for n in cat.names()]
    if gpu:
        g = get_gpu(gpu, presets_of(ctx)).name
        rows = [r for r in rows if r["gpu"] == g]
    click.echo(dump(rows) if fmt == "json" else procurement_table(rows, SERVER_COLUMNS))


@click.group("instances")
def instances_group():
    """List the cloud instances a rental plan rents (presets/instances)."""


@instances_group.command("list")
@click.option("--gpu", help="Only the instances of this GPU type.")
@click.option("--cloud", help="Only this cloud (aws, azure, gcp, lambda, ...).")
@LIST_FORMAT
@click.pass_context
@friendly_errors
def instances_list(ctx, gpu, cloud, fmt):
    """Every instance preset with its published $/hour, region, date and source."""
    from estimator import get_gpu

    from ..procurement import instances
    from ..render.catalog import INSTANCE_COLUMNS, procurement_table

    rows = [i.model_dump() for i in instances(presets_of(ctx))]
    if gpu:
        g = get_gpu(gpu, presets_of(ctx)).name
        rows = [r for r in rows if r["gpu"] == g]
    if cloud:
        rows = [r for r in rows if r["cloud"] == cloud.lower()]
    rows.sort(key=lambda r: (r["gpu"], r["usd_per_hour"] / r["gpus"], r["cloud"]))
    click.echo(dump(rows) if fmt == "json" else procurement_table(rows, INSTANCE_COLUMNS))
