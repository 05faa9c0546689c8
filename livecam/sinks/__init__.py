"""Output sinks and the factory that builds them from ``output.sinks`` specs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType

from livecam.config.schema import OutputConfig
from livecam.config.specs import SinkSpec
from livecam.errors import SinkError, VirtualCameraUnavailable, cut
from livecam.sinks.base import Sink
from livecam.sinks.null import NullSink
from livecam.sinks.preview import PreviewWindowSink
from livecam.sinks.recording.image import IMAGE_SUFFIXES, ImageWriterSink
from livecam.sinks.recording.provenance import Provenance
from livecam.sinks.recording.recovery import recover_noted
from livecam.sinks.recording.video import VIDEO_CODECS, RecorderSink
from livecam.sinks.virtualcam import VirtualCamSink
from livecam.types import Frame

__all__ = [
    "SINKS",
    "AutoSink",
    "ImageWriterSink",
    "NullSink",
    "PreviewWindowSink",
    "RecorderSink",
    "Sink",
    "VirtualCamSink",
    "make_sink",
    "make_sinks",
]

log = logging.getLogger(__name__)

ACCEPTED = (
    "'virtualcam', 'window', 'auto', 'null', a video file "
    f"({', '.join(VIDEO_CODECS)}) or an image file ({', '.join(IMAGE_SUFFIXES)})"
)


class AutoSink(Sink):
    """The virtual camera if one opens; else a preview window when a display exists.

    Falling back to the window is logged as a loud warning that carries the virtual-camera
    fix; with neither, ``open`` raises VirtualCameraUnavailable with both fixes (frames
    are never thrown away unseen). ``chosen`` is the sink in use after ``open``;
    ``wants_repeats`` follows it.
    """

    name = "auto"

    def __init__(self, backend: str | None = None, device: str | None = None) -> None:
        self._backend = backend
        self._device = device
        self.chosen: Sink | None = None

    @property
    def wants_repeats(self) -> bool:  # type: ignore[override]
        return True if self.chosen is None else self.chosen.wants_repeats

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        cam = VirtualCamSink(self._backend, self._device)
        try:
            cam.open(width, height, fps)
        except VirtualCameraUnavailable as e:
            window = PreviewWindowSink()
            try:
                window.open(width, height, fps)
            except SinkError as w:
                raise _nowhere(e, w) from None
            log.warning(
                "NO VIRTUAL CAMERA - apps like OBS, Zoom or Discord will not see LiveCam; "
                "showing the output in a preview window instead.\n%s\n  fix: %s",
                e.message,
                e.hint,
            )
            self.chosen = window
            return
        self.chosen = cam

    def check(self) -> None:
        """VirtualCameraUnavailable, with both causes and fixes, when neither a virtual
        camera opens nor a preview window can be shown (start-up lists it beside the
        other parts' causes, e.g. no camera)."""
        try:
            VirtualCamSink(self._backend, self._device).check()
        except VirtualCameraUnavailable as e:
            try:
                PreviewWindowSink().check()
            except SinkError as w:
                raise _nowhere(e, w) from None

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        if self.chosen is None:
            raise SinkError("auto sink: send() before open()")
        self.chosen.send(frame, t_capture_ns, swapped)

    def close(self) -> None:
        chosen, self.chosen = self.chosen, None
        if chosen is not None:
            chosen.close()

    @property
    def closed(self) -> bool:  # type: ignore[override]
        """True when the fallback preview window was closed by the user."""
        return self.chosen is not None and self.chosen.closed


def _nowhere(camera: VirtualCameraUnavailable, window: SinkError) -> VirtualCameraUnavailable:
    """The auto sink's error when neither output works: both causes, both fixes."""
    return VirtualCameraUnavailable(
        "sink 'auto' has nowhere to show the stream: no virtual camera "
        f"({camera.message}) and no preview window ({window.message})",
        f"install a virtual camera ({camera.hint}); or run LiveCam where a display "
        "exists for the preview window; or choose --sink out.mp4 to record",
    )


SinkFactory = Callable[[SinkSpec, OutputConfig, Provenance | None], Sink]


def _recorder(spec: SinkSpec, cfg: OutputConfig, provenance: Provenance | None) -> Sink:
    return RecorderSink(spec.text, overwrite=cfg.overwrite, provenance=provenance)


def _image_writer(spec: SinkSpec, cfg: OutputConfig, provenance: Provenance | None) -> Sink:
    return ImageWriterSink(spec.text, overwrite=cfg.overwrite, provenance=provenance)


SINKS: Mapping[str, SinkFactory] = MappingProxyType(
    {
        "virtualcam": lambda spec, cfg, provenance: VirtualCamSink(
            backend=cfg.virtualcam_backend, device=cfg.virtualcam_device
        ),
        "auto": lambda spec, cfg, provenance: AutoSink(
            backend=cfg.virtualcam_backend, device=cfg.virtualcam_device
        ),
        "window": lambda spec, cfg, provenance: PreviewWindowSink(),
        "null": lambda spec, cfg, provenance: NullSink(),
        **dict.fromkeys(VIDEO_CODECS, _recorder),
        **dict.fromkeys(IMAGE_SUFFIXES, _image_writer),
    }
)
"""Every sink kind -> how it is made from its spec, the output config and the session's
provenance (which signs files): a named sink by its name (``config.specs.SINK_NAMES``,
which the config checks a spec against), a file sink by its suffix. A new kind is its
module and one line here (a named one also adds its name to ``SINK_NAMES``)."""


def make_sink(spec: str, cfg: OutputConfig, provenance: Provenance | None = None) -> Sink:
    """Build one sink from a spec; raise SinkError listing the accepted forms. Files are
    signed with ``provenance`` (None: not signed)."""
    parsed = SinkSpec.parse(spec)
    factory = SINKS.get(parsed.suffix if parsed.kind == "file" else parsed.kind)
    if factory is None or not parsed.text:
        raise SinkError(f"unknown output sink {cut(repr(spec))}", f"use {ACCEPTED}")
    return factory(parsed, cfg, provenance)


def make_sinks(
    specs: tuple[str, ...], cfg: OutputConfig, provenance: Provenance | None = None
) -> list[Sink]:
    """Build every sink named in ``specs`` (several are allowed), in order; the files are
    signed with ``provenance``. First, whatever a killed recording left, wherever it was,
    is recovered (``recover_noted``; each said in one line)."""
    if not specs:
        raise SinkError("no output sink given", f"use {ACCEPTED}")
    recover_noted()
    return [make_sink(s, cfg, provenance) for s in specs]
