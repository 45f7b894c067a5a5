"""The forward side's entry point for people: names in, a typed result out.

:func:`estimate` takes what ``planner estimate`` takes (a model and GPU by name, a split,
formats, a batch and a workload) and returns the result whose ``to_dict()`` is the CLI's
``--format json``: a :class:`ServingEstimate` for a language model (and a vision-language
model, whose images add prompt tokens and encoder time), or a
:class:`~estimator.families.FamilyEstimate` for the other families. :func:`curve` is
``planner curve`` (see :mod:`estimator.curves`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .advice import nearest_fit
from .bands import bands_for
from .catalog import get_gpu
from .curves import load_curve
from .engines import Engine
from .errors import EstimatorError
from .families import FamilyEstimate, FamilyOptions, family_of
from .hardware import Accelerator
from .llm import Estimate, Evaluator, Workload, estimate_replica
from .load import parse_disaggregation
from .parallel import Parallel, parallel_for
from .resolve import get_any_model, weights_for
from .steps import ServingOptions, prepare_steps

DEFAULT_IMAGE_SIDE = 1024  # vision-language: an image's side when none is given
MAX_BATCH = 1_000_000  # sequences per replica; far beyond any engine's limit


@dataclass
class ServingEstimate(Estimate):
    """A language-model estimate: the static batch on an idle replica (the base fields),
    the same replica serving ``batch`` users in a closed loop (``under_load``), the images'
    share of the prompt (``vision``, vision-language models) and, when it does not fit, the
    nearest configurations that do (``advice``)."""

    under_load: dict | None = None
    vision: dict | None = None
    advice: list[str] = field(default_factory=list)
    labels: dict = field(default_factory=dict)  # display names for tables

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("under_load", "vision", "advice", "labels"):
            d.pop(k)
        d["under_load"] = self.under_load
        d.update(self.vision or {})
        if not self.fits:
            d["advice"] = self.advice
        return d


def parse_resolution(text: str | None, default: int) -> tuple[int, int]:
    """'WxH' -> (W, H); nothing -> a square of ``default``."""
    if not text:
        return default, default
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise EstimatorError(f"--resolution expects WxH (e.g. 1024x1024), not '{text}'") from None
    if w < 1 or h < 1:
        raise EstimatorError("--resolution must be positive")
    return w, h


def _positive_batch(batch: int | str, error: str) -> int:
    try:
        b = int(batch)
    except ValueError:
        raise EstimatorError(error) from None
    if b < 1:
        raise EstimatorError("--batch must be at least 1")
    if b > MAX_BATCH:
        raise EstimatorError(f"--batch may be at most {MAX_BATCH:,}")
    return b


def estimate(
    model: str,
    gpu: str,
    gpus: int = 1,
    *,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    attention_dp: bool = False,
    weights: str | None = None,
    kv: str = "bf16",
    engine: str | Engine | None = None,
    batch: int | str = 1,
    input_tokens: int | None = None,
    output_tokens: int = 256,
    serving: ServingOptions | None = None,
    disaggregate: str | tuple[int, int] | None = None,
    images: int = 1,
    image_resolution: str | None = None,
    family: FamilyOptions | dict | None = None,
    presets: tuple[str, ...] = (),
) -> ServingEstimate | FamilyEstimate:
    """Will it fit, and how fast: ``model`` (a preset of any family, or a config.json path)
    on ``gpus`` x ``gpu`` split as asked. ``batch``: sequences per replica, or ``"max"``
    for the largest whose KV cache fits. ``input_tokens`` None: 1,024 (encoders: at most
    what they read). ``family``: the non-LLM workload options (:class:`FamilyOptions`).
    ``engine``: the serving engine (None: vLLM for language models, the family's default
    for the others that tell engines apart)."""
    m = get_any_model(model, None, presets)
    weights = weights_for(model, weights, presets)
    acc = get_gpu(gpu, presets)
    par = parallel_for(gpus, tp, pp, ep, attention_dp)
    fam = family_of(m)
    if fam is not None and not fam.language_model:
        opts = FamilyOptions.model_validate(family or {})
        b = _positive_batch(batch, f"--batch must be a positive integer for {m.family} models")
        update = {"batch": b, "kv": kv}
        name = engine.name if isinstance(engine, Engine) else engine
        if name is not None:
            if not fam.engines:
                raise EstimatorError(
                    f"{m.family} models have no engine choice (they are timed on the "
                    "roofline); --engine applies to language, speech and diffusion models"
                )
            update["engine"] = name
        if input_tokens is not None:
            update["input_tokens"] = input_tokens
        e = fam.estimate(m, acc, par, weights, opts.model_copy(update=update))
        e.labels = {"model": m.display_name or m.name, "gpu": acc.display_name}
        return e
    llm = m.llm if fam is not None else m
    engine = engine if engine is not None else "vllm"
    i = input_tokens or 1024
    vision = None
    if fam is not None:  # images add visual tokens to the prompt and encoder time to prefill
        w, h = parse_resolution(image_resolution, DEFAULT_IMAGE_SIDE)
        per_image, patches = m.tokens(w, h)
        vision = {
            "visual_tokens": images * per_image,
            "vision_patches": images * patches,
            "images": images,
            "image_resolution": [w, h],
        }
        i += images * per_image
    is_max = str(batch).strip().lower() == "max"
    if not is_max:  # a bad batch is named before the split is checked
        b = _positive_batch(batch, f"--batch must be a positive integer or 'max', not '{batch}'")
    ev = Evaluator(llm, acc, par, weights, kv, engine)
    if is_max:
        # the most sequences the engine runs at once: what memory holds, within its cap
        b = max(min(int(ev.max_batch(i + output_tokens)), ev.max_seqs), 1)
    wl = Workload(input_tokens=i, output_tokens=output_tokens, batch=b)
    base = estimate_replica(llm, acc, par, wl, weights=weights, kv=kv, engine=engine)
    est = ServingEstimate(**{k: getattr(base, k) for k in base.__dataclass_fields__})
    if vision is not None:
        _add_vision(est, m, acc, par, vision, output_tokens)
    if not est.fits:
        est.advice = nearest_fit(llm, acc, par, wl, weights, kv, engine)
    split = parse_disaggregation(disaggregate) if isinstance(disaggregate, str) else disaggregate
    est.under_load = under_load(ev, i, output_tokens, b, serving or ServingOptions(), split)
    est.vision = vision
    est.labels = {"model": llm.display_name or llm.name, "gpu": acc.display_name}
    return est


def _add_vision(
    est: Estimate, vlm: Any, gpu: Accelerator, par: Parallel, vision: dict, output_tokens: int
) -> None:
    """The whole static batch's images run through the encoder before its prefill."""
    b, images = est.workload["batch"], vision["images"]
    w, h = vision["image_resolution"]
    enc = float(vlm.vision_seconds(gpu, par, b * images, w, h))
    vision["vision_encoder_s"] = enc
    est.prefill_s += enc
    est.ttft_s += enc
    est.e2e_latency_s += enc
    o = output_tokens
    est.output_tokens_per_s = b * o / (est.prefill_s + (o - 1) * est.tpot_s)
    est.total_output_tokens_per_s = est.output_tokens_per_s * par.replicas
    est.notes.append(
        f"{images} image(s) of {w}x{h}: {vision['visual_tokens']} visual "
        f"tokens in the prompt; the image encoder adds {enc * 1e3:.1f} ms"
    )


