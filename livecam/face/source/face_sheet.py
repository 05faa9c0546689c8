"""A numbered sheet of the faces found in a photo, so a user can pick one with
``--face-index N``: the photo with each face boxed and numbered, and below it a grid of
the faces' thumbnails under the same numbers. Written into LiveCam's cache (``sheets``
under the face cache folder, else the temporary folder) as ``NAME-SHA8.faces.jpg``: never
into the user's photo folder.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from livecam.types import Face, Frame
from livecam.userfiles import private_temp_folder, write_atomically

log = logging.getLogger(__name__)

SHEET_WIDTH = 1200  # px: the photo is shown at this width
THUMB = 120  # px: side of a face thumbnail
_GREEN = (60, 220, 60)
_FONT = cv2.FONT_HERSHEY_SIMPLEX


def _label(canvas: Frame, text: str, x: int, y: int, scale: float) -> None:
    """White text on a black box with its top-left corner at (x, y)."""
    (tw, th), base = cv2.getTextSize(text, _FONT, scale, 2)
    cv2.rectangle(canvas, (x, y), (x + tw + 6, y + th + base + 6), (0, 0, 0), -1)
    cv2.putText(canvas, text, (x + 3, y + th + 3), _FONT, scale, (255, 255, 255), 2, cv2.LINE_AA)


def face_sheet(image: Frame, faces: Sequence[Face]) -> Frame:
    """The sheet: ``image`` at ``SHEET_WIDTH`` wide with numbered boxes, then the faces'
    thumbnails (each square around its box, numbered), ``SHEET_WIDTH // THUMB`` a row."""
    h, w = image.shape[:2]
    s = SHEET_WIDTH / w
    size = (SHEET_WIDTH, max(1, round(h * s)))
    photo = np.asarray(cv2.resize(image, size, interpolation=cv2.INTER_AREA), np.uint8)
    for i, face in enumerate(faces):
        x1, y1, x2, y2 = (int(round(v * s)) for v in face.bbox)
        cv2.rectangle(photo, (x1, y1), (x2, y2), _GREEN, 2)
        _label(photo, str(i), max(x1, 0), max(y1 - 24, 0), 0.6)
    per_row = SHEET_WIDTH // THUMB
    rows = -(-len(faces) // per_row)
    grid = np.full((rows * THUMB, SHEET_WIDTH, 3), 32, np.uint8)
    for i, face in enumerate(faces):
        thumb = cv2.resize(_square(image, face), (THUMB, THUMB), interpolation=cv2.INTER_AREA)
        r, c = divmod(i, per_row)
        grid[r * THUMB : (r + 1) * THUMB, c * THUMB : (c + 1) * THUMB] = thumb
        _label(grid, str(i), c * THUMB + 2, r * THUMB + 2, 0.7)
    return np.ascontiguousarray(np.vstack([photo, grid]))


def _square(image: Frame, face: Face) -> Frame:
    """A square around the face's box (1.4x its larger side), grey where it leaves the
    image."""
    h, w = image.shape[:2]
    cx, cy = face.center
    half = 0.7 * max(face.width, face.height, 2.0)
    x0, y0, side = round(cx - half), round(cy - half), round(2 * half)
    crop = image[max(y0, 0) : max(min(y0 + side, h), 0), max(x0, 0) : max(min(x0 + side, w), 0)]
    if crop.size == 0:
        return np.full((side, side, 3), 32, np.uint8)
    pads = (max(-y0, 0), max(y0 + side - h, 0), max(-x0, 0), max(x0 + side - w, 0))
    out = cv2.copyMakeBorder(crop, *pads, cv2.BORDER_CONSTANT, value=(32, 32, 32))
    return np.asarray(out, np.uint8)


def sheet_path(folder: Path, photo: Path, sha256: str) -> Path:
    """Where the sheet of ``photo`` (content ``sha256``) goes in ``folder``:
    ``NAME-SHA8.faces.jpg`` (the hash keeps two photos of one name apart)."""
    return folder / f"{photo.stem}-{sha256[:8]}.faces.jpg"


def write_face_sheet(
    folder: Path | None, photo: Path, sha256: str, image: Frame, faces: Sequence[Face]
) -> Path | None:
    """Write the sheet of ``photo``'s faces into ``folder`` (None, or not writable: the
    user's own ``livecam-face-sheets-UID`` in the temporary folder) and return where;
    None when it could not be written. The folders are LiveCam's own: a sheet there is replaced."""
    ok, encoded = cv2.imencode(".jpg", face_sheet(image, faces), [cv2.IMWRITE_JPEG_QUALITY, 90])
    if not ok:
        return None
    data = encoded.tobytes()
    for where in dict.fromkeys((folder, None)):
        try:
            if where is None:
                where = private_temp_folder("livecam-face-sheets")
            target = sheet_path(where, photo, sha256)
            if target.is_file() and target.read_bytes() == data:
                return target
            where.mkdir(parents=True, exist_ok=True)
            return write_atomically(target, data, overwrite=True)
        except OSError as e:
            log.debug("cannot write the face sheet into %s: %s", where, e)
    return None
