"""``planner saturation``, ``planner scaling`` and ``planner fit``: the sizing calculator's
three checks before a fleet is sized."""

from __future__ import annotations

import sys

import click

from estimator.engines import KNOBS
from estimator.errors import EstimatorError
from estimator.formats import KV_FORMATS, WEIGHT_FORMATS

from .common import (
    EXIT_INFEASIBLE,
    FAMILY_KEYS,
    FiniteRange,
    batch_family,
    collecting,
    dump,
    engine_of,
    family_from,
    family_options,
    format_options,
    friendly_errors,
    given,
    handed_over,
    length_options,
    model_of,
    model_options,
    presets_of,
    refuse_given,
    replica_options,
    split_of,
)

TABLE_JSON_CSV = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="A table with a text chart, the JSON payload, or one CSV row per point.",
)


def _formats(text: str | None, allowed, option: str) -> list[str] | None:
    if not text:
        return None
    out = [x.strip().lower() for x in text.split(",") if x.strip()]
    bad = [x for x in out if x not in allowed]
    if bad:
        raise EstimatorError(
            f"{option}: unknown format {bad[0]!r}; choose from {', '.join(allowed)}"
        )
    return out


def _emit(ctx, result, fmt: str, text) -> None:
    if handed_over(ctx, result):
        return
    if fmt == "json":
        click.echo(dump(result.to_dict()))
    elif fmt == "csv":
        import pandas as pd

        click.echo(pd.DataFrame(result.rows()).to_csv(index=False), nl=False)
    else:
        click.echo(text(result))


@click.command("saturation")
@replica_options
@length_options
@click.option(
    "--tokens-per-s",
    type=FiniteRange(0, 1e7, min_open=True),
    help="Per-user speed target: report the largest batch that still meets it (the crossing).",
)
@click.option(
    "--threshold",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="Saturation: where one more sequence adds less than this share of a lone "
    "sequence's speed.",
)
@click.option("--compare-weights", help="Overlay other weight formats, e.g. bf16,int4.")
@click.option("--compare-kv", help="Overlay other KV formats, e.g. bf16,fp8.")
@TABLE_JSON_CSV
@click.pass_context
@friendly_errors
def saturation_cmd(ctx, model_name, model_config, gpu_name, fmt, **kw):
    """Where aggregate throughput saturates while per-user speed keeps falling.

    Decode speed of one replica against its batch, from one sequence to the memory limit:
    the saturation batch, the crossing with a per-user target, and overlays for other
    weight or KV formats. --gpus beyond TP x PP only adds replicas: the curve is one
    replica's."""
    from estimator.saturation import saturation

    from ..render.sizing import saturation_text

    split = split_of(kw)
    r = saturation(
        model_of(model_name, model_config),
        gpu_name,
        **split,
        input_tokens=kw["input_tokens"],
        output_tokens=kw["output_tokens"],
        tokens_per_s=kw["tokens_per_s"],
        threshold=kw["threshold"],
        compare_weights=_formats(kw["compare_weights"], WEIGHT_FORMATS, "--compare-weights"),
        compare_kv=_formats(kw["compare_kv"], KV_FORMATS, "--compare-kv"),
        presets=presets_of(ctx),
    )
    _emit(ctx, r, fmt, saturation_text)


@click.command("scaling")
@model_options
@click.option(
    "--gpu",
    "gpu_names",
    required=True,
    help="GPU type(s), comma-separated, e.g. an NVLink part and its PCIe sibling.",
)
@format_options
@length_options
@click.option(
    "--batch",
    type=click.IntRange(1, 1_000_000),
    default=1,
    show_default=True,
    help="Sequences per replica.",
)
@click.option(
    "--max-gpus",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="Largest GPU count per replica (powers of two up to it).",
)
@click.option(
    "--modes",
    default="tp,pp",
    show_default=True,
    help="Splits to scale: tp (tensor parallel) and/or pp (pipeline parallel).",
)
@click.option(
    "--min-gain",
    type=FiniteRange(0, 1, min_open=True),
    default=0.5,
    show_default=True,
    help="A doubling is worth it while each added GPU brings at least this share of the "
    "per-GPU throughput before it.",
)
@TABLE_JSON_CSV
@click.pass_context
@friendly_errors
def scaling_cmd(ctx, model_name, model_config, gpu_names, fmt, **kw):
    """Whether another GPU helps: one replica over 1, 2, 4 ... GPUs.

    TTFT, time per output token and throughput per replica and per GPU against the GPU
    count, split by TP (and PP), for each GPU type, with the share of each step spent in
    collectives and the count past which another GPU adds less than it costs."""
    from estimator.scaling import scaling

    from ..render.sizing import scaling_text

    weights, kv, engine = kw.pop("weights"), kw.pop("kv"), engine_of(kw)
    r = scaling(
        model_of(model_name, model_config),
        gpu_names,
        weights=weights,
        kv=kv,
        engine=engine,
        batch=kw["batch"],
        input_tokens=kw["input_tokens"],
        output_tokens=kw["output_tokens"],
        max_gpus=kw["max_gpus"],
        modes=tuple(m.strip().lower() for m in kw["modes"].split(",") if m.strip()),
        min_gain=kw["min_gain"],
        presets=presets_of(ctx),
    )
    _emit(ctx, r, fmt, scaling_text)