def under_load(
    ev: Evaluator,
    input_tokens: int,
    output_tokens: int,
    users: int,
    opts: ServingOptions,
    split: tuple[int, int] | None = None,
) -> dict | None:
    """The replica (or disaggregated unit) serving ``users`` in a closed loop: TTFT mean and
    p90, per-user and replica speed, and their bands (as a curve's operating point carries:
    TTFT's on the p90, the harnesses' under ``arrivals="waves"``). None when not one
    sequence fits."""
    st = prepare_steps(ev, input_tokens, output_tokens, opts)
    if st.slots < 1:
        return None
    lp = load_curve(ev, st, opts.think_time_s, 90.0, split, opts.arrivals)([users])
    speed, rate = float(lp.per_user_tokens_per_s[0]), float(lp.output_tokens_per_s[0])
    return {
        "users": users,
        "disaggregated": {"prefill_replicas": split[0], "decode_replicas": split[1]}
        if split
        else None,
        "think_time_s": opts.think_time_s,
        "ttft_s": float(lp.ttft_s[0]),
        "ttft_p90_s": float(lp.ttft_pct_s[0]),
        "per_user_tokens_per_s": speed,
        "output_tokens_per_s": rate,
        "options": opts.model_dump(),
        "bands": bands_for(
            ev.gpu, float(lp.ttft_pct_s[0]), 1.0 / speed, rate, ev.model, opts.arrivals
        ),
    }
