"""The faces of a source photo for the Source panel: found by the app's photo analyser
through the app's face cache (``livecam.app.Resources.find_faces``: the lite preset's photo
detector) and numbered largest first, as ``swap.face_index`` counts them. No Qt: the
panel calls ``PhotoFaceFinder.find`` on a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from livecam.app import Resources
from livecam.errors import FaceSourceError
from livecam.face.source.photo import NO_FACE_HINT
from livecam.types import Frame

THUMB_SIDE = 360  # the thumbnail's long side (px)
BOX_COLOURS = ((80, 220, 80), (0, 200, 255))  # BGR: other faces, the chosen face


@dataclass(frozen=True)
class PhotoFaces:
    """A photo and its faces' boxes (x0, y0, x1, y1 in photo pixels), largest first."""

    path: Path
    image: Frame
    boxes: tuple[tuple[float, float, float, float], ...]

    def face_at(self, x: float, y: float) -> int | None:
        """The index of the smallest face box holding photo point (x, y), if any."""
        hits = [
            (float((b[2] - b[0]) * (b[3] - b[1])), i)
            for i, b in enumerate(self.boxes)
            if b[0] <= x <= b[2] and b[1] <= y <= b[3]
        ]
        return min(hits)[1] if hits else None


class PhotoFaceFinder:
    """Finds the faces of photos with the app's ``Resources`` (those of every run the
    panel starts); thread-safe."""

    def __init__(self, resources: Resources) -> None:
        self.resources = resources

    def find(self, path: str | Path) -> PhotoFaces:
        """The faces of the photo at ``path``; FaceSourceError when it cannot be read or
        holds no face (the message names the file, the hint the fix)."""
        p, image, faces = self.resources.find_faces(path)
        if not faces:
            raise FaceSourceError(f"no face found in {p.name}", NO_FACE_HINT)
        boxes = tuple(
            (float(a), float(b), float(c), float(d)) for a, b, c, d in (f.bbox for f in faces)
        )
        return PhotoFaces(p, image, boxes)


def thumbnail(faces: PhotoFaces, chosen: int | None, side: int = THUMB_SIDE) -> Frame:
    """The photo scaled to ``side`` with every face boxed and numbered (the chosen one in
    another colour and a thicker line)."""
    h, w = faces.image.shape[:2]
    scale = min(1.0, side / max(h, w))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = np.ascontiguousarray(
        cv2.resize(faces.image, size, interpolation=cv2.INTER_AREA), np.uint8
    )
    for i, (x0, y0, x1, y1) in enumerate(faces.boxes):
        colour = BOX_COLOURS[1] if i == chosen else BOX_COLOURS[0]
        thick = 3 if i == chosen else 2
        p0 = (round(x0 * scale), round(y0 * scale))
        p1 = (round(x1 * scale), round(y1 * scale))
        cv2.rectangle(small, p0, p1, colour, thick)
        org = (p0[0] + 3, max(p0[1] - 5, 14))
        cv2.putText(small, str(i), org, cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 4, cv2.LINE_AA)
        cv2.putText(small, str(i), org, cv2.FONT_HERSHEY_SIMPLEX, 0.6, colour, 2, cv2.LINE_AA)
    return small
