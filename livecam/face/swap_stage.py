"""The swap stage, composed from a preset's parts: track faces, pick which to replace,
swap the source face in and paste it back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

from livecam.config.schema import SwapConfig, split_pair
from livecam.errors import ConfigError, ModelError
from livecam.face.build import JUDGE_NAME, build_parts, photo_analyzer
from livecam.face.identity.metrics import Embedding
from livecam.face.identity.swap_check import SwapCheck, likely_causes
from livecam.face.parts import Enhancer, FaceParts, SwapCache, Swapper
from livecam.face.source.photo import SourceFace, SourceFaceCache, photo_warnings
from livecam.face.track.mapping import FaceMapper
from livecam.face.track.repeat import Repeats, SwapReuse
from livecam.face.track.selection import (
    FaceSelector,
    ReferenceMatcher,
    mode_selector,
)
from livecam.face.track.tracking import FaceTracker, tracker_for
from livecam.models.presets import resolve_preset
from livecam.models.store import ModelStore
from livecam.types import (
    FaceWork,
    FrameContext,
    FramePacket,
    RunReport,
    SeenFace,
    take_analysis,
)

log = logging.getLogger(__name__)


class FaceSwapStage:
    """Detect/track -> select -> swap -> (enhance, mask) -> paste back, batch-first.

    The frames of a batch go through the tracker's detector as one list (in order); the
    selected faces of every frame of the batch then go through each face part as one list.
    Frames with no selected face pass through untouched (the same array). Each packet gets
    the faces found (``faces``) and how many were swapped (``faces_swapped``). Build and warm
    it on one thread, then use it on another. The control plane switches it off by skipping
    it (``set_swap``).

    ``opacity`` (0-1) is how much of the swapped face shows: a swapped frame becomes
    ``frame + opacity * (swapped - frame)``, so pixels the swap left alone stay as they were.
    ``reuse`` (None: off) gives a tracked face its last swapped face again while its aligned
    crop barely changes (``packet.faces_reused`` counts them); it lives and dies with the
    stage, so a new source or preset (a new stage) starts it empty. ``check`` (None: off)
    is the live swap check: about once a second a swapped face is offered to it, and its
    own thread says how far the output moved toward the source (``report_to``: where the
    readings and its warning go).
    """

    name = "swap"
    prepare_name = "track"
    required = True

    def __init__(
        self,
        parts: FaceParts,
        tracker: FaceTracker,
        selector: FaceSelector,
        sources: Sequence[SourceFace],
        prepared: Sequence[object],
        opacity: float = 1.0,
        reuse: SwapReuse | None = None,
        check: SwapCheck | None = None,
    ) -> None:
        self.parts = parts
        self.check = check  # the live swap check (None: off)
        self.opacity = opacity
        self.repeats = Repeats(reuse)  # exact repeats and crop reuse (face/track/repeat.py)
        self.source = sources[0]
        self.sources = tuple(sources)
        # a small or blurry source face
        self.warnings = tuple(w for s in sources for w in photo_warnings(s))
        self.providers = parts.providers()
        self._tracker = tracker
        self._selector = selector
        self._seen: tuple[SeenFace, ...] = ()
        self._prepared = list(prepared)

    @property
    def preset(self) -> str:
        return self.parts.preset

    def warmup(self, width: int, height: int) -> None:
        for part in self.parts.all():
            part.warmup()
        self._tracker.reset()

    def prepare(self, batch: list[FramePacket]) -> None:
        """Find and track the faces of each frame (``packet.faces``) and pick the ones to
        swap, each with its source (kept for ``process``). Reads only the camera frames:
        the runner may run it on another thread, one batch ahead of ``process``."""
        frames = _contexts(batch)
        for packet, frame, faces in zip(batch, frames, self._tracker.update(frames), strict=True):
            packet.faces = faces
            packet.analysis[self.name] = self._selector.pick(frame, faces)
        if batch:  # the newest frame's tracked faces, for the panel to number (one reference)
            h, w = batch[-1].frame.shape[:2]
            self._seen = tuple(
                SeenFace(f.track_id, (f.bbox[0] / w, f.bbox[1] / h, f.bbox[2] / w, f.bbox[3] / h))
                for f in batch[-1].faces
                if f.track_id >= 0
            )

    def process(self, batch: list[FramePacket]) -> list[FramePacket]:
        picks = take_analysis(batch, self.name)
        if picks is None:
            self.prepare(batch)
            picks = take_analysis(batch, self.name)
            assert picks is not None
        frames = _contexts(batch)
        done = self.repeats.run(
            batch, picks, lambda works, cache: self._render(batch, frames, works, cache)
        )
        if self.check is not None and done:  # a sample now and then, checked on its thread
            self.check.offer(frames, [p.frame for p in batch], done)
        return batch

    def _render(
        self,
        batch: list[FramePacket],
        frames: list[FrameContext],
        works: list[FaceWork],
        cache: SwapCache | None,
    ) -> list[FaceWork]:
        """Swap, paste and enhance ``works`` (through ``cache``), blended in at the opacity:
        each packet's frame becomes its output."""
        outputs, done = self.parts.render_faces(frames, works, self._prepared, cache)
        for packet, out in zip(batch, outputs, strict=True):
            if self.opacity < 1 and out is not packet.frame:
                out = np.asarray(
                    cv2.addWeighted(out, self.opacity, packet.frame, 1 - self.opacity, 0),
                    np.uint8,
                )
            packet.frame = out
        return done

    @property
    def can_target(self) -> bool:
        """True when the user may pick the swapped person (``select one``)."""
        return self._selector.can_target

    @property
    def target(self) -> int | None:
        """The track id of the person picked with ``set_target`` (None: auto)."""
        return self._selector.target

    @property
    def faces_seen(self) -> tuple[SeenFace, ...]:
        """The tracked faces of the newest frame prepared (read from another thread: one
        tuple, replaced whole)."""
        return self._seen

    def set_target(self, point: tuple[float, float] | None) -> None:
        """Swap the person at ``point`` (normalised frame x, y) from the next frame on
        until they leave, or the main face again (None); ``select one`` only."""
        self._selector.set_target(point)

    def report_to(self, report: RunReport) -> None:
        """Send the swap check's readings and warnings, and the swapper's own events (the
        remote swap's), to ``report`` (the telemetry)."""
        if self.check is not None:
            self.check.attach(report)
        self.parts.swapper.report_to(report)

    def close(self) -> None:
        if self.check is not None:
            self.check.close()
        self._tracker.reset()
        self.repeats.clear()
        self.parts.close()


