"""What every command shares: clean errors and exit codes, the preset folders, JSON output,
and the option groups (one configuration, serving features, family workloads)."""

from __future__ import annotations

import functools
import gc
import json
import math
import sys
from typing import Any

import click

from estimator.engines import (
    DIFFUSION_ENGINES,
    ENCODER_ENGINES,
    ENGINES,
    KNOBS,
    SPEECH_ENGINES,
    Engine,
)
from estimator.engines import configure as configure_engine
from estimator.errors import EstimatorError
from estimator.formats import KV_FORMATS, WEIGHT_FORMATS

EXIT_INFEASIBLE, EXIT_BAD_INPUT = 1, 2
# the collector's settings as Python set them, before the script raises its trigger (run):
# what a long-lived command (serve) goes back to
PYTHON_GC_THRESHOLD = gc.get_threshold()
MAX_GPUS = 4096  # GPUs in one estimate; a replica holds far fewer
MAX_USERS = 10_000_000  # users on one curve


class FiniteRange(click.FloatRange):
    """A float range that also refuses NaN and infinity (which compare false to any bound)."""

    name = "float"

    def convert(self, value, param, ctx):
        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return v


def collecting(ctx: click.Context) -> bool:
    """Whether the command runs for a caller that takes its result object instead of
    printed output (the page's API, :mod:`planner.web.api`): same parsing, same checks,
    same function, same payload."""
    obj = ctx.find_root().obj
    return bool(isinstance(obj, dict) and obj.get("collect"))


def handed_over(ctx: click.Context, result: Any) -> bool:
    """Hand ``result`` to a collecting caller (True), or leave it to the command to print
    (False)."""
    if not collecting(ctx):
        return False
    ctx.find_root().obj["result"] = result
    return True


def friendly_errors(fn):
    """Bad input becomes one clear line on stderr and exit code 2, never a traceback (for a
    collecting caller the error itself, which it answers with the same message)."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except EstimatorError as e:
            ctx = click.get_current_context(silent=True)
            if ctx is not None and collecting(ctx):
                raise
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_BAD_INPUT)

    return wrapper


def presets_of(ctx: click.Context) -> tuple[str, ...]:
    return tuple(ctx.find_root().obj.get("presets", ()))


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=float)


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user set an option (rather than leaving its default)."""
    return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT


def _apply(opts: list):
    def deco(fn):
        for opt in reversed(opts):
            fn = opt(fn)
        return fn

    return deco


