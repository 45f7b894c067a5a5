"""``planner estimate`` and ``planner curve``: one configuration, idle and under load."""

from __future__ import annotations

import sys

import click

from estimator.errors import EstimatorError

from .common import (
    EXIT_INFEASIBLE,
    FAMILY_KEYS,
    FORMAT,
    MAX_USERS,
    FiniteRange,
    batch_family,
    dump,
    family_from,
    family_options,
    friendly_errors,
    given,
    handed_over,
    length_options,
    model_of,
    presets_of,
    refuse_given,
    replica_options,
    serving_from,
    serving_options,
    split_of,
)


def _serving(kw: dict) -> dict:
    disaggregate = kw.pop("disaggregate")
    names = ("think_time", "prefix_hit_rate", "chunk_tokens", "arrivals") + tuple(
        k for k in list(kw) if k.startswith("spec_")
    )
    return {"serving": serving_from(**{k: kw.pop(k) for k in names}), "disaggregate": disaggregate}


@click.command("estimate")
@replica_options
@click.option(
    "--batch",
    default="1",
    show_default=True,
    help="Concurrent sequences per replica, or 'max' for the largest that fits.",
)
@length_options
@FORMAT
@serving_options
@family_options
@click.pass_context
@friendly_errors
def estimate_cmd(ctx, model_name, model_config, gpu_name, batch, fmt, **kw):
    """Will it fit, and how fast: one model on one GPU type and split.

    The main figures are for a static batch on an idle replica; `under_load` gives the same
    replica serving `--batch` users in a closed loop (queueing, prefill/decode interference
    and the serving options)."""
    from estimator.families import is_family_model

    model = model_of(model_name, model_config)
    if not is_family_model(model, presets_of(ctx)):  # a text language model
        refuse_given(
            ctx,
            FAMILY_KEYS,
            f"is an option of the other families' models (vision-language, speech, diffusion, "
            f"robot policies, world models); '{model}' is sized as a text language model",
        )
    split, serving = split_of(kw), _serving(kw)
    res = kw.pop("resolution")
    images, image_resolution = kw.pop("images"), kw.pop("image_resolution")
    input_tokens, output_tokens = kw.pop("input_tokens"), kw.pop("output_tokens")
    import estimator
    from estimator.api import parse_resolution

    from ..render.estimate import does_not_fit, estimate_text

    family = estimator.FamilyOptions(resolution=parse_resolution(res, 0) if res else None, **kw)
    e = estimator.estimate(
        model,
        gpu_name,
        batch=batch,
        input_tokens=input_tokens if given(ctx, "input_tokens") else None,
        output_tokens=output_tokens,
        images=images,
        image_resolution=image_resolution,
        family=family,
        presets=presets_of(ctx),
        **split,
        **serving,
    )
    if handed_over(ctx, e):
        return
    click.echo(dump(e.to_dict()) if fmt == "json" else estimate_text(e))
    if not e.fits:
        click.echo(does_not_fit(e), err=True)
        sys.exit(EXIT_INFEASIBLE)


@click.command("curve")
@replica_options
@length_options
@click.option("--users", "users_list", help="Comma-separated user counts, e.g. 1,2,4,8.")
@click.option(
    "--users-max",
    type=click.IntRange(1, MAX_USERS),
    help="Every user count from 1 to N (default: up to past the memory limit).",
)
@click.option(
    "--at",
    "at_users",
    type=click.IntRange(1, MAX_USERS),
    help="The operating point to report (default: the knee).",
)
@click.option("--ttft-s", type=FiniteRange(0, 1e7, min_open=True), help="TTFT target.")
@click.option(
    "--tokens-per-s",
    type=FiniteRange(0, 1e7, min_open=True),
    help="Per-user decode speed target.",
)
@click.option("--percentile", type=FiniteRange(1, 99.9), default=90.0, show_default=True)
@serving_options
@family_options
@FORMAT
@click.pass_context
@friendly_errors
def curve_cmd(ctx, model_name, model_config, gpu_name, users_list, at_users, fmt, **kw):
    """TTFT and speed as users grow: the curve, the knee, and where memory runs out.

    Users share the replicas evenly (``--gpus`` beyond TP×PP adds replicas). A diffusion,
    speech, encoder, VLA or world model: its time and throughput against its batch (each
    point the estimate at that batch, 1, 2, 4, ... up to the largest that fits)."""
    fam = {k: kw.pop(k) for k in FAMILY_KEYS}
    model = model_of(model_name, model_config)
    if batch_family(model, presets_of(ctx)):
        return _family_curve(ctx, model, gpu_name, fmt, fam, kw)
    refuse_given(
        ctx,
        FAMILY_KEYS,
        f"is an option of the other families' models; '{model}' is a language model",
    )
    users = None
    if users_list:
        try:
            users = [int(x) for x in users_list.split(",") if x.strip()]
        except ValueError:
            raise EstimatorError(
                f"--users must be comma-separated integers, not '{users_list}'"
            ) from None
    import estimator

    from ..render.curve import curve_text

    c = estimator.curve(
        model,
        gpu_name,
        users=users,
        at=at_users,
        presets=presets_of(ctx),
        **split_of(kw),
        **_serving(kw),
        **kw,
    )
    if not handed_over(ctx, c):
        click.echo(dump(c.to_dict()) if fmt == "json" else curve_text(c))


# curve options that only a language model's curve (users, targets, serving) reads
_LLM_ONLY = (
    "users_list",
    "users_max",
    "at_users",
    "ttft_s",
    "tokens_per_s",
    "percentile",
    "output_tokens",
    "ep",
    "attention_dp",
    "think_time",
    "prefix_hit_rate",
    "chunk_tokens",
    "spec_tokens",
    "arrivals",
    "disaggregate",
    "images",
    "image_resolution",
)


def _family_curve(ctx, model: str, gpu_name: str, fmt: str, fam: dict, kw: dict) -> None:
    import estimator

    from ..render.curve import batch_curve_text

    refuse_given(
        ctx,
        _LLM_ONLY,
        f"applies to language models: the curve of '{model}' is over its batch (1, 2, 4, ... "
        "up to the largest that fits)",
    )
    split = split_of(kw)
    c = estimator.batch_curve(
        model,
        gpu_name,
        split["gpus"],
        tp=split["tp"],
        pp=split["pp"],
        weights=split["weights"],
        kv=split["kv"],
        engine=split["engine"],
        input_tokens=kw["input_tokens"] if given(ctx, "input_tokens") else None,
        family=family_from(fam),
        presets=presets_of(ctx),
    )
    if not handed_over(ctx, c):
        click.echo(dump(c.to_dict()) if fmt == "json" else batch_curve_text(c))
