"""Diffusion image and video models: text encoders once per prompt, the denoiser once per
step (twice with classifier-free guidance), the VAE decoder once per image. The components'
work is derived in :mod:`.diffusion_parts`; the pipeline's engine (eager diffusers,
torch.compile, TensorRT) sets how fast its denoiser passes run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..efficiency import engine_time_factor
from ..engines import DIFFUSION_ENGINES, family_engine
from ..errors import EstimatorError, SplitError
from ..formats import weight_format
from ..hardware import Accelerator
from ..parallel import Parallel
from ..roofline import Machine
from .base import FamilyEstimate, FamilyOptions, memory, result
from .diffusion_parts import (
    Cost,
    component_time,
    dit_denoiser,
    latent_frame_count,
    text_encoder,
    unet,
    vae_decoder,
)
from .registry import Family, FamilyPreset, register

DEFAULT_DIFFUSION_ENGINE = next(iter(DIFFUSION_ENGINES))  # the table's first


def diffusion_engine(name: str | None) -> str:
    """A diffusion engine's name, checked (None: the default)."""
    return family_engine(name, DIFFUSION_ENGINES, "diffusion")


# engines whose fitted factor is read off pairs with eager runs of the same pipeline: a factor
# on the eager pipeline's own (fitted on its runs); TensorRT engines run at the roofline
RELATIVE_TO_EAGER = ("torch-compile",)


def denoiser_factor(engine: str | None) -> float:
    """The time the engine's denoiser passes outside attention take, over the roofline's."""
    eng = diffusion_engine(engine)
    f = engine_time_factor("diffusion", eng)[0]
    if eng in RELATIVE_TO_EAGER:
        f *= engine_time_factor("diffusion", DEFAULT_DIFFUSION_ENGINE)[0]
    return f


def engine_note(engine: str | None) -> str:
    """What a diffusion estimate assumes of its engine, and where its factor comes from."""
    eng = diffusion_engine(engine)
    f, rows = engine_time_factor("diffusion", eng)
    where = "(docs/VALIDATION.md, 'Other model families')"
    if eng == DEFAULT_DIFFUSION_ENGINE:
        if rows:
            return (
                f"engine {eng}: {DIFFUSION_ENGINES[eng]}; its denoiser's work outside attention "
                f"takes {f:.2f}x the roofline at the language-model factors (eager kernels one "
                f"by one), fitted on {rows} published eager runs {where}"
            )
        return (
            f"engine {eng}: {DIFFUSION_ENGINES[eng]}; the eager baseline the other engines' "
            "factors are measured against, timed on the roofline at the language-model factors"
        )
    if rows:
        return (
            f"engine {eng}: {DIFFUSION_ENGINES[eng]}; its denoiser's work outside attention "
            f"takes {f:.2f}x the eager pipeline's time, fitted on {rows} published runs paired "
            f"with the same pipeline in eager PyTorch {where}"
        )
    if eng in RELATIVE_TO_EAGER:
        return (
            f"engine {eng}: {DIFFUSION_ENGINES[eng]}; timed as the eager pipeline (its published "
            "pairs with eager runs come from fewer than two sources, too few to fit a factor)"
        )
    return (
        f"engine {eng}: {DIFFUSION_ENGINES[eng]}; fused engines run at the roofline at the "
        "language-model factors"
    )


