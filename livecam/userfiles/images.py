"""Image files: load any common image file as a contract frame, and fit frames to a size.

Conversion rules (``to_bgr8``), chosen so every input gives a predictable BGR frame:

* grayscale (H, W) or (H, W, 1) -> three equal channels;
* BGRA -> **composited over black** (``bgr * alpha``): fully transparent pixels become
  black whatever colour they hide, half-transparent ones are darkened;
* 16-bit -> 8-bit by ``round(v / 257)`` (65535 -> 255); float -> ``[0, 1]`` scaled to
  255 when its maximum is <= 1, else clipped to ``[0, 255]``; bool -> 0 / 255;
* palette PNGs are expanded by the decoder (with a tRNS chunk they arrive as BGRA).

Frame-size policy (sinks and video encoders need even sizes):

* with a requested size, ``fit_frame`` scales to *cover* it and centre-crops the excess,
  so faces are never stretched and there are no black bars (cameras and screens);
  ``contain`` mode instead keeps the whole picture and fills the bars with a blurred copy
  (files: a video or photo of another aspect never loses its top and bottom);
* without one, ``make_even`` drops the last row and/or column of odd-sized frames, which
  keeps every other pixel exact (no resampling blur); a still larger than
  ``MAX_LONG_SIDE`` is first scaled down to it, once, with a warning (``limit_size``):
  every stage would otherwise work on all of its pixels in every frame.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
import numpy.typing as npt

from livecam.errors import FrameFormatError, SourceError, cut
from livecam.types import Frame
from livecam.userfiles.decoder_messages import decoder_messages, decoder_reason

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = frozenset(
    {
        ".jpg", ".jpeg", ".jpe", ".png", ".bmp", ".dib", ".tif", ".tiff", ".webp",
        ".jp2", ".pbm", ".pgm", ".ppm", ".pnm", ".pxm", ".sr", ".ras", ".exr", ".hdr",
        ".pic", ".avif",
    }
)  # fmt: skip
"""File extensions treated as still images (GIF is read as a video: it may be animated)."""

FitMode = Literal["cover", "contain"]

READABLE_FORMATS = "JPEG, PNG (8/16-bit, grayscale, RGBA, palette), BMP, TIFF, WebP, PNM"

MAX_LONG_SIDE = 1920
"""Longest side of a still used as frames when no size is asked for (``limit_size``)."""

MAX_DECODE_PIXELS = 64_000_000
"""The most pixels an image is decoded at (8000x8000; 192 MB as BGR). The size is read
from the header first: a larger JPEG is decoded reduced (1/2, 1/4 or 1/8, in the
decoder), any other kind is refused with its size (a 20000x20000 PNG would take seconds
and gigabytes only to be scaled down)."""

#: JPEG start-of-frame markers (they carry the size): C0-CF but DHT, JPG and DAC
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 <= len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length
            i += 2
            continue
        if marker in _JPEG_SOF:
            h, w = int.from_bytes(head[i + 5 : i + 7]), int.from_bytes(head[i + 7 : i + 9])
            return w, h
        i += 2 + int.from_bytes(head[i + 2 : i + 4])
    return None


def header_size(data: npt.NDArray[np.uint8]) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG, JPEG, BMP or WebP file, without decoding
    it; None for other kinds or a header that cannot be read."""
    head = data[: 1 << 22].tobytes()  # JPEG: the size follows the EXIF and ICC segments
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        return int.from_bytes(head[16:20]), int.from_bytes(head[20:24])
    if head.startswith(b"\xff\xd8"):
        return _jpeg_size(head)
    if head.startswith(b"BM") and len(head) >= 26:
        w = int.from_bytes(head[18:22], "little", signed=True)
        h = int.from_bytes(head[22:26], "little", signed=True)
        return abs(w), abs(h)
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP" and len(head) >= 30:
        chunk = head[12:16]
        if chunk == b"VP8X":
            return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(
                head[27:30], "little"
            ) + 1
        if chunk == b"VP8 ":
            w, h = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _decode_flags(data: npt.NDArray[np.uint8], what: str) -> int:
    """How to decode ``data``: whole (IMREAD_UNCHANGED), or a JPEG too large for
    MAX_DECODE_PIXELS reduced while decoding (with a warning); SourceError naming ``what``
    and its size for another kind of image too large to decode."""
    size = header_size(data)
    if size is None or size[0] * size[1] <= MAX_DECODE_PIXELS:
        return cv2.IMREAD_UNCHANGED
    w, h = size
    if data[:2].tobytes() == b"\xff\xd8":
        for factor, flag in (
            (2, cv2.IMREAD_REDUCED_COLOR_2),
            (4, cv2.IMREAD_REDUCED_COLOR_4),
            (8, cv2.IMREAD_REDUCED_COLOR_8),
        ):
            if w * h // (factor * factor) <= MAX_DECODE_PIXELS:
                log.warning("%s is %dx%d: decoding it at 1/%d of its size", what, w, h, factor)
                return int(flag)
    raise SourceError(
        f"{what} is {w}x{h} ({w * h / 1e6:.0f} megapixels), too large to decode "
        f"(at most {MAX_DECODE_PIXELS // 1_000_000} megapixels)",
        f"scale it down (e.g. to {MAX_LONG_SIDE} pixels wide) and save it again",
    )


