"""A repeated camera frame gets the same output: why a frame came out unchanged.

Many webcams and phones repeat frames (a 25 fps camera on a 30 fps stream sends every
sixth frame twice). The tracker answers a repeat with the very same faces
(``HeldRepeats``: the last tracked frame, within a tolerance of compression noise); the
stage then gives the repeat its last output again instead of rendering it anew
(``LastOutput``: the very same pixels), so nothing that changes over time (smoothing,
colour statistics) moves on a picture that did not. A face whose aligned crop barely
changed between frames that are not repeats gets its last swapped face again
(``livecam.face.swap.reuse``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import cv2
import numpy as np
import numpy.typing as npt

from livecam.types import Face, Frame

Picks = Sequence[tuple[Face, int]]
Box = npt.NDArray[np.float32]


class LastOutput:
    """The last camera frame with faces picked, its picks and its output frame (copies).

    A frame ``repeats`` the last one when its picks are the same face records (the tracker
    held them) and its pixels are exactly the same; ``output`` is then a copy of the last
    output. One instance per stage, used on one thread.
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
        """Keep copies of a frame with faces picked and of its output."""
        if not picks:
            self.clear()
            return
        self._input = _copy_into(self._input, frame)
        self._output = _copy_into(self._output, output)
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


def _copy_into(buffer: Frame | None, frame: Frame) -> Frame:
    if buffer is None or buffer.shape != frame.shape or buffer.dtype != frame.dtype:
        buffer = np.empty_like(frame)
    np.copyto(buffer, frame)
    return buffer


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
    its face boxes at full resolution (copies; a fraction of the frame)."""

    def __init__(self, image: Frame, boxes: Sequence[Box]) -> None:
        h, w = image.shape[:2]
        self.shape = image.shape
        self.thumb = image[::8, ::8].copy()
        self.regions: list[tuple[slice, slice]] = []
        for box in boxes:
            x1, y1 = max(int(box[0]), 0), max(int(box[1]), 0)
            x2, y2 = min(int(math.ceil(box[2])), w), min(int(math.ceil(box[3])), h)
            if x2 > x1 and y2 > y1:
                self.regions.append((slice(y1, y2), slice(x1, x2)))
        self.crops = [image[r].copy() for r in self.regions]

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
