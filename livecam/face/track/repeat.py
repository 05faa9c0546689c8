"""Why a frame came out unchanged: every way LiveCam gives a frame or a face its last
result instead of computing it anew, in this one file.

1. **The tracker's repeat hold** (``HeldRepeats``, inside ``FaceTracker.update``). Many
   webcams and phones repeat frames (a 25 fps camera on a 30 fps stream sends every sixth
   frame twice). A frame within ``swap.detect.repeat_tolerance`` grey levels of the last
   tracked one (bar stray pixels of compression noise: ``FrameSnapshot``) gets the very
   same face records, and no track moves.
2. **Exact repeats** (``LastOutput``). A frame whose pixels and held faces are exactly the
   last frame's gets the last output again (the very same pixels), so nothing that changes
   over time (smoothing, colour statistics) moves on a picture that did not.
3. **Crop reuse** (``SwapReuse``; ``swap.reuse``, neural swappers). A tracked face whose
   aligned crop barely changed gets its last swapped face again, re-pasted where the face
   is now, instead of a swapper run; ``packet.faces_reused`` counts them.

The swap stage asks 2 and 3 through one call, ``Repeats.run``; 1 happens before, where the
faces are found (``prepare``, perhaps one batch ahead on another thread).

Crop reuse in detail:

Reuse of a tracked face's last swapped crop while its aligned crop has barely changed.

A neural swapper works on an aligned crop (the face's 5 keypoints mapped to a fixed
template), so a face that moves without changing its look gives nearly the same crop from
frame to frame, and nearly the same swapped output. ``SwapReuse`` keeps, per track
(``face.track_id`` >= 0), the last swapped output, a 32x32 grey thumbnail of the crop it
was swapped from, and how many frames in a row it has been reused. For each new face it
aligns the crop as the swapper would (``AligningSwapper.face_affine``: no model call),
compares the thumbnails by PSNR, and when they are at least ``similarity`` dB apart and
fewer than ``max_reuse`` reuses came in a row, gives the record the current ``affine`` and
``crop`` with the cached ``output``: the output is in crop space, so pasting it through the
current affine follows the face. Every other face goes to the swapper in one batch and
refreshes its track's entry. The reference thumbnail is the one the output was swapped
from (not the previous frame's), so slow drift is caught too. Tracks absent from a call are
forgotten; a new source or preset builds a new stage and with it a new ``SwapReuse``.

Only swappers with a fixed-size aligned crop can be reused this way (the neural ones). The
classic swapper's crop is a whole-pixel ROI whose size follows the landmarks and whose mask
is made with the output, so a cached output would not fit the next frame's ROI; it does
not implement ``AligningSwapper`` and is always run.

Defaults (``swap.reuse.reuse`` on, 32 dB, 3 in a row) from bench/bench_reuse.py on this CPU with
the narrow synthetic inswapper: the face-motion clip 1.64x the frames/s, 72 % of the faces
reused, every frame within 41 dB of the output without reuse (whole frame; 30 dB worst
inside the pasted face); the hand-held five-person video 1.20x, 25 % reused, 46 dB.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.swap import ReuseSettings
from livecam.face.crops import align
from livecam.face.identity.metrics import psnr
from livecam.face.parts import SwapCache, Swapper
from livecam.types import Affine, Face, FaceWork, Frame, FrameContext, FramePacket

log = logging.getLogger(__name__)

Picks = Sequence[tuple[Face, int]]
Box = npt.NDArray[np.float32]


class LastOutput:
    """The last camera frame with faces picked, its picks and its output frame.

    A frame ``repeats`` the last one when its picks are the same face records (the tracker
    held them) and its pixels are exactly the same; ``output`` is then a copy of the last
    output. One instance per stage, used on one thread.

    It keeps the very arrays, not copies (two full-frame copies a frame, 1.5 ms at 1080p):
    a frame handed to a stage and the frame it returns are never changed afterwards (a
    stage that draws works on a copy, the blenders paste onto one, the output thread's
    label and watermark are copies, a frozen picture is the same array sent again).
    """

    def __init__(self) -> None:
        self._input: Frame | None = None
        self._output: Frame | None = None
        self._picks: list[tuple[Face, int]] = []
        self.swapped: int | None = 0
        self.reused = 0

    def clear(self) -> None:
        self._input = self._output = None
        self._picks = []

    def repeats(self, frame: Frame, picks: Picks) -> bool:
        """Whether ``frame`` with ``picks`` repeats the last remembered frame exactly."""
        return self._input is not None and is_repeat(frame, picks, self._input, self._picks)

    def mark(self, frames: Sequence[Frame], picks: Sequence[Picks]) -> list[bool]:
        """Per frame of a batch (in order), whether it repeats the frame before it (the
        first: the last remembered one)."""
        out = [self.repeats(frames[0], picks[0])] if frames else []
        for i in range(1, len(frames)):
            out.append(is_repeat(frames[i], picks[i], frames[i - 1], picks[i - 1]))
        return out

    def output(self) -> Frame:
        assert self._output is not None
        return self._output.copy()

    def remember(
        self, frame: Frame, picks: Picks, output: Frame, swapped: int | None, reused: int
    ) -> None:
        """Keep a frame with faces picked and its output (the arrays themselves)."""
        if not picks:
            self.clear()
            return
        self._input, self._output = frame, output
        self._picks = list(picks)
        self.swapped, self.reused = swapped, reused


def is_repeat(frame: Frame, picks: Picks, last: Frame, last_picks: Picks) -> bool:
    """Whether a frame with faces picked repeats the one before it: the same face records
    with the same sources (the tracker held them) and exactly the same pixels."""
    if not picks or len(picks) != len(last_picks):
        return False
    same = all(
        face is old and source == old_source
        for (face, source), (old, old_source) in zip(picks, last_picks, strict=True)
    )
    return same and last.shape == frame.shape and bool(np.array_equal(last, frame))


class HeldRepeats:
    """The tracker's side: a frame that repeats the last tracked frame (``FrameSnapshot``,
    within ``tolerance`` grey levels) is answered with that frame's faces again, moving no
    track. ``checked``: the detector ran on the last tracked frame (when it did not, a
    repeat is held only if the detector finds every shown face on it: ``confirmed``).
    ``held`` counts the frames answered so. One instance per tracker."""

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance
        self.held = 0
        self.checked = False
        self._snapshot: FrameSnapshot | None = None
        self._faces: list[Face] = []

    def reset(self) -> None:
        self._snapshot, self._faces = None, []

    def repeats(self, image: Frame) -> bool:
        """Whether ``image`` repeats the last tracked frame, which showed faces."""
        last = self._snapshot
        return last is not None and bool(self._faces) and last.repeated_by(image, self.tolerance)

    def confirmed(self, detections: list[Face], iou: Callable[[Box, Box], float]) -> bool:
        """Whether every face shown in the last frame has a detection on it (``iou`` of
        their boxes at least 0.3)."""
        return all(any(iou(face.bbox, d.bbox) >= 0.3 for d in detections) for face in self._faces)

    def hold(self) -> list[Face]:
        """The faces of the repeated frame (its detector check now done)."""
        self.checked = True
        self.held += 1
        return list(self._faces)

    def answer(
        self,
        image: Frame,
        detect: Callable[[], list[Face]],
        iou: Callable[[Box, Box], float],
    ) -> tuple[list[Face] | None, list[Face] | None]:
        """The tracker's one call: the held faces when ``image`` repeats the last tracked
        frame (when no detector saw that frame, ``detect`` runs on this one and must find
        every shown face: ``confirmed``), else None; and the detections made for the check
        (None: none), which the tracker then uses."""
        if not self.repeats(image):
            return None, None
        detections = None if self.checked else detect()
        if detections is None or self.confirmed(detections, iou):
            return self.hold(), detections
        return None, detections

    def remember(self, image: Frame, faces: list[Face], *, checked: bool) -> None:
        """The frame just tracked, its faces, and whether the detector ran on it."""
        self._snapshot = FrameSnapshot(image, [f.bbox for f in faces]) if faces else None
        self._faces, self.checked = faces, checked


REPEAT_SHARE = 0.002
"""A frame repeats the last one when at most this share of its values changed by more than
the tolerance (a few stray pixels of compression noise; a blink changes ~1 % of a face)."""


def _changed(x: Frame, y: Frame, tolerance: float) -> float:
    """The share of values of two same-size images that differ by more than ``tolerance``."""
    diff = cv2.absdiff(np.ascontiguousarray(x), np.ascontiguousarray(y))
    return float(np.count_nonzero(diff > tolerance)) / max(diff.size, 1)


class FrameSnapshot:
    """What a later frame is compared with to tell a repeat: every 8th pixel of a frame and
    its face boxes at full resolution (views of the frame, which is never changed once
    handed on: see ``LastOutput``; copies cost 0.3 ms a 1080p frame)."""

    def __init__(self, image: Frame, boxes: Sequence[Box]) -> None:
        h, w = image.shape[:2]
        self.shape = image.shape
        self.thumb = image[::8, ::8]
        self.regions: list[tuple[slice, slice]] = []
        for box in boxes:
            x1, y1 = max(int(box[0]), 0), max(int(box[1]), 0)
            x2, y2 = min(int(math.ceil(box[2])), w), min(int(math.ceil(box[3])), h)
            if x2 > x1 and y2 > y1:
                self.regions.append((slice(y1, y2), slice(x1, x2)))
        self.crops = [image[r] for r in self.regions]

    def repeated_by(self, image: Frame, tolerance: float) -> bool:
        """Whether ``image`` repeats the snapshot's frame: nearly no value (``REPEAT_SHARE``;
        none with ``tolerance`` 0) differs by more than ``tolerance`` inside each face box
        or over the frame. Cheap for a frame that moved: a coarse look at the faces first."""
        if image.shape != self.shape:
            return False
        limit = REPEAT_SHARE if tolerance > 0 else 0.0
        for region, crop in zip(self.regions, self.crops, strict=True):
            if _changed(image[region][::4, ::4], crop[::4, ::4], tolerance) > limit:
                return False
        if _changed(image[::8, ::8], self.thumb, tolerance) > limit:
            return False
        return all(
            _changed(image[region], crop, tolerance) <= limit
            for region, crop in zip(self.regions, self.crops, strict=True)
        )


THUMB_SIZE = 32
"""Side of the grey thumbnail the crops are compared on (pixels)."""

Thumb = npt.NDArray[np.float32]


@runtime_checkable
class AligningSwapper(Protocol):
    """A swapper whose crop is an aligned square of ``crop_size`` pixels, and which says
    the frame -> crop affine of a face without running its model (the ``NeuralSwapper``s).
    ``face_affine`` returns None where ``swap`` would leave the face unswapped."""

    crop_size: int

    def face_affine(self, face: Face, frame_shape: tuple[int, ...]) -> Affine | None: ...


def thumbnail(crop: Frame) -> Thumb:
    """The crop as a THUMB_SIZE square of grey levels (float32, area-averaged)."""
    grey = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
    small = cv2.resize(grey, (THUMB_SIZE, THUMB_SIZE), interpolation=cv2.INTER_AREA)
    return np.asarray(small, np.float32)


@dataclass
class _Entry:
    """One track's cached swap: the output, the thumbnail of the crop it came from, the
    source it carries, reuses in a row; ``output`` is None until its swap has run."""

    thumb: Thumb
    source_index: int
    output: Frame | None = None
    streak: int = 0


@dataclass(frozen=True)
class _Hit:
    work: FaceWork
    affine: Affine
    crop: Frame
    entry: _Entry


class SwapReuse:
    """Per-track reuse of swapped outputs (see the module docstring).

    ``similarity``: the least PSNR (dB) between the 32x32 grey thumbnails of the current
    aligned crop and the crop the cached output was swapped from for a reuse;
    ``max_reuse``: reuses in a row before the swapper must run again (0: never reuse).
    ``hits`` and ``misses`` count faces over the object's life; ``last_hits`` are the
    records of the last ``swap`` call that got a reused output. Used by one thread.
    """

    @classmethod
    def from_section(cls, reuse: ReuseSettings, swapper: object) -> Self | None:
        """Crop reuse as its config section (``[swap.reuse]``) sets it for ``swapper``; None
        when it is off or the swapper's outputs cannot be reused."""
        if not reuse.reuse or not cls.supports(swapper):
            return None
        return cls(reuse.reuse_similarity, reuse.reuse_max)

    def __init__(self, similarity: float = 32.0, max_reuse: int = 3) -> None:
        if max_reuse < 0:
            raise ValueError(f"max_reuse must be >= 0, got {max_reuse}")
        self.similarity = float(similarity)
        self.max_reuse = int(max_reuse)
        self.hits = 0
        self.misses = 0
        self.last_hits: list[FaceWork] = []
        self._entries: dict[int, _Entry] = {}

    @property
    def tracks(self) -> tuple[int, ...]:
        """The track ids with a cached output."""
        return tuple(self._entries)

    @staticmethod
    def supports(swapper: object) -> bool:
        """Whether ``swapper``'s outputs can be reused (it is an ``AligningSwapper``)."""
        return isinstance(swapper, AligningSwapper)

    def clear(self) -> None:
        self._entries.clear()

    def swap(
        self,
        swapper: Swapper[Any],
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[object],
    ) -> list[FaceWork]:
        """``swapper.swap(frames, faces, sources)``, with the faces whose crop matches their
        track's cached one given the cached output instead (same records, same order).

        Faces are taken in frame order, so within a batch of frames a track swapped in an
        earlier frame can be reused in a later one. A swapper that is not an
        ``AligningSwapper`` runs on every face."""
        if not isinstance(swapper, AligningSwapper) or self.max_reuse == 0:
            self.last_hits = []
            self.misses += len(faces)
            return swapper.swap(frames, faces, sources)
        order = sorted(range(len(faces)), key=lambda i: faces[i].frame_index)
        out: list[FaceWork] = list(faces)
        hits: list[tuple[int, _Hit]] = []
        misses: list[int] = []
        fresh: dict[int, _Entry] = {}  # position of a missed face -> its new entry
        seen: set[int] = set()
        for i in order:
            work = faces[i]
            tid = work.face.track_id
            if tid < 0:
                misses.append(i)
                continue
            seen.add(tid)
            frame = frames[work.frame_index]
            affine = swapper.face_affine(work.face, frame.shape)
            if affine is None:
                self._entries.pop(tid, None)
                misses.append(i)
                continue
            crop = align.warp_crop(frame.image, affine, swapper.crop_size)
            thumb = thumbnail(crop)
            entry = self._entries.get(tid)
            if (
                entry is not None
                and entry.source_index == work.source_index
                and entry.streak < self.max_reuse
                and psnr(thumb, entry.thumb) >= self.similarity
            ):
                entry.streak += 1
                hits.append((i, _Hit(work, affine, crop, entry)))
                continue
            entry = _Entry(thumb, work.source_index)
            self._entries[tid] = entry
            fresh[i] = entry
            misses.append(i)
        for tid in [t for t in self._entries if t not in seen]:
            del self._entries[tid]  # the track ended (or its face was not selected)
        if misses:
            done = swapper.swap(frames, [faces[i] for i in misses], sources)
            for i, work in zip(misses, done, strict=True):
                out[i] = work
                if i in fresh:
                    fresh[i].output = work.output
        self.last_hits = []
        for i, hit in hits:
            if hit.entry.output is None:  # its swap in this batch found nothing
                continue
            out[i] = dataclasses.replace(
                hit.work, affine=hit.affine, crop=hit.crop, output=hit.entry.output
            )
            self.last_hits.append(out[i])
        for tid in [t for t, e in self._entries.items() if e.output is None]:
            del self._entries[tid]
        self.hits += len(self.last_hits)
        self.misses += len(faces) - len(self.last_hits)
        return out


