"""`planner` command line: a thin shell over functions a notebook user can call too.

Exit codes: 0 success, 1 no feasible configuration, 2 bad input.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict

import click
from tabulate import tabulate

from estimator import (
    EstimatorError,
    Workload,
    estimate,
    get_gpu,
    get_model,
    get_model_preset,
    gpu_catalog,
    model_catalog,
    parallel_for,
)
from estimator.advice import nearest_fit
from estimator.families.catalog import is_family_model
from estimator.formats import KV_FORMATS, WEIGHT_FORMATS, kv_format
from estimator.memory import ENGINES

from .files import atomic_write_text
from .render import pictures

EXIT_INFEASIBLE, EXIT_BAD_INPUT = 1, 2


def friendly_errors(fn):
    """Bad input becomes one clear line on stderr and exit code 2, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except EstimatorError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)

    return wrapper


def _presets(ctx: click.Context) -> tuple[str, ...]:
    return tuple(ctx.find_root().obj.get("presets", ()))


def _dump(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=float)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--presets",
    "presets",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra folder of preset YAML (gpus/, models/); overrides shipped entries.",
)
@click.version_option(package_name="planner")
@click.pass_context
def main(ctx: click.Context, presets: tuple[str, ...]) -> None:
    """Size GPU fleets for AI model serving."""
    ctx.obj = {"presets": presets}


# ---------------------------------------------------------------------------- estimate
def replica_options(fn):
    """--model/--model-config, --gpu, --gpus, split, formats and engine: shared by the
    commands that evaluate one configuration."""
    for opt in reversed(_REPLICA_OPTIONS):
        fn = opt(fn)
    return fn


_REPLICA_OPTIONS = [
    click.option(
        "--model", "model_name", help="Model preset name or alias (see `planner models list`)."
    ),
    click.option(
        "--model-config", type=click.Path(), help="Path to a local Hugging Face config.json."
    ),
    click.option(
        "--gpu", "gpu_name", required=True, help="Accelerator preset (see `planner gpus list`)."
    ),
    click.option(
        "--gpus",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="GPUs in total; more than TP×PP runs data-parallel replicas.",
    ),
    click.option("--tp", type=click.IntRange(min=1), help="Tensor parallel (default: GPUs ÷ PP)."),
    click.option("--pp", type=click.IntRange(min=1), help="Pipeline parallel (default 1)."),
    click.option(
        "--ep", type=click.IntRange(min=1), help="Expert parallel, divides TP (default 1)."
    ),
    click.option(
        "--attention-dp", is_flag=True, help="Run attention data-parallel across the TP group."
    ),
    click.option(
        "--weights",
        type=click.Choice(list(WEIGHT_FORMATS), case_sensitive=False),
        default="bf16",
        show_default=True,
    ),
    click.option(
        "--kv",
        type=click.Choice(list(KV_FORMATS), case_sensitive=False),
        default="bf16",
        show_default=True,
    ),
    click.option(
        "--engine",
        type=click.Choice(list(ENGINES)),
        default="vllm",
        show_default=True,
        help="Memory policy of the serving engine.",
    ),
]


_SERVING_OPTIONS = [
    click.option(
        "--disaggregate",
        help="P:D - serve with P prefill-only and D decode-only "
        "copies of the replica (users are per P+D unit).",
    ),
    click.option(
        "--think-time",
        type=click.FloatRange(min=0),
        default=0.0,
        show_default=True,
        help="Mean seconds a user pauses between an answer and the next prompt.",
    ),
    click.option(
        "--prefix-hit-rate",
        type=click.FloatRange(0, 1, max_open=True),
        default=0.0,
        show_default=True,
        help="Share of prompt tokens served from the prefix cache.",
    ),
    click.option(
        "--chunk-tokens",
        type=click.IntRange(min=16),
        help="Chunked-prefill tokens per iteration (default: the engine's).",
    ),
    click.option(
        "--spec-tokens",
        type=click.IntRange(1, 16),
        help="Speculative decoding: tokens proposed per step (off if not given).",
    ),
    click.option(
        "--spec-acceptance",
        type=click.FloatRange(0, 1),
        default=0.7,
        show_default=True,
        help="Speculative decoding: chance each proposed token is accepted.",
    ),
    click.option(
        "--spec-method", type=click.Choice(["draft", "ngram"]), default="draft", show_default=True
    ),
    click.option(
        "--spec-draft-cost",
        type=click.FloatRange(0, 1),
        help="One draft token's time as a share of a target step (default: draft 0.1, ngram 0).",
    ),
]


def serving_options(fn):
    """Think time, prefix cache, chunked prefill and speculative decoding (all off by default)."""
    for opt in reversed(_SERVING_OPTIONS):
        fn = opt(fn)
    return fn


def _serving(
    think_time,
    prefix_hit_rate,
    chunk_tokens,
    spec_tokens,
    spec_acceptance,
    spec_method,
    spec_draft_cost,
    disaggregate=None,  # handled by the caller: a deployment shape, not an engine option
):
    from estimator.load import ServingOptions, Speculative

    spec = None
    if spec_tokens:
        spec = Speculative(
            method=spec_method,
            tokens=spec_tokens,
            acceptance=spec_acceptance,
            draft_cost=spec_draft_cost,
        )
    return ServingOptions(
        think_time_s=think_time,
        prefix_hit_rate=prefix_hit_rate,
        chunk_tokens=chunk_tokens,
        speculative=spec,
    )


