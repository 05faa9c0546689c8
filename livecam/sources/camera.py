"""Webcams through OpenCV's VideoCapture, with the right backend per OS.

A ``CameraSource`` also accepts a device path (``/dev/video2``), a stream URL
(``rtsp://``, ``http://``, ...), a FIFO, or a video file (tests drive the real
VideoCapture this way; a file is replayed from its start at its end, as an endless
stream, like a camera). Those are opened on a helper thread with a deadline, and URLs
with OpenCV's open and read timeouts, so a hung network camera never holds LiveCam.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2

from livecam.config.schema import SourceConfig
from livecam.config.specs import is_device_path, is_stream_url
from livecam.errors import SourceError
from livecam.sources.cv_capture import CvCaptureSource, RawFrame
from livecam.types import Frame

log = logging.getLogger(__name__)

_BACKENDS = {
    "v4l2": "CAP_V4L2",
    "dshow": "CAP_DSHOW",
    "msmf": "CAP_MSMF",
    "avfoundation": "CAP_AVFOUNDATION",
    "gstreamer": "CAP_GSTREAMER",
    "ffmpeg": "CAP_FFMPEG",
}
_OPEN_ATTEMPTS = 5  # reads tried right after opening (some drivers drop the first frames)
_CLOSE_WAIT_S = 2.0
STREAM_TIMEOUT_MS = 5000  # OpenCV's open and read timeouts for stream URLs


def camera_api(backend: str = "auto", platform: str = sys.platform) -> int:
    """The cv2 ``CAP_*`` constant for a ``source.camera_backend`` name on ``platform``.

    ``auto`` picks DirectShow on Windows, AVFoundation on macOS and V4L2 on Linux
    (``CAP_ANY`` elsewhere).
    """
    if backend == "auto":
        if platform.startswith("win"):
            backend = "dshow"
        elif platform == "darwin":
            backend = "avfoundation"
        elif platform.startswith("linux"):
            backend = "v4l2"
        else:
            return int(cv2.CAP_ANY)
    if backend not in _BACKENDS:
        raise SourceError(
            f"unknown camera backend {backend!r}",
            f"use one of: auto, {', '.join(_BACKENDS)}",
        )
    return int(getattr(cv2, _BACKENDS[backend]))


OTHER_CAMERA_CLI = "try another camera with --source camera:1 (`livecam doctor` lists cameras)"
OTHER_CAMERA_PANEL = (
    "choose another camera in the Input tab (Refresh lists them), or another input there "
    "(a video file, the screen, the test pattern with a moving face)"
)


def camera_hint(
    device: int | str, platform: str = sys.platform, others: str = OTHER_CAMERA_CLI
) -> str:
    """What to try when camera ``device`` cannot be opened, for ``platform``; ``others``:
    how to pick another camera (the CLI's option, or ``OTHER_CAMERA_PANEL``)."""
    common = "close other apps that use the camera (Zoom, Teams, OBS, browser tabs)"
    if platform.startswith("win"):
        os_part = (
            "allow camera access in Settings > Privacy & security > Camera "
            "('Let desktop apps access your camera')"
        )
    elif platform == "darwin":
        os_part = (
            "allow camera access for your terminal or Python in "
            "System Settings > Privacy & Security > Camera"
        )
    else:
        os_part = (
            "check the device exists with `ls /dev/video*` and that you may read it "
            "(add yourself to the 'video' group: sudo usermod -aG video $USER, then log in again)"
        )
    if isinstance(device, str):
        return f"check the path or URL {device!r} exists and plays; {common}"
    return f"{common}; {os_part}; {others}"


@contextlib.contextmanager
def quiet_opencv() -> Iterator[None]:
    """Silence OpenCV's own warnings (failed probes print a lot) for the block."""
    logging_mod = getattr(getattr(cv2, "utils", None), "logging", None)
    if logging_mod is None:
        yield
        return
    previous = logging_mod.getLogLevel()
    logging_mod.setLogLevel(logging_mod.LOG_LEVEL_SILENT)
    try:
        yield
    finally:
        logging_mod.setLogLevel(previous)


def _device_label(device: int | str) -> str:
    return f"camera {device}" if isinstance(device, int) else f"camera stream {device!r}"


class CameraSource(CvCaptureSource):
    """A camera (device index) or a stream/file (path or URL) read with cv2.VideoCapture.

    ``read`` waits for the device's next frame (``self_paced``). The requested
    ``cfg.size``/``cfg.fps`` and MJPG (``cfg.mjpg``) are asked of the device; frames the
    device delivers at another size are fitted to ``cfg.size`` (scale to cover, centre
    crop), or made even when no size was asked for.
    """

    name = "camera"
    self_paced = True

    def __init__(self, device: int | str | Path = 0, cfg: SourceConfig | None = None) -> None:
        super().__init__(cfg or SourceConfig())
        self.device: int | str = device if isinstance(device, int) else str(device)
        self._close_requested = False
        self._warned_size = False

    @property
    def label(self) -> str:
        return _device_label(self.device)

    @property
    def is_file(self) -> bool:
        return isinstance(self.device, str) and Path(self.device).is_file()

    @property
    def opens_may_block(self) -> bool:  # type: ignore[override]
        """Paths, FIFOs and URLs may block on open; device indices do not."""
        return isinstance(self.device, str)

    @property
    def is_device(self) -> bool:
        """A camera (an index or a device path), not a stream or a file."""
        return isinstance(self.device, int) or is_device_path(self.device)

    def _api(self) -> int:
        if not self.is_device and self.cfg.camera_backend == "auto":
            return int(cv2.CAP_FFMPEG)  # a file, FIFO or URL (one backend: one open of a FIFO)
        return camera_api(self.cfg.camera_backend)

    def _capture(self) -> cv2.VideoCapture:
        if isinstance(self.device, str) and is_stream_url(self.device):
            timeouts = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, STREAM_TIMEOUT_MS]
            timeouts += [cv2.CAP_PROP_READ_TIMEOUT_MSEC, STREAM_TIMEOUT_MS]
            return cv2.VideoCapture(self.device, self._api(), timeouts)
        return cv2.VideoCapture(self.device, self._api())

    def _configure(self, cap: cv2.VideoCapture) -> None:
        """Ask for MJPG, size and fps (fourcc first: some V4L2 drivers need that order)."""
        if self.cfg.mjpg:
            cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter.fourcc(*"MJPG"))
        if self.cfg.size is not None:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.cfg.size[0])
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.cfg.size[1])
        cap.set(cv2.CAP_PROP_FPS, self.cfg.fps)
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # newest frame, not a queue of stale ones

    def _start(self) -> tuple[cv2.VideoCapture, RawFrame]:
        with quiet_opencv():
            cap = self._capture()
            if not cap.isOpened():
                cap.release()
                raise SourceError(
                    f"cannot open {self.label}",
                    camera_hint(self.device),
                    panel_hint=camera_hint(self.device, others=OTHER_CAMERA_PANEL),
                )
            if self.is_device:
                self._configure(cap)
            for _ in range(_OPEN_ATTEMPTS):
                ok, raw = cap.read()
                if ok and raw is not None:
                    return cap, raw
        cap.release()
        raise SourceError(
            f"{self.label} opened but delivers no frames (busy or not a video device)",
            camera_hint(self.device),
            panel_hint=camera_hint(self.device, others=OTHER_CAMERA_PANEL),
        )

    def _convert(self, raw: RawFrame) -> Frame:
        size = self.cfg.size
        if size is not None and (raw.shape[1], raw.shape[0]) != size and not self._warned_size:
            self._warned_size = True
            log.warning(
                "%s delivers %dx%d instead of the requested %dx%d; resizing",
                self.label,
                raw.shape[1],
                raw.shape[0],
                *size,
            )
        return super()._convert(raw)

    def open(self) -> None:
        self._close_requested = False
        super().open()
        backend = self._cap.getBackendName() if self._cap is not None else "?"
        log.info("%s open via %s at %.2f fps", self.label, backend, self.fps)

    def _after_read(self, ok: bool, raw: RawFrame | None) -> RawFrame:
        if self._close_requested:  # close() gave up waiting for us: release here
            self._release()
            raise SourceError(f"{self.label} was closed")
        if ok and raw is not None:
            return raw
        if self.is_file:
            return self._replay()  # end of a file: replay it like an endless camera stream
        raise SourceError(
            f"{self.label} stopped delivering frames (unplugged, or taken by another app?)",
            "replug the camera or close the other app; LiveCam reopens it "
            f"every {self.cfg.reopen_interval_s:g} s",
        )

    def close(self) -> None:
        """Release the device; safe from another thread while ``read`` waits on it."""
        if self._lock.acquire(timeout=_CLOSE_WAIT_S):
            try:
                self._release()
                self._pending = None
            finally:
                self._lock.release()
        else:  # a read is stuck in the driver; it releases the device when it returns
            self._close_requested = True
            log.warning("%s: read still pending, release deferred", _device_label(self.device))


