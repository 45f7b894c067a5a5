"""JEPA world models (V-JEPA, V-JEPA 2, V-JEPA 2-AC): a ViT over space-time patches
encodes clips; the action-conditioned variant also plans by rolling its predictor."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import EstimatorError
from ..formats import weight_format
from ..hardware import Accelerator
from ..parallel import Parallel
from ..roofline import ACT_BYTES
from ..stack import Stack
from .base import (
    FamilyEstimate,
    FamilyOptions,
    config_value,
    memory,
    result,
    stack_pass,
    tp_machine,
)
from .registry import Family, FamilyPreset, register


class JepaModel(BaseModel):
    """A V-JEPA video encoder (ViT over space-time patches: ``tubelet`` frames x
    ``patch`` x ``patch`` pixels each) and, for the action-conditioned variant, a predictor
    rolled over a planning horizon."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["jepa"] = "jepa"
    encoder: Stack
    patch: int
    tubelet: int
    channels: int = 3
    frames: int = 16
    resolution: int = 256
    predictor: Stack | None = None
    predictor_io: int = 0  # predictor input/output projections and action/state encoders
    action_conditioned: bool = False

    def tokens(self, frames: int, width: int, height: int) -> int:
        if frames % self.tubelet or width % self.patch or height % self.patch:
            raise EstimatorError(
                f"{self.name}: {frames} frames of {width}x{height} do not tile into "
                f"{self.tubelet}-frame tubelets of {self.patch}x{self.patch} patches"
            )
        return (frames // self.tubelet) * (width // self.patch) * (height // self.patch)

    @property
    def stacks(self) -> list[Stack]:
        return [self.encoder] + ([self.predictor] if self.predictor else [])

    @property
    def params(self) -> int:
        d = self.encoder.hidden
        embed = self.tubelet * self.patch * self.patch * self.channels * d + d
        n = embed + self.encoder.params() + 2 * d
        if self.predictor is not None:
            n += self.predictor.params() + 2 * self.predictor.hidden + self.predictor_io
        return n


def _vit(d: int, depth: int, heads: int, mlp_ratio: float) -> Stack:
    return Stack(layers=depth, hidden=d, heads=heads, ffn=int(d * mlp_ratio))


def build_jepa(p: FamilyPreset) -> JepaModel:
    """V-JEPA (facebookresearch/jepa yaml: encoder.embed_dim/depth/num_heads/mlp_ratio) or
    V-JEPA 2 (HF vjepa2 config: hidden_size/num_hidden_layers/...). Only the encoder runs at
    inference; the pretraining predictor is not counted. The action-conditioned variant adds
    its predictor (a ``predictor`` block with ``action_dim``)."""
    c, w = p.config, p.name
    if "encoder" in c:
        e = c["encoder"]
        enc = _vit(
            config_value(e, "embed_dim", w),
            config_value(e, "depth", w),
            config_value(e, "num_heads", w),
            e.get("mlp_ratio", 4.0),
        )
        patch, tub = config_value(c, "patch_size", w), config_value(c, "tubelet_size", w)
        frames, res, ch = c.get("num_frames", 16), c.get("crop_size", 224), c.get("in_chans", 3)
    else:
        enc = _vit(
            config_value(c, "hidden_size", w),
            config_value(c, "num_hidden_layers", w),
            config_value(c, "num_attention_heads", w),
            c.get("mlp_ratio", 4.0),
        )
        patch, tub = config_value(c, "patch_size", w), config_value(c, "tubelet_size", w)
        frames, res = c.get("frames_per_clip", 16), c.get("crop_size", 256)
        ch = c.get("in_chans", 3)
    pred, io = None, 0
    ac = c.get("predictor") if (c.get("predictor") or {}).get("action_dim") else None
    if ac:  # V-JEPA 2-AC: an action-conditioned predictor (action/state inputs) is part of it
        pd = config_value(ac, "embed_dim", w)
        pred = _vit(
            pd,
            config_value(ac, "depth", w),
            config_value(ac, "num_heads", w),
            ac.get("mlp_ratio", 4.0),
        )
        # in/out projections between encoder and predictor width, and the action and state
        # encoders (linear maps of the action/state vectors to the predictor width)
        io = 2 * enc.hidden * pd + enc.hidden + pd
        io += (ac.get("action_dim", 0) + ac.get("state_dim", 0)) * pd + 2 * pd
    return JepaModel(
        name=w,
        display_name=p.display_name,
        encoder=enc,
        patch=patch,
        tubelet=tub,
        channels=ch,
        frames=frames,
        resolution=res,
        predictor=pred,
        predictor_io=io,
        action_conditioned=bool(ac),
    )


def estimate_jepa(
    model: JepaModel,
    gpu: Accelerator,
    par: Parallel,
    weights: str,
    batch: int,
    frames: int,
    width: int,
    height: int,
    horizon: int = 0,
    samples: int = 0,
) -> FamilyEstimate:
    """Encode ``batch`` clips in one pass (attention over every space-time patch); for the
    action-conditioned model also plan: roll the predictor ``horizon`` steps for ``samples``
    candidate action sequences."""
    mc = tp_machine(model.name, model.stacks, gpu, par, weights)
    wb = weight_format(weights).bytes_per_value
    n = model.tokens(frames, width, height)
    e = model.encoder
    st = stack_pass(mc, e, wb, batch, n, n)
    act = batch * n * ACT_BYTES * (4 * e.hidden + (3 * e.hidden + e.ffn) / mc.tp)
    mem = memory(mc, model.params * wb / mc.tp, act, 0.0, batch)
    t = float(st.total)
    metrics: dict[str, Any] = {
        "patch_tokens": n,
        "s_per_clip": t,
        "s_per_batch": t,
        "clips_per_s": batch / t,
        "batch": batch,
        "frames": frames,
        "resolution": [width, height],
    }
    if model.predictor is not None and horizon and samples:
        p = model.predictor
        per_frame = (width // model.patch) * (height // model.patch)
        plan = float(stack_pass(mc, e, wb, 1, n, n).total)  # encode the current observation
        for h in range(1, horizon + 1):  # each step predicts the next frame for every sample
            plan += float(stack_pass(mc, p, wb, samples, per_frame, per_frame * h).total)
        metrics.update(s_per_plan=plan, horizon=horizon, samples=samples)
    return result(model, "jepa", mc, weights, mem, str(st.bottleneck()), metrics)


def _estimate(
    model: JepaModel, gpu: Accelerator, par: Parallel, weights: str, o: FamilyOptions
) -> FamilyEstimate:
    w, h = o.resolution or (model.resolution, model.resolution)
    frames = o.frames or model.frames
    return estimate_jepa(model, gpu, par, weights, o.batch, frames, w, h, o.horizon, o.samples)


register(Family("jepa", build_jepa, _estimate))
