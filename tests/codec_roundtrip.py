"""Test and bench support: what a video call or a viewer does to frames, for real: a PyAV
(FFmpeg) encode at a bit rate and its decode, a JPEG, a crop, a window screenshot."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import av
import cv2
import numpy as np

Frame = np.ndarray


def encode_decode(
    frames: Sequence[Frame],
    bit_rate: int,
    codec: str = "libx264",
    size: tuple[int, int] | None = None,
    fps: int = 30,
) -> list[Frame]:
    """``frames`` (BGR) encoded in memory with ``codec`` at ``bit_rate`` bit/s, at ``size``
    (width, height; downscaled with INTER_AREA first) or their own, then decoded back.
    libx264 runs as a real-time sender would (veryfast, zerolatency); libvpx (VP8) in its
    real-time mode."""
    height, width = frames[0].shape[:2]
    if size is not None:
        width, height = size
    options = {
        "libx264": {"preset": "veryfast", "tune": "zerolatency"},
        "libvpx": {"deadline": "realtime", "cpu-used": "8"},
    }.get(codec, {})
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4" if codec != "libvpx" else "webm") as out:
        stream: Any = out.add_stream(codec, rate=fps, options=options)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        stream.bit_rate = bit_rate
        for frame in frames:
            if frame.shape[:2] != (height, width):
                frame = cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="bgr24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    buffer.seek(0)
    src: Any = av.open(buffer)
    with src:
        return [f.to_ndarray(format="bgr24") for f in src.decode(video=0)]


def jpeg(frame: Frame, quality: int) -> Frame:
    """``frame`` saved as a JPEG at ``quality`` and read back."""
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return np.asarray(cv2.imdecode(data, cv2.IMREAD_COLOR))


def crop(frame: Frame, share: float = 0.1, where: tuple[float, float] = (0.7, 0.3)) -> Frame:
    """``frame`` with ``share`` of its width and of its height cut off, the cut split
    ``where`` (share on the top, share on the left) around the kept part."""
    height, width = frame.shape[:2]
    cut_y, cut_x = int(round(height * share)), int(round(width * share))
    y0, x0 = int(round(cut_y * where[0])), int(round(cut_x * where[1]))
    return np.ascontiguousarray(frame[y0 : y0 + height - cut_y, x0 : x0 + width - cut_x])


def screenshot(frame: Frame, window: tuple[int, int]) -> Frame:
    """A screenshot of a preview window of ``window`` (width, height) pixels showing
    ``frame`` as LiveCam's preview does: scaled (aspect kept) to fit, centred on black."""
    width, height = window
    fh, fw = frame.shape[:2]
    scale = min(width / fw, height / fh)
    sw, sh = int(round(fw * scale)), int(round(fh * scale))
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    shown = cv2.resize(frame, (sw, sh), interpolation=interpolation)
    shot = np.zeros((height, width, 3), np.uint8)
    y0, x0 = (height - sh) // 2, (width - sw) // 2
    shot[y0 : y0 + sh, x0 : x0 + sw] = shown
    return shot
