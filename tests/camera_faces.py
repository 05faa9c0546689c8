"""Tells, for an output frame of a stream of a video clip, whether it shows the camera's
own face: the privacy check of the Blank and Freeze switches.

``CameraFaces.of_clip`` reads one pass of the clip as the stream's source reads it (the
same frames, the same size), finds the face in each frame with the bundled YuNet, and
keeps, for every camera frame, a small picture of the face region (the union of every
frame's face box, so a moving head stays inside it). An output frame is then

* ``black`` when its face region is dark (a blank frame),
* ``camera`` when its face region matches one of the camera frames' (the nearest one within
  ``CAMERA_DISTANCE`` grey levels, root mean square): the camera's face left unswapped, and
* ``swapped`` otherwise: the face region differs from every camera frame.

The distances are kept, so a test can show that swapped frames sit far from the
threshold (the check separates the two), not just under or over it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from livecam.config.schema import SourceConfig
from livecam.face.detect.yunet import YuNetDetector, bundled_yunet
from livecam.sources import make_source
from livecam.sources.base import EndOfStream
from livecam.types import Frame, FrameContext

Kind = Literal["black", "camera", "swapped"]
THUMB = (24, 24)  # the face region is compared at this size (grey levels of BGR)
#: an output frame whose face region is within this distance of a camera frame's shows that
#: camera face. Measured on the d6 clip at 320x240 through the .mp4 recorder: the camera's
#: frames lie 2.1-2.7 from their originals (the codec's noise; 0 on a virtual camera), the
#: lite swap's 13.6-19.1
CAMERA_DISTANCE = 6.0
BLACK_LEVEL = 12.0  # a face region darker than this on average is a blank frame
DETECT_EVERY = 25  # the face region: the union of the faces found in every 25th frame


@dataclass(frozen=True)
class CameraFaces:
    """The face region of every camera frame of one pass of a clip."""

    region: tuple[slice, slice]
    thumbs: npt.NDArray[np.float32]  # (frames, THUMB pixels * 3)

    @classmethod
    def of_clip(cls, frames: list[Frame]) -> CameraFaces:
        """Note the faces of ``frames`` (every frame of one pass: ``read_pass``)."""
        detector = YuNetDetector(bundled_yunet())
        boxes = [
            faces[0].bbox
            for frame in frames[::DETECT_EVERY]
            if (faces := detector.detect([FrameContext(frame)])[0])
        ]
        if not boxes:
            raise ValueError("no face found in the clip")
        h, w = frames[0].shape[:2]
        x1, y1 = np.min([b[:2] for b in boxes], axis=0)
        x2, y2 = np.max([b[2:] for b in boxes], axis=0)
        region = (
            slice(max(int(y1), 0), min(int(y2) + 1, h)),
            slice(max(int(x1), 0), min(int(x2) + 1, w)),
        )
        empty = cls(region, np.empty((0, 0), np.float32))
        return cls(region, np.stack([empty.thumb(f) for f in frames]))

    def thumb(self, frame: Frame) -> npt.NDArray[np.float32]:
        """The face region of ``frame``, small, as a flat float vector."""
        small = cv2.resize(frame[self.region], THUMB, interpolation=cv2.INTER_AREA)
        return np.asarray(small, np.float32).reshape(-1)

    def distances(self, frames: list[Frame]) -> npt.NDArray[np.float32]:
        """Per frame, how far its face region is from the nearest camera frame's: the
        root mean square difference in grey levels (one matrix product for all)."""
        if not frames:
            return np.empty(0, np.float32)
        out = np.stack([self.thumb(f) for f in frames])
        cams = self.thumbs
        squared = (out**2).sum(axis=1)[:, None] + (cams**2).sum(axis=1)[None, :] - 2 * out @ cams.T
        nearest = np.maximum(squared.min(axis=1), 0) / out.shape[1]
        return np.asarray(np.sqrt(nearest), np.float32)

    def kinds(self, frames: list[Frame]) -> list[Kind]:
        """What each frame shows where the camera's face is (the module docstring)."""
        dark = [float(self.thumb(f).mean()) < BLACK_LEVEL for f in frames]
        lit = [f for f, d in zip(frames, dark, strict=True) if not d]
        near = iter(self.distances(lit) <= CAMERA_DISTANCE)
        return ["black" if d else "camera" if next(near) else "swapped" for d in dark]


def read_pass(source: SourceConfig) -> list[Frame]:
    """Every frame of one pass of the video ``source``, as the stream reads them."""
    clip = make_source(dataclasses.replace(source, loop=False))
    clip.open()
    frames: list[Frame] = []
    try:
        while True:
            try:
                frames.append(clip.read())
            except EndOfStream:
                return frames
    finally:
        clip.close()