def _contexts(batch: list[FramePacket]) -> list[FrameContext]:
    """The frames as the parts see them, timed by the file's clock for video files (a
    conversion then tracks and smooths the same way every time), else by capture time."""
    return [
        FrameContext(
            p.frame, p.seq, (p.t_capture_ns if p.t_media_ns is None else p.t_media_ns) / 1e9
        )
        for p in batch
    ]


def check_swap_config(cfg: SwapConfig) -> None:
    """The errors a swap config can have before anything is loaded (preset, face files)."""
    resolve_preset(cfg.preset)
    if cfg.select.map:
        if cfg.select.select == "reference":
            raise ConfigError(
                "--map and --select reference both say whose face is replaced",
                "use one of them: --map SOURCE=TARGET pairs, or --select reference",
            )
        return
    if cfg.face is None:
        raise ConfigError(
            "the swap needs a photo of the face to swap in, and none is chosen",
            "add --face PHOTO: a photo of the face to swap in (in a config file: swap.face)",
            panel_hint="pick a face photo in the Source tab (Open photo…)",
        )
    if cfg.select.select == "reference" and cfg.select.reference is None:
        raise ConfigError(
            "face selection 'reference' needs the reference photo "
            "(config field 'swap.select.reference')",
            "add --reference PHOTO: a photo of the person whose face is replaced",
            panel_hint="pick the reference photo in the Processing tab, or another selection",
        )


