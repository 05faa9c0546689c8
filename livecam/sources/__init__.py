"""Frame sources: camera, screen, video file, still image, synthetic; ``make_source`` picks one."""

from __future__ import annotations

import stat
from pathlib import Path

from livecam.config.schema import SourceConfig
from livecam.errors import SourceError
from livecam.sources.base import Pacer, Source
from livecam.sources.camera import CameraSource, is_device_path, is_stream_url, list_cameras
from livecam.sources.image import IMAGE_EXTENSIONS, ImageSource, load_image_bgr, to_bgr8
from livecam.sources.screen import ScreenSource
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.sources.video import VideoSource

__all__ = [
    "CameraSource",
    "ImageSource",
    "Pacer",
    "ScreenSource",
    "Source",
    "SyntheticSource",
    "VideoSource",
    "list_cameras",
    "load_image_bgr",
    "make_source",
    "parse_screen_spec",
    "to_bgr8",
]

ACCEPTED_FORMS = (
    "camera, camera:N or N (device index), /dev/videoN, a stream URL (rtsp://..., "
    "http://...), screen, screen:N (monitor, 1-based; 0 = all), screen:x,y,w,h (region), "
    "synthetic, or the path of an existing video or image file"
)


def _bad(spec: str, why: str) -> SourceError:
    return SourceError(f"source {spec!r}: {why}", f"use one of: {ACCEPTED_FORMS}")


def parse_screen_spec(spec: str) -> tuple[int, tuple[int, int, int, int] | None]:
    """``screen[:N | :x,y,w,h]`` -> (monitor, region or None)."""
    arg = spec.partition(":")[2].strip()
    if not arg:
        return 1, None
    parts = [p.strip() for p in arg.split(",")]
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        raise _bad(spec, "screen takes a monitor number or x,y,w,h integers") from None
    if len(numbers) == 1:
        if numbers[0] < 0:
            raise _bad(spec, "monitor numbers start at 1 (0 = all monitors)")
        return numbers[0], None
    if len(numbers) == 4:
        x, y, w, h = numbers
        if w <= 0 or h <= 0:
            raise _bad(spec, "region width and height must be positive")
        return 1, (x, y, w, h)
    raise _bad(spec, "screen takes a monitor number or 4 integers x,y,w,h")


def make_source(cfg: SourceConfig) -> Source:
    """Build (but do not open) the source ``cfg.spec`` names; SourceError if it names none.

    ``N`` is camera N; ``/dev/...`` a device path; ``scheme://...`` a stream URL; a FIFO
    is read as a stream; other paths are video or image files."""
    spec = cfg.spec.strip()
    if spec.isdigit():
        return CameraSource(int(spec), cfg)
    if is_stream_url(spec) or is_device_path(spec):
        return CameraSource(spec, cfg)
    kind, _, arg = spec.partition(":")
    if kind == "camera":
        if not arg.strip():
            return CameraSource(0, cfg)
        try:
            index = int(arg)
        except ValueError:
            return CameraSource(arg.strip(), cfg)  # a device path or stream URL
        if index < 0:
            raise _bad(spec, "camera indices start at 0")
        return CameraSource(index, cfg)
    if kind == "screen":
        monitor, region = parse_screen_spec(spec)
        return ScreenSource(monitor, region, cfg)
    if spec == "synthetic":
        return SyntheticSource(cfg)
    path = Path(spec).expanduser()
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        raise _bad(spec, "not a known source and no such file") from None
    if stat.S_ISFIFO(mode):
        return CameraSource(str(path), cfg)  # a stream written by another program
    if not stat.S_ISREG(mode):
        raise _bad(spec, "this path is not a regular file")
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        return ImageSource(path, cfg)
    return VideoSource(path, cfg)