@click.command("fit")
@model_options
@format_options
@length_options
@click.option(
    "--users",
    type=click.IntRange(1, 1_000_000),
    default=1,
    show_default=True,
    help="Sequences that must fit at once in one replica.",
)
@click.option("--gpu", "gpu_names", help="Only these GPU types, comma-separated (default: all).")
@click.option(
    "--max-gpus",
    type=click.IntRange(1, 4096),
    help="Most GPUs per replica to try [default: 64; 8 for the families served in batches].",
)
@family_options
@TABLE_JSON_CSV
@click.pass_context
@friendly_errors
def fit_cmd(ctx, model_name, model_config, gpu_names, fmt, **kw):
    """The smallest configuration that holds the model: for every GPU type, the fewest GPUs
    (and split) that hold the weights and --users sequences, with the largest batch that
    fits and the speed there, cheapest first. A diffusion, speech, encoder, VLA or world
    model: the fewest GPUs of a TP replica that hold it at batch 1, its largest batch and its
    rate there. Exit 1 when no GPU type holds it."""
    from ..minimum import minimum_fit
    from ..render.sizing import fit_text

    fam = {k: kw.pop(k) for k in FAMILY_KEYS}
    weights, kv, engine = kw.pop("weights"), kw.pop("kv"), engine_of(kw)
    names = None  # every GPU type
    if gpu_names is not None:  # given: it must name one (as `scaling` has it)
        names = [g.strip() for g in gpu_names.split(",") if g.strip()]
        if not names:
            raise click.BadParameter("names no GPU type", param_hint="--gpu")
    model = model_of(model_name, model_config)
    if batch_family(model, presets_of(ctx)):
        return _family_fit(ctx, model, weights, engine, names, fam, kw, fmt)
    refuse_given(
        ctx,
        FAMILY_KEYS,
        f"is an option of the other families' models; '{model}' is a language model",
    )
    r = minimum_fit(
        model,
        input_tokens=kw["input_tokens"],
        output_tokens=kw["output_tokens"],
        users=kw["users"],
        weights=weights,
        kv=kv,
        engine=engine,
        gpus=names,
        max_gpus=kw["max_gpus"] or 64,
        presets=presets_of(ctx),
    )
    _emit(ctx, r, fmt, fit_text)
    if not collecting(ctx) and not any(f.fits for f in r.by_gpu):
        click.echo("no GPU type holds it: see the reasons above", err=True)
        sys.exit(EXIT_INFEASIBLE)


def _family_fit(ctx, model, weights, engine, names, fam: dict, kw: dict, fmt: str) -> None:
    """`planner fit` on a model of the families served in batches."""
    from ..family_fit import DEFAULT_MAX_GPUS, family_fit
    from ..render.sizing import family_fit_text

    refuse_given(
        ctx,
        ("users", "output_tokens", "kv", *KNOBS, "images", "image_resolution"),
        f"applies to language models: '{model}' is held at batch 1",
    )
    update = {"input_tokens": kw["input_tokens"]} if given(ctx, "input_tokens") else {}
    r = family_fit(
        model,
        weights=weights,
        family=family_from(fam).model_copy(update=update),
        engine=engine,
        gpus=names,
        max_gpus=kw["max_gpus"] or DEFAULT_MAX_GPUS,
        presets=presets_of(ctx),
    )
    _emit(ctx, r, fmt, family_fit_text)
    if not collecting(ctx) and not any(f.fits for f in r.by_gpu):
        click.echo("no GPU type holds it: see the reasons above", err=True)
        sys.exit(EXIT_INFEASIBLE)
