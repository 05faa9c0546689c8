"""Frame sources: camera, screen, video file, still image, synthetic; ``make_source`` picks
one by its kind (``SOURCES``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

from livecam.config.schema import SourceConfig
from livecam.config.specs import SourceKind, SourceSpec
from livecam.errors import SourceError, cut
from livecam.sources.base import Pacer, Source
from livecam.sources.camera import CameraSource, list_cameras
from livecam.sources.image import ImageSource
from livecam.sources.screen import ScreenSource
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.sources.video import VideoSource
from livecam.userfiles.images import IMAGE_EXTENSIONS, load_image_bgr, to_bgr8

__all__ = [
    "SOURCES",
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
    return SourceError(
        f"source {cut(repr(spec))}: {why}",
        f"use one of: {ACCEPTED_FORMS}",
        panel_hint="choose the input again in the Input tab",
    )


def _file_not_found(text: str) -> SourceError:
    """The error for a source that names a file (a folder part or a file suffix) that is
    not there: "file not found", not the whole source syntax."""
    return SourceError(
        f"file not found: {cut(text)}",
        "check the path (a typo, or the file was moved or deleted)",
        panel_hint="choose the video again in the Input tab (Video file: Choose…)",
    )


def parse_screen_spec(spec: str) -> tuple[int, tuple[int, int, int, int] | None]:
    """``screen[:N | :x,y,w,h]`` -> (monitor, region or None); SourceError for a bad one."""
    parsed = SourceSpec.parse(spec)
    if parsed.problem is not None:
        raise _bad(spec, parsed.problem)
    return parsed.monitor, parsed.region


def _camera(spec: SourceSpec, cfg: SourceConfig) -> Source:
    assert spec.device is not None
    return CameraSource(spec.device, cfg)


def _file(spec: SourceSpec, cfg: SourceConfig) -> Source:
    """A video or image file, or a FIFO another program writes a stream into."""
    path = Path(spec.text).expanduser()
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        if path.suffix or "/" in spec.text or os.sep in spec.text:
            raise _file_not_found(spec.text) from None
        raise _bad(spec.text, "not a known source and no such file") from None
    if stat.S_ISFIFO(mode):
        return CameraSource(str(path), cfg)  # a stream written by another program
    if not stat.S_ISREG(mode):
        raise _bad(spec.text, "this path is not a regular file")
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        return ImageSource(path, cfg)
    return VideoSource(path, cfg)


SourceFactory = Callable[[SourceSpec, SourceConfig], Source]

SOURCES: Mapping[SourceKind, SourceFactory] = MappingProxyType(
    {
        "camera": _camera,
        "screen": lambda spec, cfg: ScreenSource(spec.monitor, spec.region, cfg),
        "synthetic": lambda spec, cfg: SyntheticSource(cfg),
        "file": _file,
    }
)
"""Every source kind (``SourceSpec.kind``, how ``livecam.config.specs`` reads a spec) -> how
it is made: a new kind is its module, its spec form in ``SourceSpec.parse`` and one line
here."""


def make_source(cfg: SourceConfig) -> Source:
    """Build (but do not open) the source ``cfg.spec`` names; SourceError if it names none.

    ``N`` is camera N; ``/dev/...`` a device path; ``scheme://...`` a stream URL (see
    ``livecam.config.specs``); a FIFO is read as a stream; other paths are video or image
    files."""
    spec = SourceSpec.parse(cfg.spec)
    if spec.problem is not None:
        raise _bad(spec.text, spec.problem)
    return SOURCES[spec.kind](spec, cfg)