@dataclass
class DiffusionModel:
    name: str
    display_name: str
    family: str  # diffusion_image | diffusion_video
    components: dict[str, Any]
    defaults: dict[str, Any]

    def denoiser(self, width: int, height: int, frames: int = 1) -> Cost:
        comp = self.components["denoiser"]
        cls, c = comp["class"], comp["config"]
        vae = self.components.get("vae", {}).get("config", {})
        f = 2 ** (len(vae.get("block_out_channels", [0, 0, 0, 0])) - 1)
        if width % (f * 2) or height % (f * 2):
            raise EstimatorError(
                f"{self.name}: resolution {width}x{height} must be a multiple "
                f"of {f * 2} (VAE x{f}, patch 2)"
            )
        h, w = height // f, width // f
        if cls.startswith("UNet"):
            return unet(c, h, w, 77)
        # Flux packs 2x2 latent pixels into one token before the transformer (in_channels 64
        # = 16 latent channels x 4): fold that packing into the latent grid
        pack = round((c["in_channels"] / vae.get("latent_channels", c["in_channels"])) ** 0.5)
        if pack > 1:
            h, w = h // pack, w // pack
        return dit_denoiser(cls, c, h, w, self._joint_text_tokens(), frames)

    def _joint_text_tokens(self) -> int:
        cls = self.components["denoiser"]["class"]
        if cls.startswith("SD3"):
            return 77 + 256  # CLIP tokens concatenated with T5 tokens
        if cls.startswith("Flux"):
            return 512
        if cls.startswith("CogVideoX"):
            return self.components["denoiser"]["config"].get("max_text_seq_length", 226)
        if cls.startswith("PixArt"):
            return 300
        return 0

    def encoders(self) -> Cost:
        """Every text encoder over its prompt: CLIP at its 77 positions, T5 at the length the
        pipeline pads to (Flux 512, SD3 256, PixArt-Σ 300, CogVideoX 226)."""
        total = Cost()
        t5 = {"Flux": 512, "SD3": 256, "PixArt": 300, "CogVideoX": 226}
        cls = self.components["denoiser"]["class"]
        n_t5 = next((v for k, v in t5.items() if cls.startswith(k)), 512)
        for te in self.components.get("text_encoders", []):
            n = 77 if te["class"].startswith("CLIP") else n_t5
            total = total + text_encoder(te["class"], te["config"], n)
        return total

    def vae(self, width: int, height: int, frames: int = 1, peak: bool = False) -> Cost:
        """The VAE decoder's work over the video (``peak``: over its largest chunk, whose
        feature maps set the decode's peak memory: diffusers decodes CogVideoX's latents
        ``num_latent_frames_batch_size`` = 2 frames at a time, the first chunk taking an
        odd count's extra frame, AutoencoderKLCogVideoX._decode)."""
        comp = self.components["vae"]
        temporal = "CogVideoX" in comp["class"]
        ratio = comp["config"].get("temporal_compression_ratio", 4)
        lat = latent_frame_count(frames, ratio) if temporal else 1
        if peak and lat > 2:
            lat = 2 + lat % 2
        return vae_decoder(comp["config"], height, width, lat, temporal)

    @property
    def denoiser_params(self) -> int:
        r = self.defaults.get("resolution", [1024, 1024])
        return self.denoiser(r[0], r[1], self.defaults.get("frames", 1)).params

    @property
    def params(self) -> int:
        r = self.defaults.get("resolution", [1024, 1024])
        fr = self.defaults.get("frames", 1)
        return (
            self.denoiser(r[0], r[1], fr).params
            + self.encoders().params
            + self.vae(r[0], r[1], fr).params
        )


def build_diffusion(p: FamilyPreset) -> DiffusionModel:
    extra = p.model_extra or {}
    if "components" not in extra or "denoiser" not in extra["components"]:
        raise EstimatorError(f"{p.name}: a diffusion preset needs components.denoiser")
    return DiffusionModel(
        p.name, p.display_name, p.family, extra["components"], extra.get("defaults", {})
    )


