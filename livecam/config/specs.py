"""Source and sink specs (``--source``, ``--sink``, ``source.spec``, ``output.sinks``),
parsed once: the config (which values are files), the option checks (which options
apply), the source and sink factories all read these records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

SourceKind = Literal["camera", "screen", "synthetic", "file"]
SinkKind = Literal["virtualcam", "window", "auto", "null", "file"]
SINK_NAMES: tuple[SinkKind, ...] = ("virtualcam", "window", "auto", "null")


def is_stream_url(spec: str) -> bool:
    """``rtsp://...``, ``http://...`` and every other ``scheme://`` address."""
    scheme, sep, _ = spec.partition("://")
    return bool(sep) and scheme.isalpha()


def is_device_path(spec: str) -> bool:
    """A device node such as ``/dev/video2`` (a V4L2 camera on Linux)."""
    return spec.startswith("/dev/")


@dataclass(frozen=True)
class SourceSpec:
    """What a source spec names.

    ``kind``: ``camera`` (a device index, a device path, a stream URL, ``camera:...``),
    ``screen``, ``synthetic`` or ``file`` (a video or image path; a FIFO is read as a
    stream). ``device``: the camera's index, path or URL. ``monitor`` and ``region``: the
    screen's (monitor 1-based, 0 = all). ``problem``: why the spec names no valid source
    (``screen:a,b``), None when it does.
    """

    text: str
    kind: SourceKind
    device: int | str | None = None
    monitor: int = 1
    region: tuple[int, int, int, int] | None = None
    problem: str | None = None

    @classmethod
    def parse(cls, spec: str) -> SourceSpec:
        text = spec.strip()
        if text.isdigit():
            return cls(text, "camera", device=int(text))
        if is_stream_url(text) or is_device_path(text):
            return cls(text, "camera", device=text)
        kind, _, arg = text.partition(":")
        if kind == "camera":
            return _camera(text, arg.strip())
        if kind == "screen":
            return _screen(text, arg.strip())
        if text == "synthetic":
            return cls(text, "synthetic")
        return cls(text, "file")

    @property
    def file(self) -> str | None:
        """The file the spec names (a video or an image), None for any other source."""
        return self.text if self.kind == "file" else None

    @property
    def is_webcam(self) -> bool:
        """A camera the camera options (backend, MJPG) are for: ``camera[:...]``, ``N``
        or ``/dev/videoN`` (a bare stream URL is not)."""
        prefix = self.text.partition(":")[0]
        return prefix == "camera" or self.text.isdigit() or self.text.startswith("/dev/video")


def _camera(text: str, arg: str) -> SourceSpec:
    if not arg:
        return SourceSpec(text, "camera", device=0)
    try:
        index = int(arg)
    except ValueError:
        return SourceSpec(text, "camera", device=arg)  # a device path or stream URL
    if index < 0:
        return SourceSpec(text, "camera", device=index, problem="camera indices start at 0")
    return SourceSpec(text, "camera", device=index)


def _screen(text: str, arg: str) -> SourceSpec:
    """``screen[:N | :x,y,w,h]``."""
    if not arg:
        return SourceSpec(text, "screen")
    try:
        numbers = [int(p.strip()) for p in arg.split(",")]
    except ValueError:
        return SourceSpec(
            text, "screen", problem="screen takes a monitor number or x,y,w,h integers"
        )
    if len(numbers) == 1:
        if numbers[0] < 0:
            return SourceSpec(
                text, "screen", problem="monitor numbers start at 1 (0 = all monitors)"
            )
        return SourceSpec(text, "screen", monitor=numbers[0])
    if len(numbers) == 4:
        x, y, w, h = numbers
        if w <= 0 or h <= 0:
            return SourceSpec(text, "screen", problem="region width and height must be positive")
        return SourceSpec(text, "screen", region=(x, y, w, h))
    return SourceSpec(text, "screen", problem="screen takes a monitor number or 4 integers x,y,w,h")


@dataclass(frozen=True)
class SinkSpec:
    """What a sink spec names: one of ``SINK_NAMES`` (any case) or a ``file`` (a recording
    or an image, by its ``suffix``, lower case)."""

    text: str
    kind: SinkKind
    suffix: str = ""

    @classmethod
    def parse(cls, spec: str) -> SinkSpec:
        text = spec.strip()
        lowered = text.lower()
        for name in SINK_NAMES:
            if lowered == name:
                return cls(text, name)
        return cls(text, "file", PurePath(text).suffix.lower() if text else "")

    @property
    def file(self) -> str | None:
        return self.text if self.kind == "file" else None

    @property
    def is_virtualcam(self) -> bool:
        """The virtual camera is (or may be) used: ``virtualcam`` or ``auto``."""
        return self.kind in ("virtualcam", "auto")


def source_file(spec: str) -> str | None:
    """The file a source spec names, or None for a camera, a screen, a device, a stream
    URL or the synthetic source."""
    return SourceSpec.parse(spec).file


def sink_file(spec: str) -> str | None:
    """The file a sink spec names (a recording or an image), or None for a named sink."""
    return spec if SinkSpec.parse(spec).kind == "file" else None