Render = Callable[[list[FaceWork], SwapCache | None], list[FaceWork]]
"""Swaps and pastes ``works`` through the cache (crop reuse, or None), setting each
packet's frame; returns the swapped records."""


class Repeats:
    """The swap stage's one call for what it does not compute anew (``run``): exact repeats
    get the last output (``LastOutput``), faces whose crop barely changed their last
    swapped face (``reuse``: a ``SwapReuse``, None: off). One instance per stage, used on
    one thread."""

    def __init__(self, reuse: SwapReuse | None = None) -> None:
        self.reuse = reuse
        self.last = LastOutput()

    def run(
        self, batch: list[FramePacket], picks: Sequence[Picks], render: Render
    ) -> list[FaceWork]:
        """Render the batch's picked faces that are not exact repeats (``render``, with crop
        reuse), give each exact repeat the output before it, count each frame's swapped and
        reused faces (``faces_swapped``, ``faces_reused``) and remember the last frame.
        Returns the records swapped or reused now."""
        inputs = [p.frame for p in batch]
        repeated = self.last.mark(inputs, picks)
        works = [
            FaceWork(i, packet.seq, face, source_index=source)
            for i, (packet, pick) in enumerate(zip(batch, picks, strict=True))
            if not repeated[i]
            for face, source in pick
        ]
        done = render(works, self.reuse) if works else []
        if not works and self.reuse is not None and not any(picks):
            self.reuse.clear()  # no face selected: every track's entry is stale
        swapped = Counter(w.frame_index for w in done)
        hits = self.reuse.last_hits if works and self.reuse is not None else []
        reused = Counter(w.frame_index for w in hits)
        for i, packet in enumerate(batch):
            packet.faces_swapped = swapped[i]
            packet.faces_reused = reused[i]
        self._repeat_outputs(batch, inputs, picks, repeated)
        return done

    def _repeat_outputs(
        self,
        batch: list[FramePacket],
        inputs: list[Frame],
        picks: Sequence[Picks],
        repeated: list[bool],
    ) -> None:
        """Give each repeated frame the output of the frame before it; remember the last."""
        last = self.last
        for i, packet in enumerate(batch):
            if repeated[i]:
                before = batch[i - 1] if i else None
                packet.frame = last.output() if before is None else before.frame.copy()
                packet.faces_swapped = last.swapped if before is None else before.faces_swapped
                packet.faces_reused = last.reused if before is None else before.faces_reused
        if batch:
            end = batch[-1]
            last.remember(inputs[-1], picks[-1], end.frame, end.faces_swapped, end.faces_reused)

    def clear(self) -> None:
        """Forget the last frame and every cached face (a new stream)."""
        self.last.clear()
        if self.reuse is not None:
            self.reuse.clear()