def camera_name(index: int) -> str | None:
    """The device's name where the OS gives it without opening it (Linux:
    ``/sys/class/video4linux/videoN/name``); None elsewhere or when unreadable."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        text = Path(f"/sys/class/video4linux/video{index}/name").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text.strip() or None


def list_cameras(max_index: int = 5, backend: str = "auto") -> list[dict[str, object]]:
    """Probe device indices 0..max_index-1 quietly; describe each camera that delivers a frame.

    Each entry: ``index``, ``backend`` (OpenCV's name), ``width``, ``height``, ``fps``,
    and ``name`` where the OS gives one (Linux: the V4L2 card name), else absent.
    On Linux indices without a ``/dev/videoN`` node are skipped without opening anything.
    """
    found: list[dict[str, object]] = []
    api = camera_api(backend)
    with quiet_opencv():
        for index in range(max_index):
            if sys.platform.startswith("linux") and not Path(f"/dev/video{index}").exists():
                continue
            cap = cv2.VideoCapture(index, api)
            try:
                if not cap.isOpened():
                    continue
                ok, raw = cap.read()
                if not ok or raw is None:
                    continue
                found.append(
                    {
                        "index": index,
                        "backend": cap.getBackendName(),
                        "width": int(raw.shape[1]),
                        "height": int(raw.shape[0]),
                        "fps": float(cap.get(cv2.CAP_PROP_FPS) or 0.0),
                    }
                )
                name = camera_name(index)
                if name:
                    found[-1]["name"] = name
            finally:
                cap.release()
    return found