def build_swap_stage(
    cfg: SwapConfig,
    faces: SourceFaceCache,
    store: ModelStore | None = None,
    swapper_wrap: Callable[[Swapper[Any]], Swapper[Any]] | None = None,
    enhancer_wrap: Callable[[Enhancer], Enhancer] | None = None,
) -> FaceSwapStage:
    """Build the swap stage of ``cfg.preset`` (errors before the stream starts).

    ``faces`` is the app's source-face cache: the source (and reference) photo is analysed
    through it, once per photo and analyzer model across builds. The stage may be built and
    warmed on the loader thread while another build runs on the inference thread. ``store``
    finds (or downloads) the preset's model files (default: a store of this machine's
    folders). ``swapper_wrap`` puts another swapper in front of the preset's (the remote
    swap, which falls back to the preset's own), then ``enhancer_wrap`` another enhancer
    in front of its enhancer, when it has one (the remote enhancer).
    """
    check_swap_config(cfg)
    store = store if store is not None else ModelStore()
    row = resolve_preset(cfg.preset, store, cfg)
    parts = build_parts(row, cfg, store)
    if swapper_wrap is not None:
        try:
            parts = dataclasses.replace(parts, swapper=swapper_wrap(parts.swapper))
            if enhancer_wrap is not None and parts.enhancer is not None:
                parts = dataclasses.replace(parts, enhancer=enhancer_wrap(parts.enhancer))
        except BaseException:
            parts.close()
            raise
    try:
        # the source photo is embedded only for a swapper that uses the identity (the
        # classic swapper warps pixels: its photo is analysed without the recognizer)
        analyzer = photo_analyzer(parts, identity=parts.swapper.needs_identity)
        selector: FaceSelector = mode_selector(cfg.select.select)
        if cfg.select.map:
            pairs = [split_pair(m) for m in cfg.select.map]
            sources = [faces.get(p[0], None, analyzer) for p in pairs if p is not None]
            targets = [
                _embedding(faces, p[1], parts, "target photo") for p in pairs if p is not None
            ]
            selector = FaceMapper.from_section(cfg.select, parts.recognizer, targets)
        else:
            assert cfg.face is not None
            sources = [faces.get(cfg.face, cfg.face_index, analyzer)]
        if (
            cfg.select.reference is not None
            and cfg.select.select == "reference"
            and not cfg.select.map
        ):
            ref = _embedding(faces, cfg.select.reference, parts, "reference photo")
            selector = ReferenceMatcher.from_section(cfg.select, parts.recognizer, ref)
        prepared = [parts.swapper.prepare(s) for s in sources]
        tracker = tracker_for(cfg.detect, parts.detector, parts.landmarker)
    except BaseException:
        parts.close()
        raise
    for source in sources:
        log.info(
            "swap: source face %d of %d in %s, preset %s, select %s",
            source.face_index,
            source.faces_found,
            source.path,
            row.name,
            "map" if cfg.select.map else cfg.select.select,
        )
    reuse = SwapReuse.from_section(cfg.reuse, parts.swapper)
    causes = likely_causes(cfg, neural=parts.swapper.needs_identity)
    judge = JUDGE_NAME if parts.judge is not None else parts.recognizer.model_id
    check = SwapCheck(parts.check_recognizer, sources, causes=causes, judge=judge)
    return FaceSwapStage(
        parts, tracker, selector, sources, prepared, cfg.masks.opacity, reuse, check
    )


def _embedding(faces: SourceFaceCache, photo: str, parts: FaceParts, what: str) -> Embedding:
    """The identity embedding of the main face of ``photo`` (a reference or target photo)."""
    emb = faces.get(photo, 0, photo_analyzer(parts)).face.embedding
    if emb is None:
        raise ModelError(f"no identity embedding for the {what} {photo}")
    return emb