def estimate_diffusion(
    model,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    width: int,
    height: int,
    steps: int,
    guidance: bool,
    frames: int = 1,
    fast_accum: bool = False,
    offload: bool = False,
    engine: str | None = None,
) -> FamilyEstimate:
    """``batch`` images (videos) generated together: the text encoders once per prompt (and
    per negative prompt with classifier-free guidance), the denoiser ``steps`` times over
    ``batch`` latents (doubled with guidance), the VAE decoder once per image. The denoiser
    runs in ``weights``; encoders and VAE in 16-bit, as the pipelines ship them. One GPU per
    replica: pipelines scale out by replicas. ``fast_accum``: the denoiser's GEMMs accumulate
    in 16 bits (on GeForce cards, twice the FP32-accumulate rate). ``offload``: model CPU
    offload (diffusers' ``enable_model_cpu_offload``): every component waits in host memory
    and is on the GPU only while it runs, so the GPU holds the largest one, and each batch
    moves each component in and back out over PCIe. ``engine``: the pipeline's engine
    (:data:`~estimator.engines.DIFFUSION_ENGINES`), whose fitted time factor scales the
    denoiser's passes but their attention (what torch.compile wraps in every published
    recipe; the text encoders and VAE run once and stay as they are)."""
    if par.gpus_per_replica > 1:
        raise SplitError(
            f"{model.name}: diffusion pipelines run one GPU per replica here "
            "(sequence-parallel denoising is not modelled); use more replicas"
        )
    mc = Machine(gpu, par, weight_format(weights).compute, fast_accum=fast_accum)
    wb = weight_format(weights).bytes_per_value
    den = model.denoiser(width, height, frames)
    enc = model.encoders()
    vae = model.vae(width, height, frames)
    cfg = 2 if guidance else 1
    t_enc = component_time(Machine(gpu, par, "bf16"), enc, 2.0, batch * cfg) if enc.params else None
    t_step = component_time(mc, den, wb, batch * cfg)
    t_vae = component_time(Machine(gpu, par, "bf16"), vae, 2.0, batch)
    enc_s = float(t_enc.total) if t_enc is not None else 0.0
    eng = diffusion_engine(engine)
    # the engine speeds up what it compiles: the GEMMs and the elementwise work around them
    # (fused into their prologues and epilogues); attention already runs as one fused kernel
    att_s = steps * max(float(t_step.attn_memory), float(t_step.attn_compute))
    den_s = att_s + (steps * float(t_step.total) - att_s) * denoiser_factor(eng)
    vae_s = float(t_vae.total)
    parts = (den.params * wb, enc.params * 2.0, vae.params * 2.0)
    offload_s = 0.0
    if offload:  # each crosses PCIe in and back out once per batch, at the slot's one-way rate
        offload_s = 2 * sum(parts) / (gpu.pcie_gb_s * 1e9)
    total = enc_s + den_s + vae_s + offload_s
    weights_b = max(parts) if offload else sum(parts)
    # peak activations: the VAE's largest feature maps (of its largest chunk of frames) or
    # the denoiser's working set
    vae_peak = model.vae(width, height, frames, peak=True)
    act = max(
        batch * vae_peak.act_bytes / max(vae_peak.layers, 1) * 4,
        batch * cfg * den.act_bytes / max(den.layers, 1) * 4,
    )
    mem = memory(mc, weights_b, act, 0.0, batch)
    video = model.family == "diffusion_video"
    metrics: dict[str, Any] = {
        "text_encoder_s": enc_s,
        "denoiser_s": den_s,
        "denoiser_attention_s": att_s,
        "vae_s": vae_s,
        "batch": batch,
        "steps": steps,
        "guidance": guidance,
        "fast_accum": fast_accum,
        "offload": offload,
        "offload_s": offload_s,
        "engine": eng,
        "resolution": [width, height],
        "s_per_batch": total,
    }
    if video:
        metrics.update(s_per_video=total, videos_per_hour=3600 * batch / total, frames=frames)
    else:
        metrics.update(s_per_image=total, images_per_s=batch / total)
    e = result(model, model.family, mc, weights, mem, str(t_step.bottleneck()), metrics)
    e.notes.append(engine_note(eng))
    fast = gpu.fast_accum_tflops.get(mc.precision)
    if fast and not fast_accum:
        e.notes.append(
            f"{gpu.name} runs {mc.precision} tensor math with FP32 accumulation at "
            f"{gpu.dense_tflops[mc.precision]:g} TFLOPS, half its FP16-accumulate {fast:g}: a "
            "pipeline whose GEMMs accumulate in 16 bits (FP8 with fast accumulation, TensorRT "
            "FP16) runs its denoiser faster (--fast-accum, scenario fast_accum: true)"
        )
    return e


def _estimate(
    model: DiffusionModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    d = model.defaults
    r = d.get("resolution", [1024, 1024])
    w, h = o.resolution or (r[0], r[1])
    guidance = d.get("guidance", True) if o.guidance is None else o.guidance
    steps = o.steps or d.get("steps", 30)
    frames = o.frames or d.get("frames", 1)
    return estimate_diffusion(
        model,
        gpu,
        par,
        weights,
        o.batch,
        w,
        h,
        steps,
        guidance,
        frames,
        fast_accum=o.fast_accum,
        offload=o.offload,
        engine=o.engine,
    )


ENGINES = tuple(DIFFUSION_ENGINES)
register(Family("diffusion_image", build_diffusion, _estimate, engines=ENGINES))
register(Family("diffusion_video", build_diffusion, _estimate, engines=ENGINES))
