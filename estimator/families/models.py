"""Family model schemas, built from a preset's verbatim config; parameters are derived."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..errors import EstimatorError
from ..stack import Stack


class EncoderModel(BaseModel):
    """A bidirectional text encoder (embeddings) or cross-encoder (reranker); or a decoder
    LLM used as an embedder (E5-Mistral), then ``causal``."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["encoder", "reranker"]
    stack: Stack
    vocab: int
    positions: int = 0  # learned position embeddings
    type_vocab: int = 0
    embed_norm: bool = True
    pooler: bool = False  # BERT-style dense pooler
    head_outputs: int = 0  # classification head (reranker: 1 score)
    extra_params: int = 0
    extra_note: str = ""
    max_tokens: int | None = None  # longest input the model reads (from its config)

    @property
    def params(self) -> int:
        s = self.stack
        n = (self.vocab + self.positions + self.type_vocab) * s.hidden
        n += 2 * s.hidden if self.embed_norm else 0
        n += s.params()
        if self.pooler:
            n += s.hidden * s.hidden + s.hidden
        if self.head_outputs:  # RobertaClassificationHead: dense + out_proj
            n += s.hidden * s.hidden + s.hidden + s.hidden * self.head_outputs + self.head_outputs
        return n + self.extra_params


class AsrModel(BaseModel):
    """Whisper: a conv stem and encoder over a 30 s log-mel window (1500 frames after the
    stride-2 conv), and an autoregressive decoder with cross-attention to it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    display_name: str = ""
    family: Literal["asr"] = "asr"
    encoder: Stack
    decoder: Stack
    n_mels: int
    vocab: int
    source_positions: int = 1500
    target_positions: int = 448
    window_s: float = 30.0

    @property
    def params(self) -> int:
        d = self.encoder.hidden
        stem = self.n_mels * d * 3 + d + d * d * 3 + d  # two conv1d, kernel 3
        enc = stem + self.source_positions * d + self.encoder.params() + 2 * d
        dd = self.decoder.hidden
        dec = (self.vocab + self.target_positions) * dd + self.decoder.params() + 2 * dd
        return enc + dec  # the output projection is tied to the token embedding

    @property
    def stem_flops_per_window(self) -> float:
        d, frames = self.encoder.hidden, 2 * self.source_positions
        return 2 * (self.n_mels * d * 3 * frames + d * d * 3 * self.source_positions)


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
    def params(self) -> int:
        d = self.encoder.hidden
        embed = self.tubelet * self.patch * self.patch * self.channels * d + d
        n = embed + self.encoder.params() + 2 * d
        if self.predictor is not None:
            n += self.predictor.params() + 2 * self.predictor.hidden + self.predictor_io
        return n


FamilyModel = EncoderModel | AsrModel | JepaModel


def _get(cfg: dict[str, Any], key: str, where: str, default: Any = None) -> Any:
    v = cfg.get(key, default)
    if v is None:
        raise EstimatorError(f"{where}: config is missing required key '{key}'")
    return v
