"""Vision-language models: a vision encoder turns each image into patch tokens, a projector
maps them into the language model, and the language model serves the request as an LLM with
the visual tokens in its prompt. Images inflate prefill and the KV cache."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import EstimatorError
from ..hardware import Accelerator
from ..hf_config import model_from_config
from ..model import LanguageModel
from ..parallel import Parallel
from ..roofline import Machine
from ..stack import Stack
from .base import stack_pass
from .registry import Family, FamilyPreset, register

# PixtralVisionConfig defaults (transformers), used where the released config omits them.
_PIXTRAL_VISION = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "patch_size": 16,
    "image_size": 1024,
}


@dataclass
class VlmModel:
    name: str
    display_name: str
    llm: LanguageModel
    vision: Stack
    kind: str  # qwen2_5_vl | pixtral | llava_onevision
    patch: int
    vision_extra: int  # patch embedding, positions, projector / merger
    merge: int = 1  # Qwen2.5-VL merges 2x2 patches into one LLM token
    window: int = 0  # Qwen2.5-VL windowed attention: patches per window side
    full_layers: int = 0  # ...and the layers that attend over the whole image
    crop: int = 0  # LLaVA-OneVision: SigLIP crop side in pixels
    max_side: int = 0  # Pixtral: images are downscaled to this longest side
    family: str = "vlm"

    @property
    def params(self) -> int:
        return (
            self.llm.total_params - self.llm.extra_params + self.vision.params() + self.vision_extra
        )

    def tokens(self, width: int, height: int) -> tuple[int, int]:
        """(visual tokens in the LLM prompt, patches the vision encoder runs over) for one
        image, following each model's processor."""
        if self.kind == "qwen2_5_vl":
            unit = self.patch * self.merge  # 28 px
            w, h = max(unit, round(width / unit) * unit), max(unit, round(height / unit) * unit)
            llm_tokens = (w // unit) * (h // unit)
            return llm_tokens, llm_tokens * self.merge**2
        if self.kind == "pixtral":
            s = min(1.0, self.max_side / max(width, height))
            cols, rows = math.ceil(width * s / self.patch), math.ceil(height * s / self.patch)
            return cols * rows + rows, cols * rows  # one [IMG_BREAK]/[IMG_END] per row
        per_crop = (self.crop // self.patch) ** 2  # 729 for SigLIP so400m/14 at 384 px
        crops = min(9, math.ceil(width / self.crop) * math.ceil(height / self.crop)) + 1
        return per_crop * crops, per_crop * crops

    def vision_attention_flops(self, patches: int) -> float:
        """Attention FLOPs of the vision encoder over one image's patches: windowed layers
        (Qwen2.5-VL) and per-crop attention (LLaVA-OneVision) attend to fewer patches."""
        s = self.vision
        if self.window:
            win = self.window**2
            attn = (s.layers - self.full_layers) * 4.0 * s.hidden * patches * win
            attn += self.full_layers * 4.0 * s.hidden * patches**2
        elif self.kind == "llava_onevision":  # each crop attends within itself
            per = (self.crop // self.patch) ** 2
            attn = float(s.attn_flops(per, per)) * (patches // per)
        else:
            attn = float(s.attn_flops(patches, patches))
        return attn

    def vision_seconds(self, gpu: Accelerator, par: Parallel, images, width: int, height: int):
        """Encoder time for ``images`` images on a replica, TP-sharded. Weights and math are
        16-bit whatever the language model's format: FP8/INT4 serving checkpoints leave the
        vision tower unquantised (their recipes ignore ``visual.*``), so its GEMMs run in
        BF16."""
        mc = Machine(gpu, par, "bf16")
        _, patches = self.tokens(width, height)
        attn = self.vision_attention_flops(patches)
        n = np.asarray(images, float)
        st = stack_pass(
            mc,
            self.vision,
            2.0,
            n,
            patches,
            patches,
            extra_params=self.vision_extra,
            attn_flops=attn,
            host_seqs=0.0,  # images are not sequences the engine schedules
        )
        return np.where(n > 0, st.total, 0.0)


def build_vlm(name: str, display: str, c: dict[str, Any]) -> VlmModel:
    mt = c.get("model_type")
    v = c.get("vision_config") or {}
    if mt == "qwen2_5_vl":
        llm = model_from_config({**c, "model_type": "qwen2"}, name=name, display_name=display)
        d, p, t = v["hidden_size"], v.get("patch_size", 14), v.get("temporal_patch_size", 2)
        m = v.get("spatial_merge_size", 2)
        stack = Stack(
            layers=v["depth"],
            hidden=d,
            heads=v["num_heads"],
            ffn=v["intermediate_size"],
            gated=True,
            norm_params=1,
        )
        out = v.get("out_hidden_size", llm.hidden_size)
        merger = d + (d * m * m) * (d * m * m) + d * m * m + (d * m * m) * out + out
        extra = 3 * t * p * p * d + merger + d  # patch conv (no bias), merger, final norm
        return VlmModel(
            name,
            display,
            llm,
            stack,
            mt,
            p,
            extra,
            merge=m,
            window=v.get("window_size", 112) // (p * m) * m,
            full_layers=len(v.get("fullatt_block_indexes", [])),
        )
    if mt == "llava" and (v.get("model_type") == "pixtral"):
        llm = model_from_config(c, name=name, display_name=display)
        v = {**_PIXTRAL_VISION, **v}
        d, p = v["hidden_size"], v["patch_size"]
        stack = Stack(
            layers=v["num_hidden_layers"],
            hidden=d,
            heads=v["num_attention_heads"],
            ffn=v["intermediate_size"],
            gated=True,
            qkv_bias=False,
            o_bias=False,
            ffn_bias=False,
            norm_params=1,
        )
        h = llm.hidden_size
        extra = 3 * p * p * d + d + (d * h + h) + (h * h + h)  # conv, ln_pre, 2-layer projector
        return VlmModel(
            name, display, llm, stack, "pixtral", p, extra, max_side=v.get("image_size", 1024)
        )
    if mt == "llava_onevision":
        llm = model_from_config(c, name=name, display_name=display)
        d, p, img = v["hidden_size"], v.get("patch_size", 14), v.get("image_size", 384)
        stack = Stack(
            layers=v["num_hidden_layers"],
            hidden=d,
            heads=v["num_attention_heads"],
            ffn=v["intermediate_size"],
        )
        h = llm.hidden_size
        extra = 3 * p * p * d + d + (img // p) ** 2 * d + 2 * d  # conv, positions, post-norm
        extra += (d * h + h) + (h * h + h) + h  # projector and image_newline
        return VlmModel(name, display, llm, stack, mt, p, extra, crop=img)
    raise EstimatorError(
        f"{name}: unsupported vision-language model_type '{mt}' "
        "(supported: qwen2_5_vl, llava with pixtral vision, llava_onevision)"
    )


def _build(p: FamilyPreset) -> VlmModel:
    return build_vlm(p.name, p.display_name, p.config)


# served as a language model with the images' tokens in the prompt (see estimator.api)
register(Family("vlm", _build, language_model=True))