_MODEL_OPTIONS = [
    click.option(
        "--model", "model_name", help="Model preset name or alias (see `planner models list`)."
    ),
    click.option(
        "--model-config",
        type=click.Path(),
        help="A local Hugging Face config.json, model folder or hub-cache folder: "
        "a language model, or an encoder/reranker (bert, roberta, xlm-roberta) or "
        "Whisper model, read as its family.",
    ),
]
_SPLIT_OPTIONS = [
    click.option(
        "--gpu", "gpu_name", required=True, help="Accelerator preset (see `planner gpus list`)."
    ),
    click.option(
        "--gpus",
        type=click.IntRange(1, MAX_GPUS),
        default=1,
        show_default=True,
        help="GPUs in total; more than TP×PP runs data-parallel replicas.",
    ),
    click.option(
        "--tp", type=click.IntRange(1, MAX_GPUS), help="Tensor parallel (default: GPUs ÷ PP)."
    ),
    click.option("--pp", type=click.IntRange(1, MAX_GPUS), help="Pipeline parallel (default 1)."),
    click.option(
        "--ep", type=click.IntRange(1, MAX_GPUS), help="Expert parallel, divides TP (default 1)."
    ),
    click.option(
        "--attention-dp", is_flag=True, help="Run attention data-parallel across the TP group."
    ),
]
_FORMAT_OPTIONS = [
    click.option(
        "--weights",
        type=click.Choice(list(WEIGHT_FORMATS), case_sensitive=False),
        default=None,
        help="Weight format [default: what the model name or its config implies "
        "(-FP8, -AWQ, quantization_config), else bf16].",
    ),
    click.option(
        "--kv",
        type=click.Choice(list(KV_FORMATS), case_sensitive=False),
        default="bf16",
        show_default=True,
    ),
    click.option(
        "--engine",
        metavar="ENGINE",
        default=None,
        help="The serving engine: its memory policy for language models ("
        + ", ".join(ENGINES)
        + "), its per-step host time for speech ("
        + ", ".join(SPEECH_ENGINES)
        + "), its denoiser speed for diffusion ("
        + ", ".join(DIFFUSION_ENGINES)
        + "), fused or eager kernels for encoders and rerankers ("
        + ", ".join(ENCODER_ENGINES)
        + ") [default: vllm; faster-whisper for speech models; diffusers for diffusion "
        "models; tei for encoders]. An unknown name is refused with the closest.",
    ),
    click.option(
        "--gpu-memory-utilization",
        type=FiniteRange(*KNOBS["gpu_memory_utilization"]),
        help="The engine's memory fraction (vLLM gpu_memory_utilization, SGLang "
        "mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction) [default: the engine's].",
    ),
    click.option(
        "--max-num-seqs",
        type=click.IntRange(*KNOBS["max_num_seqs"]),
        help="Scheduler's sequence cap.",
    ),
    click.option(
        "--max-num-batched-tokens",
        type=click.IntRange(*KNOBS["max_num_batched_tokens"]),
        help="Tokens per scheduler step (the prefill chunk the engine profiles).",
    ),
    click.option(
        "--max-model-len",
        type=click.IntRange(*KNOBS["max_model_len"]),
        help="Longest sequence served [default: the model's maximum].",
    ),
    click.option(
        "--mamba-full-memory-ratio",
        type=FiniteRange(*KNOBS["mamba_full_memory_ratio"]),
        help="SGLang: a hybrid model's recurrent-state pool over its attention KV pool "
        "[default: 0.9]; it also caps the running requests at the state slots over 3.",
    ),
    click.option(
        "--serving-stack-ms",
        type=FiniteRange(*KNOBS["serving_stack_ms"]),
        help="The serving stack's own time to a first token (HTTP, tokenising, scheduling, "
        "streaming it back), ms, as measured on your stack [default: the one fitted for the "
        "engine's own server: `planner estimate` prints it].",
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
        type=FiniteRange(0, 86_400),
        default=0.0,
        show_default=True,
        help="Mean seconds a user pauses between an answer and the next prompt.",
    ),
    click.option(
        "--arrivals",
        type=click.Choice(["spread", "waves"]),
        default="spread",
        show_default=True,
        help="How requests arrive: spread in time (people, or a benchmark that draws each "
        "request's lengths), or in the synchronised waves of a benchmark harness of fixed "
        "lengths (all clients at once, no think time).",
    ),
    click.option(
        "--prefix-hit-rate",
        type=FiniteRange(0, 1, max_open=True),
        default=0.0,
        show_default=True,
        help="Share of prompt tokens served from the prefix cache.",
    ),
    click.option(
        "--chunk-tokens",
        type=click.IntRange(16, 1_000_000),
        help="Chunked-prefill tokens per iteration (default: the engine's).",
    ),
    click.option(
        "--spec-tokens",
        type=click.IntRange(1, 16),
        help="Speculative decoding: tokens proposed per step (off if not given).",
    ),
    click.option(
        "--spec-acceptance",
        type=FiniteRange(0, 1),
        default=0.7,
        show_default=True,
        help="Speculative decoding: chance each proposed token is accepted.",
    ),
    click.option(
        "--spec-method", type=click.Choice(["draft", "ngram"]), default="draft", show_default=True
    ),
    click.option(
        "--spec-draft-cost",
        type=FiniteRange(0, 1),
        help="One draft token's time as a share of a target step (default: draft 0.1, ngram 0).",
    ),
]


_FAMILY_OPTIONS = [
    click.option(
        "--audio-seconds",
        type=FiniteRange(0, 1e7, min_open=True),
        default=30.0,
        show_default=True,
        help="Speech: audio per request.",
    ),
    click.option(
        "--beam",
        type=click.IntRange(1, 1_000_000),
        default=1,
        show_default=True,
        help="Speech: beam width.",
    ),
    click.option("--frames", type=click.IntRange(1, 100_000), help="Video/JEPA: frames per clip."),
    click.option("--resolution", help="Image/video: WxH (default: the model's)."),
    click.option(
        "--horizon",
        type=click.IntRange(0, 1_000_000),
        default=0,
        help="JEPA-AC: planning horizon (steps).",
    ),
    click.option(
        "--samples",
        type=click.IntRange(0, 1_000_000),
        default=0,
        help="JEPA-AC: candidate action sequences per planning step.",
    ),
    click.option(
        "--images",
        type=click.IntRange(0, 1_000_000),
        default=1,
        show_default=True,
        help="Vision-language: images per request.",
    ),
    click.option(
        "--image-resolution", help="Vision-language: WxH of each image (default 1024x1024)."
    ),
    click.option(
        "--steps",
        type=click.IntRange(1, 1_000_000),
        help="Diffusion: denoising steps (default: the model card's).",
    ),
    click.option(
        "--guidance/--no-guidance",
        default=None,
        help="Diffusion: classifier-free guidance (doubles the denoiser batch).",
    ),
    click.option(
        "--fast-accum",
        is_flag=True,
        default=False,
        help="Diffusion: the denoiser's GEMMs accumulate in 16 bits (FP8 with fast "
        "accumulation, TensorRT FP16); GeForce cards run those at twice their FP32-"
        "accumulate rate.",
    ),
    click.option(
        "--offload",
        is_flag=True,
        default=False,
        help="Diffusion: model CPU offload; each component (text encoders, denoiser, VAE) is "
        "on the GPU only while it runs: the GPU holds the largest, each batch moves all "
        "of them over PCIe.",
    ),
    click.option(
        "--cameras",
        type=click.IntRange(1, 1_000_000),
        default=1,
        show_default=True,
        help="VLA: camera images per observation.",
    ),
    click.option(
        "--action-horizon",
        type=click.IntRange(1, 1_000_000),
        help="VLA: actions per chunk (default: the model's).",
    ),
    click.option(
        "--flow-steps",
        type=click.IntRange(1, 1_000_000),
        help="VLA: flow-matching denoising steps (default: the model's).",
    ),
    click.option(
        "--control-hz",
        type=FiniteRange(0, 1e7, min_open=True),
        default=50.0,
        show_default=True,
        help="VLA: robot control rate.",
    ),
]


