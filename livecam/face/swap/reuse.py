"""Reuse of a tracked face's last swapped crop while its aligned crop has barely changed.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import cv2
import numpy as np
import numpy.typing as npt

from livecam.face.crops import align
from livecam.face.identity.metrics import psnr
from livecam.face.parts import Swapper
from livecam.types import Affine, Face, FaceWork, Frame, FrameContext

log = logging.getLogger(__name__)

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
