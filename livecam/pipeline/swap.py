"""The swap stage: track target faces, pick which to replace, swap the source face in."""

from __future__ import annotations

import logging

from livecam.config import SwapConfig
from livecam.errors import ConfigError, ModelError
from livecam.pipeline.analysis import FaceAnalyzer, offline_analyzer
from livecam.pipeline.classic import ClassicSwapper, SourceModel
from livecam.pipeline.selection import ReferenceMatcher, select_faces
from livecam.pipeline.source_face import SourceFace, SourceFaceCache
from livecam.pipeline.tracking import FaceTracker
from livecam.types import FramePacket

log = logging.getLogger(__name__)

AVAILABLE_PRESETS = ("offline", "auto")


class ClassicSwapStage:
    """The offline preset: dlib tracking + classic mesh swap, all on the CPU.

    Frames with no selected face pass through untouched (the same array). ``enabled``
    can be switched off at any time (hotkey) to pass every frame through.
    """

    name = "swap"
    required = True

    def __init__(
        self,
        cfg: SwapConfig,
        source: SourceFace,
        live_analyzer: FaceAnalyzer,
        reference: ReferenceMatcher | None = None,
    ) -> None:
        self.cfg = cfg
        self.source = source
        self.enabled = True
        self._swapper = ClassicSwapper(cfg)
        landmarks = source.face.landmarks
        if landmarks is None:
            raise ModelError(f"no landmarks for the source face in {source.path}")
        self._model: SourceModel = self._swapper.prepare(source.image, landmarks)
        self._tracker = FaceTracker.from_analyzer(
            live_analyzer, detect_every=cfg.detect_every, smoothing=cfg.smoothing
        )
        self._reference = reference

    def warmup(self, width: int, height: int) -> None:
        self._tracker.reset()

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        if not self.enabled:
            return batch
        for packet in batch:
            faces = self._tracker.update(packet.frame, packet.seq)
            packet.faces = faces
            if self._reference is not None:
                chosen = self._reference.select(packet.frame, faces, packet.seq)
            else:
                chosen = select_faces(faces, self.cfg.select, packet.frame.shape)
            targets = [f.landmarks for f in chosen if f.landmarks is not None]
            if targets:
                packet.frame = self._swapper.swap(packet.frame, targets, self._model)
        return batch

    def close(self) -> None:
        self._tracker.reset()


def build_swap_stage(cfg: SwapConfig) -> ClassicSwapStage:
    """Check the preset and the source face (errors before the stream starts) and build
    the stage. The source image is analysed once, here."""
    if cfg.preset not in AVAILABLE_PRESETS:
        raise ModelError(
            f"preset '{cfg.preset}' needs ONNX models that this version cannot load yet",
            "use --preset offline (no download needed)",
        )
    if cfg.face is None:
        raise ConfigError(
            "the swap stage needs a source face image (config field 'swap.face')",
            "pass --face IMG",
        )
    cache = SourceFaceCache()
    source = cache.get(cfg.face, cfg.face_index)
    reference = None
    if cfg.select == "reference":
        if cfg.reference is None:
            raise ConfigError(
                "face selection 'reference' needs a reference image (config field "
                "'swap.reference')",
                "pass --reference IMG with a photo of the person whose face to replace",
            )
        ref_face = cache.get(cfg.reference, 0).face
        encoder = cache.analyzer.encoder
        if ref_face.embedding is None or encoder is None:
            raise ModelError(f"no identity embedding for the reference face {cfg.reference}")
        reference = ReferenceMatcher(encoder, ref_face.embedding, cfg.reference_threshold)
    live = offline_analyzer(max_side=cfg.detect_size, with_encoder=False)
    log.info(
        "swap: source face %d of %d in %s, preset %s, select %s",
        source.face_index,
        source.faces_found,
        source.path,
        cfg.preset,
        cfg.select,
    )
    return ClassicSwapStage(cfg, source, live, reference)