def _to_uint8(array: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
    """Convert any numeric dtype to uint8 with the rules in the module docstring."""
    if array.dtype == np.uint8:
        return array  # type: ignore[return-value]
    if array.dtype == np.bool_:
        return array.astype(np.uint8) * np.uint8(255)
    if array.dtype == np.uint16:
        return ((array.astype(np.uint32) + 128) // 257).astype(np.uint8)
    if np.issubdtype(array.dtype, np.floating):
        f = np.nan_to_num(array.astype(np.float32), nan=0.0, posinf=255.0, neginf=0.0)
        if f.size and float(f.max()) <= 1.0:
            f = f * 255.0
        return np.clip(np.rint(f), 0, 255).astype(np.uint8)
    if np.issubdtype(array.dtype, np.integer):
        clipped: npt.NDArray[np.uint8] = np.clip(array, 0, 255).astype(np.uint8)
        return clipped
    raise FrameFormatError(
        f"cannot convert an image of dtype {array.dtype} to 8-bit",
        "pass an integer, float or bool image",
    )


def to_bgr8(array: npt.NDArray[np.generic]) -> Frame:
    """Return ``array`` as a contract frame: uint8 BGR (H, W, 3), C-contiguous.

    Accepts (H, W), (H, W, 1), (H, W, 3) BGR and (H, W, 4) BGRA of any numeric dtype;
    see the module docstring for the exact rules. The input is never modified.
    """
    if not isinstance(array, np.ndarray):
        raise FrameFormatError(f"expected a numpy array, got {type(array).__name__}")
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (3, 4)):
        raise FrameFormatError(
            f"cannot convert an image of shape {array.shape} to BGR",
            "pass (H, W) grayscale, (H, W, 3) BGR or (H, W, 4) BGRA",
        )
    if array.shape[0] < 2 or array.shape[1] < 2:
        raise FrameFormatError(f"image of shape {array.shape} is too small (min 2x2)")
    if array.ndim == 3 and array.shape[2] == 4:
        alpha = _to_uint8(array[:, :, 3]).astype(np.uint16)
        bgr = _to_uint8(array[:, :, :3]).astype(np.uint16)
        out: npt.NDArray[np.uint8] = ((bgr * alpha[:, :, None] + 127) // 255).astype(np.uint8)
        return np.ascontiguousarray(out)
    img = _to_uint8(array)
    if img.ndim == 2:
        gray3 = np.asarray(cv2.cvtColor(img, cv2.COLOR_GRAY2BGR), dtype=np.uint8)
        return gray3
    return np.ascontiguousarray(img)


def make_even(frame: Frame) -> Frame:
    """Drop the last row/column of an odd-sized frame; return a C-contiguous frame."""
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0 and frame.flags.c_contiguous:
        return frame
    return np.ascontiguousarray(frame[: h - h % 2, : w - w % 2])


def _resize(frame: Frame, size: tuple[int, int]) -> Frame:
    shrink = size[0] * size[1] < frame.shape[0] * frame.shape[1]
    interp = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    return np.asarray(cv2.resize(frame, size, interpolation=interp), dtype=np.uint8)


def fit_frame(frame: Frame, size: tuple[int, int] | None, mode: FitMode = "cover") -> Frame:
    """Return ``frame`` at ``size`` (width, height) without distorting it.

    ``cover``: scale to cover the size and centre-crop the excess (no bars; the default,
    what webcams do). ``contain``: scale to fit inside and fill the bars with a blurred,
    darkened copy of the frame (nothing is cut off: used for portraits). With ``size``
    None the frame is only made even (see ``make_even``).
    """
    if size is None:
        return make_even(frame)
    tw, th = size
    h, w = frame.shape[:2]
    if (w, h) == (tw, th):
        return frame if frame.flags.c_contiguous else np.ascontiguousarray(frame)
    if mode == "contain":
        scale = min(tw / w, th / h)
        sw, sh = min(tw, max(1, round(w * scale))), min(th, max(1, round(h * scale)))
        small = _resize(frame, (max(2, tw // 16), max(2, th // 16)))
        blurred = np.asarray(cv2.GaussianBlur(small, (0, 0), 2), dtype=np.uint8)
        canvas = _resize(blurred, (tw, th)) // 2
        x0, y0 = (tw - sw) // 2, (th - sh) // 2
        canvas[y0 : y0 + sh, x0 : x0 + sw] = _resize(frame, (sw, sh))
        return canvas
    scale = max(tw / w, th / h)
    sw, sh = max(tw, round(w * scale)), max(th, round(h * scale))
    scaled = _resize(frame, (sw, sh))
    x0, y0 = (sw - tw) // 2, (sh - th) // 2
    return np.ascontiguousarray(scaled[y0 : y0 + th, x0 : x0 + tw])


def limit_size(frame: Frame, what: str) -> Frame:
    """``frame`` scaled down (aspect kept, even sides) so its long side is at most
    MAX_LONG_SIDE, with a warning naming ``what``; smaller frames come back as they are."""
    h, w = frame.shape[:2]
    if max(h, w) <= MAX_LONG_SIDE:
        return frame
    scale = MAX_LONG_SIDE / max(h, w)
    size = (max(2, round(w * scale) // 2 * 2), max(2, round(h * scale) // 2 * 2))
    log.warning(
        "%s is %dx%d, larger than a stream needs: using it at %dx%d (choose the size with "
        "--size WxH)",
        what,
        w,
        h,
        *size,
    )
    return _resize(frame, size)


def _decode(data: npt.NDArray[np.uint8], what: str) -> npt.NDArray[np.generic] | None:
    """Decode with depth and alpha kept; apply the EXIF orientation of 8-bit colour images.
    A huge image is decoded reduced or refused (``_decode_flags``)."""
    flags = _decode_flags(data, what)
    try:
        with decoder_messages() as said:
            img: npt.NDArray[np.generic] | None = cv2.imdecode(data, flags)
    except cv2.error as e:  # OpenCV's own size checks (an absurd header) are assertions
        why = str(e).strip().splitlines()[-1] if str(e).strip() else "the decoder refused it"
        raise SourceError(
            f"cannot decode {what}: {cut(why)}", "re-save the picture as PNG or JPEG"
        ) from None
    if img is None:
        reason = decoder_reason(said)
        if reason:
            raise SourceError(
                f"cannot decode {what}: {cut(reason)} (damaged or cut short)",
                "re-save the picture as PNG or JPEG",
            )
        return None
    if said:
        log.warning("%s is damaged (%s): using what decodes", what, cut(decoder_reason(said)))
    if flags != cv2.IMREAD_UNCHANGED:
        return img
    plain_8bit = img.dtype == np.uint8 and (img.ndim == 2 or img.shape[2] in (1, 3))
    if plain_8bit and b"Exif" in data[:65536].tobytes():
        # IMREAD_UNCHANGED ignores EXIF orientation; IMREAD_COLOR applies it (phone photos).
        with decoder_messages():
            oriented = cv2.imdecode(data, cv2.IMREAD_COLOR)
        if oriented is not None:
            return oriented
    return img


def load_image_bgr(path: str | Path) -> Frame:
    """Read an image file of any common kind as a contract frame (uint8 BGR (H, W, 3)).

    Keeps the native size (odd sizes included); raises SourceError naming the file when it
    is missing or cannot be decoded.
    """
    p = Path(path)
    try:
        # np.fromfile + imdecode also works for non-ASCII paths on Windows (imread does not).
        data = np.fromfile(p, dtype=np.uint8)
    except FileNotFoundError:
        raise SourceError(f"image file {p} does not exist", "check the path") from None
    except OSError as e:
        raise SourceError(
            f"cannot read image file {p}: {e.strerror or e}", "check the path and permissions"
        ) from None
    img = _decode(data, f"image file {p}") if data.size else None
    if img is None:
        raise SourceError(
            f"cannot decode image file {p} (unknown format or corrupt)",
            f"use one of {READABLE_FORMATS}; re-save the picture as PNG or JPEG",
        )
    try:
        return to_bgr8(img)
    except FrameFormatError as e:
        raise SourceError(f"image file {p}: {e.message}", e.hint) from None