def family_options(fn):
    """Workload options of the non-LLM families."""
    opts = [
        click.option(
            "--audio-seconds",
            type=click.FloatRange(min=0, min_open=True),
            default=30.0,
            show_default=True,
            help="Speech: audio per request.",
        ),
        click.option(
            "--beam",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Speech: beam width.",
        ),
        click.option("--frames", type=click.IntRange(min=1), help="Video/JEPA: frames per clip."),
        click.option("--resolution", help="Image/video: WxH (default: the model's)."),
        click.option(
            "--horizon",
            type=click.IntRange(min=0),
            default=0,
            help="JEPA-AC: planning horizon (steps).",
        ),
        click.option(
            "--samples",
            type=click.IntRange(min=0),
            default=0,
            help="JEPA-AC: candidate action sequences per planning step.",
        ),
        click.option(
            "--images",
            type=click.IntRange(min=0),
            default=1,
            show_default=True,
            help="Vision-language: images per request.",
        ),
        click.option(
            "--image-resolution", help="Vision-language: WxH of each image (default 1024x1024)."
        ),
        click.option(
            "--steps",
            type=click.IntRange(min=1),
            help="Diffusion: denoising steps (default: the model card's).",
        ),
        click.option(
            "--guidance/--no-guidance",
            default=None,
            help="Diffusion: classifier-free guidance (doubles the denoiser batch).",
        ),
        click.option(
            "--cameras",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="VLA: camera images per observation.",
        ),
        click.option(
            "--action-horizon",
            type=click.IntRange(min=1),
            help="VLA: actions per chunk (default: the model's).",
        ),
        click.option(
            "--flow-steps",
            type=click.IntRange(min=1),
            help="VLA: flow-matching denoising steps (default: the model's).",
        ),
        click.option(
            "--control-hz",
            type=click.FloatRange(min=0, min_open=True),
            default=50.0,
            show_default=True,
            help="VLA: robot control rate.",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _parse_resolution(text: str | None, default: int) -> tuple[int, int]:
    if not text:
        return default, default
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise EstimatorError(f"--resolution expects WxH (e.g. 1024x1024), not '{text}'") from None
    if w < 1 or h < 1:
        raise EstimatorError("--resolution must be positive")
    return w, h


def _family_estimate(
    name, gpu_name, gpus, tp, pp, ep, attention_dp, weights, kv, batch, fam, fmt, pre
):
    from estimator.families import get_family_model
    from estimator.families.diffusion import DiffusionModel
    from estimator.families.models import AsrModel, EncoderModel
    from estimator.families.perf import (
        estimate_asr,
        estimate_diffusion,
        estimate_encoder,
        estimate_jepa,
        estimate_var,
        estimate_vla,
    )

    model = get_family_model(name, pre)
    gpu = get_gpu(gpu_name, pre)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    try:
        b = int(batch)
    except ValueError:
        raise EstimatorError(
            f"--batch must be a positive integer for {model.family} models"
        ) from None
    if b < 1:
        raise EstimatorError("--batch must be at least 1")
    if isinstance(model, EncoderModel):
        tokens = fam["input_tokens"]
        # the LLM default (1024) is longer than a BERT reads: unasked, use the model's maximum
        capped = not fam["input_tokens_given"] and model.max_tokens and tokens > model.max_tokens
        tokens = model.max_tokens if capped else tokens
        e = estimate_encoder(model, gpu, par, weights, b, tokens)
        if capped:
            e.notes.append(f"--input-tokens not given: {tokens} ({model.name}'s maximum) used")
    elif isinstance(model, AsrModel):
        e = estimate_asr(model, gpu, par, weights, b, fam["audio_seconds"], fam["beam"], kv=kv)
    elif getattr(model, "family", "") == "var":
        g = True if fam["guidance"] is None else fam["guidance"]
        e = estimate_var(model, gpu, par, weights, b, g)
    elif getattr(model, "family", "") == "vla":
        e = estimate_vla(
            model,
            gpu,
            par,
            weights,
            b,
            fam["cameras"],
            fam["action_horizon"],
            fam["flow_steps"],
            fam["control_hz"],
        )
    elif isinstance(model, DiffusionModel):
        dflt = model.defaults
        r = dflt.get("resolution", [1024, 1024])
        w, h = _parse_resolution(fam["resolution"], r[0]) if fam["resolution"] else (r[0], r[1])
        g = dflt.get("guidance", True) if fam["guidance"] is None else fam["guidance"]
        steps = fam["steps"] or dflt.get("steps", 30)
        frames = fam["frames"] or dflt.get("frames", 1)
        e = estimate_diffusion(model, gpu, par, weights, b, w, h, steps, g, frames)
    else:
        w, h = _parse_resolution(fam["resolution"], model.resolution)
        e = estimate_jepa(
            model,
            gpu,
            par,
            weights,
            b,
            fam["frames"] or model.frames,
            w,
            h,
            fam["horizon"],
            fam["samples"],
        )
    if fmt == "json":
        click.echo(_dump(e.to_dict()))
    else:
        m = e.memory_gb
        rows = [
            ["fits", "yes" if e.fits else "NO"],
            ["largest batch that fits", e.max_batch],
            ["bottleneck", e.bottleneck],
        ]
        rows += [[k, f"{v:.4g}" if isinstance(v, float) else v] for k, v in e.metrics.items()]
        click.echo(
            f"{model.display_name or model.name} ({e.family}) on {par.gpus} x "
            f"{gpu.display_name} (TP{par.tp}), weights {weights}, math in "
            f"{e.compute_precision}"
        )
        click.echo(tabulate(rows, tablefmt="simple"))
        click.echo(
            f"memory per GPU: weights {m['weights']:.2f} GB, KV {m['kv_cache']:.2f} GB, "
            f"activations {m['activations']:.2f} GB, overhead {m['overhead']:.2f} GB, "
            f"total {m['total']:.2f} of {m['capacity']:.0f} GB"
        )
        for n in e.notes:
            click.echo(f"note: {n}")
    if not e.fits:
        click.echo(
            f"does not fit: needs {e.memory_gb['total']:.1f} GB per GPU, the engine "
            f"allows {e.memory_gb['usable']:.1f} GB",
            err=True,
        )
        sys.exit(EXIT_INFEASIBLE)


@main.command("estimate")
@replica_options
@click.option(
    "--batch",
    default="1",
    show_default=True,
    help="Concurrent sequences per replica, or 'max' for the largest that fits.",
)
@click.option("--input-tokens", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--output-tokens", type=click.IntRange(min=1), default=256, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@serving_options
@family_options
@click.pass_context
@friendly_errors
def estimate_cmd(
    ctx,
    model_name,
    model_config,
    gpu_name,
    gpus,
    tp,
    pp,
    ep,
    attention_dp,
    weights,
    kv,
    engine,
    batch,
    input_tokens,
    output_tokens,
    fmt,
    audio_seconds,
    beam,
    frames,
    resolution,
    horizon,
    samples,
    images,
    image_resolution,
    steps,
    guidance,
    cameras,
    action_horizon,
    flow_steps,
    control_hz,
    **serving_kw,
):
    """Will it fit, and how fast: one model on one GPU type and split.

    The main figures are for a static batch on an idle replica; `under_load` gives the same
    replica serving `--batch` users in a closed loop (queueing, prefill/decode interference
    and the serving options)."""
    pre = _presets(ctx)
    vlm = None
    if model_name and not model_config and is_family_model(model_name, pre):
        from estimator.families import get_family_model

        vlm = get_family_model(model_name, pre)
        if getattr(vlm, "family", "") != "vlm":
            vlm = None
    if vlm is None and model_name and not model_config and is_family_model(model_name, pre):
        fam = dict(
            cameras=cameras,
            action_horizon=action_horizon,
            flow_steps=flow_steps,
            control_hz=control_hz,
            steps=steps,
            guidance=guidance,
            audio_seconds=audio_seconds,
            beam=beam,
            frames=frames,
            resolution=resolution,
            horizon=horizon,
            samples=samples,
            input_tokens=input_tokens,
            input_tokens_given=ctx.get_parameter_source("input_tokens")
            is not click.core.ParameterSource.DEFAULT,
        )
        return _family_estimate(
            model_name, gpu_name, gpus, tp, pp, ep, attention_dp, weights, kv, batch, fam, fmt, pre
        )
    model = vlm.llm if vlm is not None else _resolve_model(model_name, model_config, pre)
    gpu = get_gpu(gpu_name, pre)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    text_tokens, visual = input_tokens, None
    if vlm is not None:  # images add visual tokens to the prompt and encoder time to prefill
        w, h = _parse_resolution(image_resolution, 1024)
        per_image, patches = vlm.tokens(w, h)
        input_tokens = text_tokens + images * per_image
        visual = {
            "visual_tokens": images * per_image,
            "vision_patches": images * patches,
            "images": images,
            "image_resolution": [w, h],
        }
    if batch.strip().lower() == "max":
        from estimator.estimate import Evaluator

        ev = Evaluator(model, gpu, par, weights, kv, engine)
        b = int(ev.max_batch(input_tokens + output_tokens))
        b_req = max(b, 1)
    else:
        try:
            b_req = int(batch)
        except ValueError:
            raise EstimatorError(
                f"--batch must be a positive integer or 'max', not '{batch}'"
            ) from None
        if b_req < 1:
            raise EstimatorError("--batch must be at least 1")
    wl = Workload(input_tokens=input_tokens, output_tokens=output_tokens, batch=b_req)
    est = estimate(model, gpu, par, wl, weights=weights, kv=kv, engine=engine)
    if visual is not None:
        from estimator.roofline import Machine

        mc = Machine(gpu, par, "bf16")
        w, h = visual["image_resolution"]
        enc = float(vlm.vision_seconds(mc, b_req * images, w, h))
        visual["vision_encoder_s"] = enc
        est.prefill_s += enc
        est.ttft_s += enc
        est.e2e_latency_s += enc
        o = output_tokens
        est.output_tokens_per_s = b_req * o / (est.prefill_s + (o - 1) * est.tpot_s)
        est.total_output_tokens_per_s = est.output_tokens_per_s * par.replicas
        est.notes.append(
            f"{images} image(s) of {w}x{h}: {visual['visual_tokens']} visual "
            f"tokens in the prompt; the image encoder adds {enc * 1e3:.1f} ms"
        )
    advice = [] if est.fits else nearest_fit(model, gpu, par, wl, weights, kv, engine)
    loaded = _under_load(
        model,
        gpu,
        par,
        weights,
        kv,
        engine,
        input_tokens,
        output_tokens,
        b_req,
        _serving(**serving_kw),
        serving_kw.get("disaggregate"),
    )
    if fmt == "json":
        d = est.to_dict()
        d["under_load"] = loaded
        if visual is not None:
            d.update(visual)
        if not est.fits:
            d["advice"] = advice
        click.echo(_dump(d))
    else:
        click.echo(_estimate_table(est, model.display_name or model.name, gpu.display_name))
        if loaded:
            click.echo(
                f"under load ({b_req} users in a closed loop, think "
                f"{loaded['think_time_s']:g} s): TTFT {loaded['ttft_s']:.3g} s mean, "
                f"{loaded['ttft_p90_s']:.3g} s p90; {loaded['per_user_tokens_per_s']:.1f} "
                f"tok/s per user; {loaded['output_tokens_per_s']:.0f} tok/s per replica"
            )
    if not est.fits:
        m = est.memory_gb
        msg = (
            f"does not fit: needs {m.total:.1f} GB per GPU, the engine allows {m.usable:.1f} GB "
            f"of {m.capacity:.0f} GB: short by {est.shortfall_gb:.1f} GB per GPU"
        )
        if advice:
            msg += "\nnearest that fits: " + "; ".join(advice)
        click.echo(msg, err=True)
        sys.exit(EXIT_INFEASIBLE)


def _under_load(
    model, gpu, par, weights, kv, engine, i, o, users, opts, disaggregate=None
) -> dict | None:
    from estimator import Evaluator
    from estimator.load import (
        disaggregated_point,
        kv_transfer_seconds,
        load_point,
        prepare_steps,
    )

    ev = Evaluator(model, gpu, par, weights, kv, engine)
    st = prepare_steps(ev, i, o, opts)
    if st.slots < 1:
        return None
    split = _parse_split(disaggregate) if disaggregate else None
    if split:
        lp = disaggregated_point(
            st,
            split[0],
            split[1],
            [users],
            opts.think_time_s,
            90.0,
            kv_transfer_s=kv_transfer_seconds(ev, st.input_tokens),
        )
    else:
        lp = load_point(st, [users], opts.think_time_s, 90.0)
    return {
        "users": users,
        "disaggregated": {"prefill_replicas": split[0], "decode_replicas": split[1]}
        if split
        else None,
        "think_time_s": opts.think_time_s,
        "ttft_s": float(lp.ttft_s[0]),
        "ttft_p90_s": float(lp.ttft_pct_s[0]),
        "per_user_tokens_per_s": float(lp.per_user_tokens_per_s[0]),
        "output_tokens_per_s": float(lp.output_tokens_per_s[0]),
        "options": opts.model_dump(),
    }


def _resolve_model(name, config_path, pre):
    if bool(name) == bool(config_path):
        raise EstimatorError("give exactly one of --model NAME or --model-config PATH")
    return get_model(config_path if config_path else name, pre)


def _estimate_table(e, model_label: str, gpu_label: str) -> str:
    p = e.parallel
    wl = e.workload
    head = (
        f"{model_label} on {p['tp'] * p['pp'] * p['replicas']} x {gpu_label} "
        f"(TP{p['tp']} PP{p['pp']} EP{p['ep']}{' attn-DP' if p['attention_dp'] else ''}"
        f"{', ' + str(p['replicas']) + ' replicas' if p['replicas'] > 1 else ''}), "
        f"weights {e.weights_format}, KV {e.kv_format}, math in {e.compute_precision}, "
        f"engine {e.engine}"
    )
    work = (
        f"batch {wl['batch']} per replica, {wl['input_tokens']} in / {wl['output_tokens']} out "
        "tokens"
    )
    rows = [
        ["fits", "yes" if e.fits else f"NO (short {e.shortfall_gb:.1f} GB per GPU)"],
        ["largest batch that fits", e.max_batch],
        [
            "prefill (idle replica)"
            if wl["batch"] == 1
            else f"prefill of all {wl['batch']} prompts at once (idle replica)",
            f"{e.prefill_s * 1e3:.1f} ms",
        ],
        [
            "TTFT" if wl["batch"] == 1 else "TTFT (all arrive together; see 'under load')",
            f"{e.ttft_s * 1e3:.1f} ms",
        ],
        ["time per output token", f"{e.tpot_s * 1e3:.2f} ms"],
        ["per-user speed", f"{e.per_user_tokens_per_s:.1f} tok/s"],
        ["replica decode throughput", f"{e.decode_tokens_per_s:.0f} tok/s"],
        ["replica output throughput (with prefill)", f"{e.output_tokens_per_s:.0f} tok/s"],
    ]
    if p["replicas"] > 1:
        rows.append(["all replicas output throughput", f"{e.total_output_tokens_per_s:.0f} tok/s"])
    rows += [
        ["end-to-end latency", f"{e.e2e_latency_s:.2f} s"],
        ["bottleneck (decode)", e.bottleneck],
        ["bottleneck (prefill)", e.prefill_bottleneck],
    ]
    d = e.decode_times_s
    step = (
        f"decode step: memory {d['memory'] * 1e3:.2f} ms, compute {d['compute'] * 1e3:.2f} ms, "
        f"interconnect {d['comm'] * 1e3:.2f} ms, fixed overheads {d['overhead'] * 1e3:.2f} ms"
    )
    out = [head, work, "", tabulate(rows, tablefmt="simple"), "", *pictures(e), step]
    if e.notes:
        out += ["", *("note: " + n for n in e.notes)]
    return "\n".join(out)


# ---------------------------------------------------------------------------- models
@main.group("models")
def models_group():
    """List and inspect model presets."""


@models_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
@friendly_errors
def models_list(ctx, fmt):
    """Every model preset with its derived size."""
    pre = _presets(ctx)
    cat = model_catalog(pre)
    rows = []
    for name in cat.names():
        m = get_model(name, pre)
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
    from estimator.families import family_catalog, get_family_model

    fcat = family_catalog(pre)
    for name in fcat.names():
        fm = get_family_model(name, pre)
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
    if fmt == "json":
        click.echo(_dump(rows))
    else:
        click.echo(
            tabulate(
                [
                    [r["name"], r["total_params_b"], r["active_params_b"] or "-", r["architecture"]]
                    for r in rows
                ],
                headers=["model", "total B", "active B", "architecture / family"],
            )
        )


@models_group.command("show")
@click.argument("name")
@click.option("--kv", type=click.Choice(list(KV_FORMATS), case_sensitive=False), default="bf16")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
@friendly_errors
def models_show(ctx, name, kv, fmt):
    """One model: derived parameters, KV bytes per token, layer make-up, source.
    NAME may also be a path to a local config.json."""
    pre = _presets(ctx)
    if is_family_model(name, pre):  # a config.json path is never a family preset name
        _family_show(name, pre, fmt)
        return
    m = get_model(name, pre)
    kvb = kv_format(kv).bytes_per_value
    c = m.counts
    info = {
        "name": m.name,
        "display_name": m.display_name,
        "model_type": m.model_type,
        "architecture": m.kind_label(),
        "total_params": m.total_params,
        "active_params": m.active_params,
        "kv_format": kv,
        "kv_bytes_per_token": m.kv_bytes_per_token(kvb),
        "state_bytes_per_sequence": m.state_bytes_per_sequence(),
        "layers": m.num_layers,
        "attention_layers": m.num_attention_layers,
        "hidden_size": m.hidden_size,
        "vocab_size": m.vocab_size,
        "max_context": m.max_context,
        "params_breakdown": asdict(c),
    }
    if m.attention:
        info["attention"] = m.attention.model_dump(exclude_none=True)
    if m.moe:
        info["moe"] = m.moe.model_dump()
    if m.extra_params_note:
        info["extra_params_note"] = m.extra_params_note
    try:
        preset = get_model_preset(m.name, pre)
        info["source"] = preset.source
        info["published"] = preset.published.model_dump()
        info["verified"] = preset.verified
    except EstimatorError:
        info["source"] = m.display_name
    if fmt == "json":
        click.echo(_dump(info))
        return
    rows = [[k, v] for k, v in info.items() if not isinstance(v, dict)]
    rows += [[f"params.{k}", f"{v:,}"] for k, v in asdict(c).items()]
    click.echo(tabulate(rows, tablefmt="simple"))


def _family_show(name: str, pre: tuple[str, ...], fmt: str) -> None:
    """A non-LLM preset: its family, derived size against the published one, and source."""
    from estimator.families import family_catalog, get_family_model

    p = family_catalog(pre).get(name)
    fm = get_family_model(name, pre)
    info = {
        "name": p.name,
        "display_name": p.display_name,
        "family": p.family,
        "total_params": int(fm.params),
        "published": p.published.model_dump(exclude_none=True),
        "verified": p.verified,
        "source": p.source,
        "notes": p.notes,
    }
    if fmt == "json":
        click.echo(_dump(info))
        return
    rows = [
        [k, f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v]
        for k, v in info.items()
        if not isinstance(v, dict) and v != ""
    ]
    rows += [[f"published.{k}", v] for k, v in info["published"].items()]
    click.echo(tabulate(rows, tablefmt="simple", disable_numparse=True))


# ---------------------------------------------------------------------------- gpus
@main.group("gpus")
def gpus_group():
    """List and inspect accelerator presets."""


@gpus_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
@friendly_errors
def gpus_list(ctx, fmt):
    """Every accelerator preset."""
    cat = gpu_catalog(_presets(ctx))
    gpus = [cat.items[n] for n in cat.names()]
    if fmt == "json":
        click.echo(_dump([g.model_dump() for g in gpus]))
        return
    rows = [
        [
            g.name,
            g.vendor,
            g.memory_gb,
            g.memory_bandwidth_gb_s,
            g.dense_tflops.get("bf16"),
            g.dense_tflops.get("fp8"),
            g.dense_tflops.get("fp4"),
            f"{g.scale_up.kind} x{g.scale_up.domain_size}",
            g.tdp_w,
            g.rental_usd_per_hour,
        ]
        for g in gpus
    ]
    click.echo(
        tabulate(
            rows,
            headers=[
                "gpu",
                "vendor",
                "GB",
                "GB/s",
                "bf16 TF",
                "fp8 TF",
                "fp4 TF",
                "scale-up",
                "TDP W",
                "$/h",
            ],
        )
    )


@gpus_group.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
@friendly_errors
def gpus_show(ctx, name, fmt):
    """One accelerator with every value and its source."""
    g = get_gpu(name, _presets(ctx))
    d = g.model_dump()
    if fmt == "json":
        click.echo(_dump(d))
        return
    rows = []
    for k, v in d.items():
        if isinstance(v, dict):
            rows += [[f"{k}.{kk}", vv] for kk, vv in v.items()]
        else:
            rows.append([k, v])
    click.echo(tabulate(rows, tablefmt="simple", maxcolwidths=[None, 90]))


if __name__ == "__main__":  # pragma: no cover
    main()


# ---------------------------------------------------------------------------- planner
def _scenario_errors(fn):
    return friendly_errors(fn)


_OUT = click.option(
    "--out", type=click.Path(dir_okay=False), help="Write a ranked CSV (atomically)."
)
_FMT = click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)


@main.command("solve")
@click.argument("scenario_file", type=click.Path())
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Plans to rank: the recommendation and the next-best distinct fleets.",
)
@_FMT
@_OUT
@click.option("--explain", is_flag=True, help="Also list candidates excluded and why.")
@click.pass_context
@friendly_errors
def solve_cmd(ctx, scenario_file, top, fmt, out, explain):
    """The cheapest feasible fleet for a scenario, and ranked alternatives."""
    from .report import ranked_rows, result_json, result_table, write_csv
    from .scenario import load_scenario
    from .solve import plan_scenario

    sc = load_scenario(scenario_file)
    res = plan_scenario(sc, _presets(ctx), top=top)
    if fmt == "json":
        d = result_json(res)
        if explain:
            d["excluded"] = {
                w: [{"candidate": c, "reason": r} for c, r in ex] for w, ex in res.excluded.items()
            }
        click.echo(_dump(d))
    else:
        click.echo(result_table(res, top), nl=False)
        if explain:
            for w, ex in res.excluded.items():
                click.echo(f"\nExcluded candidates for '{w}' ({len(ex)}):")
                for c, r in ex:
                    click.echo(f"  {c}: {r}")
    if out:
        write_csv(ranked_rows(res), out)
    if not res.feasible:
        if fmt == "json":
            click.echo(f"no feasible plan: {res.reason}", err=True)
        sys.exit(EXIT_INFEASIBLE)


@main.command("compare")
@click.argument("scenario_file", type=click.Path())
@click.option("--by", type=click.Choice(["vendor", "gpu"]), default="vendor", show_default=True)
@_FMT
@_OUT
@click.pass_context
@friendly_errors
def compare_cmd(ctx, scenario_file, by, fmt, out):
    """The best plan for each vendor or GPU type, side by side."""
    from .report import compare_json, compare_table, ranked_rows, write_csv
    from .scenario import load_scenario
    from .solve import compare

    sc = load_scenario(scenario_file)
    groups = compare(sc, by, _presets(ctx))
    click.echo(_dump(compare_json(groups, by)) if fmt == "json" else compare_table(groups, by))
    if out:
        rows = []
        for i, g in enumerate(groups):
            for r in ranked_rows(g.result, {by: g.group, "group_rank": i + 1}):
                rows.append(r)
        write_csv(rows, out)
    if not any(g.result.feasible for g in groups):
        sys.exit(EXIT_INFEASIBLE)


@main.command("sweep")
@click.argument("scenario_file", type=click.Path())
@click.option(
    "--set",
    "sets",
    multiple=True,
    required=True,
    help="KEY=V1,V2,... (repeatable), e.g. budget.max_usd=2e6,4e6 or "
    "workloads.chat.users=1000,2000",
)
@_FMT
@_OUT
@click.pass_context
@friendly_errors
def sweep_cmd(ctx, scenario_file, sets, fmt, out):
    """Rerun the solve for every combination of --set values; one row per combination."""
    from .report import per_mtok, ranked_rows, result_json, write_csv
    from .scenario import load_scenario
    from .solve import parse_sets, plan_scenario, sweep_combinations

    combos = sweep_combinations(parse_sets(sets))
    results = []
    for combo in combos:
        sc = load_scenario(scenario_file, overrides=combo)
        results.append((combo, plan_scenario(sc, _presets(ctx), top=1)))
    if fmt == "json":
        click.echo(_dump([{"set": c, **result_json(r)} for c, r in results]))
    else:
        keys = list(combos[0]) if combos else []
        rows = []
        for c, r in results:
            if r.feasible:
                p = r.plan
                rows.append(
                    [
                        *(c[k] for k in keys),
                        "yes",
                        p.label(),
                        p.total_gpus,
                        f"${p.cost_usd:,.0f}",
                        per_mtok(p.usd_per_million_tokens),
                        "",
                    ]
                )
            else:
                rows.append([*(c[k] for k in keys), "no", "-", "-", "-", "-", r.reason[:90]])
        click.echo(
            tabulate(
                rows, headers=[*keys, "feasible", "fleet", "GPUs", "cost", "$/M tok", "why not"]
            )
        )
    if out:
        rows = []
        for c, r in results:
            rows += ranked_rows(r, dict(c))
        write_csv(rows, out)
    if not any(r.feasible for _, r in results):
        sys.exit(EXIT_INFEASIBLE)


# ---------------------------------------------------------------------------- validation
@main.command("validate")
@click.option(
    "--data",
    "data",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="CSV of measurements in the validation columns (default: the shipped set).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--cv", is_flag=True, help="Also leave-one-source-out cross-validation.")
@click.option("--report", type=click.Path(dir_okay=False), help="Write the Markdown report here.")
@friendly_errors
def validate_cmd(data, fmt, cv, report):
    """Predict every published measurement and report the error."""
    from pathlib import Path

    from estimator.efficiency import calibration

    from . import validation as v

    files = [Path(d) for d in data] or v.shipped_files()
    for f in files:
        if not f.is_file():
            raise EstimatorError(f"validation data not found: {f}")
    rep = v.run(files, cross_validation=cv or bool(report))
    from . import validation_families as vf

    fam_rows = vf.run()
    fam_summary = vf.summary(fam_rows)
    recs = v.row_records(rep)
    if fmt == "json":
        click.echo(
            _dump(
                {
                    "rows": recs,
                    "summary": rep.summary,
                    "cv_summary": rep.cv_summary,
                    "families": [{**asdict(r), "error_pct": r.error_pct} for r in fam_rows],
                    "family_summary": fam_summary,
                }
            )
        )
    elif fmt == "csv":
        import pandas as pd

        click.echo(pd.DataFrame(recs).to_csv(index=False), nl=False)
    else:
        rows = [
            [
                r["model"].split("/")[-1][:28],
                r["gpu"][:18],
                r.get("tp"),
                r.get("weight_dtype"),
                f"{r.get('isl')}/{r.get('osl')}",
                r.get("concurrency_or_batch") or "max",
                r["metric"],
                r["value"],
                "-" if r["predicted"] is None else f"{r['predicted']:.4g}",
                "-" if r["error_pct"] is None else f"{r['error_pct']:+.0f}%",
                r["status"] if r["status"] != "evaluated" else "",
            ]
            for r in recs
        ]
        click.echo(
            tabulate(
                rows,
                headers=[
                    "model",
                    "gpu",
                    "tp",
                    "w",
                    "in/out",
                    "conc",
                    "metric",
                    "measured",
                    "predicted",
                    "error",
                    "status",
                ],
            )
        )
        for title, s in (("in-sample", rep.summary), ("leave-one-source-out", rep.cv_summary)):
            if not s or not s.get("all"):
                continue
            click.echo(f"\nSummary ({title}): median |error|, p90 |error|, bias")
            srows = [["all", *v._fmt_stats(s["all"])]]
            for key in ("metric", "family", "source"):
                srows += [[f"{key}: {k}", *v._fmt_stats(x)] for k, x in s[key].items()]
            click.echo(tabulate(srows, headers=["", "rows", "median", "p90", "bias"]))
        click.echo("\nOther families (validation/nonllm_cases.csv; LLM-fitted efficiency factors):")
        click.echo(
            tabulate(
                [[f, *v._fmt_stats(s)] for f, s in fam_summary.items()],
                headers=["family", "rows", "median", "p90", "bias"],
            )
        )
    if report:
        text = v.markdown(rep, files, calibration()) + vf.markdown(fam_rows, fam_summary)
        atomic_write_text(report, text)


@main.command("calibrate")
@click.option(
    "--data",
    "data",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="CSV of measurements (default: the shipped set).",
)
@click.option("--write", is_flag=True, help="Write estimator/calibration.yaml.")
@friendly_errors
def calibrate_cmd(data, write):
    """Fit the efficiency factors to the measurements (least squares on log error)."""
    import datetime
    from pathlib import Path

    from . import validation as v

    files = [Path(d) for d in data] or v.shipped_files()
    if write:
        doc = v.write_calibration(files, datetime.date.today().isoformat())
        click.echo(_dump({k: doc[k] for k in ("defaults", "families", "error", "rows_in_fit")}))
        return
    rows = v.load_rows(files)
    cases = [c for c in (v.prepare(i, r) for i, r in enumerate(rows)) if isinstance(c, v.Case)]
    params, info = v.fit(cases)
    click.echo(
        _dump(
            {
                "params": {
                    "families": {k: list(map(float, x)) for k, x in params.families.items()},
                    "collective_base_us": float(params.collective_base_us),
                    "layer_overhead_us": float(params.layer_overhead_us),
                    "step_overhead_ms": float(params.step_overhead_ms),
                    "seq_overhead_us": float(params.seq_overhead_us),
                },
                "fit": info,
            }
        )
    )


# ---------------------------------------------------------------------------- curve
def _parse_split(text: str) -> tuple[int, int]:
    try:
        p, d = (int(x) for x in text.split(":"))
    except ValueError:
        raise EstimatorError(f"--disaggregate expects P:D (e.g. 1:2), not '{text}'") from None
    if p < 1 or d < 1:
        raise EstimatorError("--disaggregate needs at least one prefill and one decode copy")
    return p, d


@main.command("curve")
@replica_options
@click.option("--input-tokens", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--output-tokens", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--users", "users_list", help="Comma-separated user counts, e.g. 1,2,4,8.")
@click.option(
    "--users-max",
    type=click.IntRange(min=1),
    help="Every user count from 1 to N (default: up to past the memory limit).",
)
@click.option(
    "--at",
    "at_users",
    type=click.IntRange(min=1),
    help="The operating point to report (default: the knee).",
)
@click.option("--ttft-s", type=click.FloatRange(min=0, min_open=True), help="TTFT target.")
@click.option(
    "--tokens-per-s",
    type=click.FloatRange(min=0, min_open=True),
    help="Per-user decode speed target.",
)
@click.option("--percentile", type=click.FloatRange(1, 99.9), default=90.0, show_default=True)
@serving_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.pass_context
@friendly_errors
def curve_cmd(
    ctx,
    model_name,
    model_config,
    gpu_name,
    gpus,
    tp,
    pp,
    ep,
    attention_dp,
    weights,
    kv,
    engine,
    input_tokens,
    output_tokens,
    users_list,
    users_max,
    at_users,
    ttft_s,
    tokens_per_s,
    percentile,
    fmt,
    **serving_kw,
):
    """TTFT and speed as users grow: the curve, the knee, and where memory runs out.

    Users share the replicas evenly (``--gpus`` beyond TP×PP adds replicas)."""
    import numpy as np

    from estimator import Evaluator
    from estimator.load import (
        disaggregated_point,
        knee,
        kv_transfer_seconds,
        load_point,
        max_users_fit,
        prepare_steps,
    )

    pre = _presets(ctx)
    model = _resolve_model(model_name, model_config, pre)
    gpu = get_gpu(gpu_name, pre)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    opts = _serving(**serving_kw)
    ev = Evaluator(model, gpu, par, weights, kv, engine)
    st = prepare_steps(ev, input_tokens, output_tokens, opts)
    reps = par.replicas
    if st.slots < 1:
        raise EstimatorError(
            f"{model.name} does not fit on {par.gpus_per_replica} x {gpu.name} with one "
            f"{input_tokens + output_tokens}-token sequence (try `planner estimate` for the "
            "memory box)"
        )
    if users_list:
        try:
            users = sorted({int(x) for x in users_list.split(",") if x.strip()})
        except ValueError:
            raise EstimatorError(
                f"--users must be comma-separated integers, not '{users_list}'"
            ) from None
        if not users or users[0] < 1:
            raise EstimatorError("--users must be positive integers")
    else:
        hi = users_max or max(8, 2 * st.slots * reps)
        users = (
            list(range(1, hi + 1))
            if hi <= 64
            else sorted({int(x) for x in np.round(np.geomspace(1, hi, 48))})
        )
    u = np.array(users, float)
    disagg = serving_kw.get("disaggregate")
    split = _parse_split(disagg) if disagg else None

    def curve(x, pct):
        if split is None:
            return load_point(st, x, opts.think_time_s, pct)
        return disaggregated_point(
            st,
            split[0],
            split[1],
            x,
            opts.think_time_s,
            pct,
            kv_transfer_s=kv_transfer_seconds(ev, st.input_tokens),
        )

    lp = curve(u / reps, percentile)
    lp.users = u  # report whole-deployment users
    k = knee(lp, ttft_s, tokens_per_s)
    fit = max_users_fit(lp)
    op_users = at_users or k or int(u[0])
    op = curve([op_users / reps], percentile)
    points = [
        {
            "users": int(u[i]),
            "ttft_s": float(lp.ttft_s[i]),
            "ttft_p90_s": float(lp.ttft_pct_s[i]) if percentile == 90 else None,
            f"ttft_p{percentile:g}_s": float(lp.ttft_pct_s[i]),
            "per_user_tokens_per_s": float(lp.per_user_tokens_per_s[i]),
            "output_tokens_per_s": float(lp.output_tokens_per_s[i] * reps),
            "memory_gb": float(lp.memory_gb[i]),
            "fits": bool(lp.fits[i]),
        }
        for i in range(len(u))
    ]
    if percentile != 90:
        p90 = curve(u / reps, 90.0).ttft_pct_s
        for pt, v in zip(points, p90, strict=True):
            pt["ttft_p90_s"] = float(v)
    result = {
        "model": model.name,
        "gpu": gpu.name,
        "parallel": par.model_dump(),
        "weights": weights,
        "kv": kv,
        "engine": engine,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "options": opts.model_dump(),
        "kv_slots_per_replica": st.slots,
        "points": points,
        "knee_users": k,
        "max_users_fit": fit,
        "operating_point": {
            "users": op_users,
            "ttft_s": float(op.ttft_s[0]),
            "ttft_pct_s": float(op.ttft_pct_s[0]),
            "per_user_tokens_per_s": float(op.per_user_tokens_per_s[0]),
            "output_tokens_per_s": float(op.output_tokens_per_s[0] * reps),
            "memory_gb": float(op.memory_gb[0]),
            "fits": bool(op.fits[0]),
        },
        "targets": {"ttft_s": ttft_s, "tokens_per_s": tokens_per_s, "percentile": percentile},
        "disaggregated": {"prefill_replicas": split[0], "decode_replicas": split[1]}
        if split
        else None,
    }
    if fmt == "json":
        click.echo(_dump(result))
        return
    click.echo(
        f"{model.display_name or model.name} on {par.gpus} x {gpu.display_name} "
        f"({par.label()}), weights {weights}, KV {kv}, {input_tokens} in / "
        f"{output_tokens} out, think {opts.think_time_s:g} s; {st.slots} KV slots per replica"
    )
    rows = [
        [
            p["users"],
            f"{p['ttft_s']:.3g}",
            f"{p[f'ttft_p{percentile:g}_s']:.3g}",
            f"{p['per_user_tokens_per_s']:.1f}",
            f"{p['output_tokens_per_s']:.0f}",
            f"{p['memory_gb']:.1f}",
            "yes" if p["fits"] else "NO",
        ]
        for p in points
    ]
    click.echo(
        tabulate(
            rows,
            headers=[
                "users",
                "TTFT mean s",
                f"TTFT p{percentile:g} s",
                "tok/s/user",
                "tok/s total",
                "GB/GPU",
                "fits",
            ],
        )
    )
    o = result["operating_point"]
    why = (
        "targets"
        if (ttft_s or tokens_per_s)
        else "TTFT within 3x and speed within 2x of light load"
    )
    click.echo(
        f"\noperating point: {o['users']} users: TTFT {o['ttft_s']:.3g} s mean, "
        f"{o['ttft_pct_s']:.3g} s p{percentile:g}, {o['per_user_tokens_per_s']:.1f} tok/s "
        f"per user, {o['output_tokens_per_s']:.0f} tok/s total"
    )
    click.echo(f"knee: {k} users (most before breaking the {why})")
    click.echo(f"most users that fit in memory: {fit}")