TOKENS = {"type": click.IntRange(1, 10_000_000), "show_default": True}
length_options = _apply(  # a request's prompt and answer
    [
        click.option("--input-tokens", default=1024, **TOKENS),
        click.option("--output-tokens", default=256, **TOKENS),
    ]
)
model_options = _apply(_MODEL_OPTIONS)  # --model / --model-config
format_options = _apply(_FORMAT_OPTIONS)  # weights, KV, engine and its memory knobs
# --model/--gpu/--gpus, split, formats, engine
replica_options = _apply(_MODEL_OPTIONS + _SPLIT_OPTIONS + _FORMAT_OPTIONS)
serving_options = _apply(_SERVING_OPTIONS)  # think time, prefix cache, chunking, speculation
family_options = _apply(_FAMILY_OPTIONS)  # the non-LLM families' workload options
# the family options by their parameter names
FAMILY_KEYS = tuple(p.name for p in family_options(lambda: None).__click_params__)


def batch_family(model: str, presets: tuple[str, ...]) -> bool:
    """Whether ``model`` is a family served in batches (diffusion, speech, encoders, VLA,
    world models): not a language or vision-language model, whose sizing is by users."""
    from estimator.families import family_of, get_family_model, is_family_model

    if not is_family_model(model, presets):
        return False
    fam = family_of(get_family_model(model, presets))
    return fam is not None and not fam.language_model


def family_from(fam: dict):
    """The family options given on the command line as :class:`estimator.FamilyOptions`
    (the vision-language ones, images and image_resolution, left out)."""
    from estimator import FamilyOptions
    from estimator.api import parse_resolution

    res = fam.get("resolution")
    skip = ("resolution", "images", "image_resolution")
    return FamilyOptions(
        resolution=parse_resolution(res, 0) if res else None,
        **{k: v for k, v in fam.items() if k not in skip},
    )


def refuse_given(ctx: click.Context, names: tuple[str, ...], why: str) -> None:
    """Bad input where the user set any of ``names`` (parameter names): ``--flag`` + why."""
    name = next((k for k in names if given(ctx, k)), None)
    if name is not None:
        flag = next(p.opts[0] for p in ctx.command.params if p.name == name)
        raise EstimatorError(f"{flag} {why}")


FORMAT = click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
OUT = click.option(
    "--out", type=click.Path(dir_okay=False), help="Write a ranked CSV (atomically)."
)


def serving_from(
    think_time,
    prefix_hit_rate,
    chunk_tokens,
    spec_tokens,
    spec_acceptance,
    spec_method,
    spec_draft_cost,
    arrivals="spread",
    disaggregate=None,  # a deployment shape, not an engine option: passed on separately
):
    """The serving flags as the estimator's :class:`~estimator.ServingOptions`."""
    from estimator import ServingOptions, Speculative

    spec = None
    if spec_tokens:
        spec = Speculative(
            method=spec_method,
            tokens=spec_tokens,
            acceptance=spec_acceptance,
            draft_cost=spec_draft_cost,
        )
    from pydantic import ValidationError

    from estimator.errors import EstimatorError

    try:
        return ServingOptions(
            think_time_s=think_time,
            prefix_hit_rate=prefix_hit_rate,
            chunk_tokens=chunk_tokens,
            speculative=spec,
            arrivals=arrivals,
        )
    except ValidationError as e:  # a combination no single option's range catches
        msg = e.errors()[0]["msg"].removeprefix("Value error, ")
        raise EstimatorError(f"--arrivals/--think-time: {msg}") from None


# ---- the replica options as the library's arguments ----------------------------------


def model_of(model_name: str | None, model_config: str | None) -> str:
    if bool(model_name) == bool(model_config):
        raise EstimatorError("give exactly one of --model NAME or --model-config PATH")
    return model_config or model_name


def split_of(kw: dict) -> dict:
    """The replica options as the estimator's keyword arguments."""
    return dict(
        gpus=kw.pop("gpus"),
        tp=kw.pop("tp"),
        pp=kw.pop("pp"),
        ep=kw.pop("ep"),
        attention_dp=kw.pop("attention_dp"),
        weights=kw.pop("weights"),
        kv=kw.pop("kv"),
        engine=engine_of(kw),
    )


def engine_of(kw: dict) -> str | Engine | None:
    """The engine asked for: a language-model engine with its knobs, a family's engine by
    name, or None (each model's default)."""
    name = kw.pop("engine")
    knobs = {k: kw.pop(k) for k in KNOBS}
    if name is not None and name not in ENGINES:
        return name  # a family's engine (speech, diffusion): the knobs are LLM memory policy
    if name is None and all(v is None for v in knobs.values()):
        return None
    return configure_engine(name or "vllm", **knobs)
