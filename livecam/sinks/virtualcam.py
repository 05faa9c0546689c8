"""Virtual webcam output through pyvirtualcam (v4l2loopback, OBS Virtual Camera, Unity Capture)."""

from __future__ import annotations

import logging
import platform

import pyvirtualcam
from pyvirtualcam.camera import BACKENDS

from livecam.errors import SinkError, VirtualCameraUnavailable
from livecam.sinks.base import Sink
from livecam.types import Frame

log = logging.getLogger(__name__)

LINUX_FIX = (
    "install and load v4l2loopback: `sudo apt install v4l2loopback-dkms` then "
    "`sudo modprobe v4l2loopback devices=1 video_nr=10 exact_nr=1 card_label=LiveCam "
    "exclusive_caps=1` (the camera appears as /dev/video10 'LiveCam')"
)
WINDOWS_FIX = (
    "install OBS Studio (https://obsproject.com), start its Virtual Camera once "
    "(Controls > Start Virtual Camera), then stop it and close OBS"
)
MACOS_FIX = (
    "install OBS Studio (https://obsproject.com), start its Virtual Camera once and allow "
    "the system extension (System Settings > Privacy & Security), then close OBS"
)


def virtualcam_fix(system: str | None = None) -> str:
    """The one-line fix that makes a virtual camera available on ``system`` (default: this OS)."""
    system = system or platform.system()
    if system == "Linux":
        return LINUX_FIX
    if system == "Darwin":
        return MACOS_FIX
    if system == "Windows":
        return WINDOWS_FIX
    return f"pyvirtualcam has no virtual-camera backend for {system}; use a window or file sink"


def open_camera(
    width: int,
    height: int,
    fps: float,
    backend: str | None = None,
    device: str | None = None,
) -> pyvirtualcam.Camera:
    """Open a BGR pyvirtualcam Camera or raise VirtualCameraUnavailable listing every failure."""
    where = f"{width}x{height} @ {fps:g} fps"
    if backend is not None and backend not in BACKENDS:
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise VirtualCameraUnavailable(
            f"virtual camera backend {backend!r} is not registered in pyvirtualcam "
            f"(registered: {known})",
            "set output.virtualcam_backend to one of the registered backends, or leave it "
            f"unset to try them all; {virtualcam_fix()}",
        )
    if not BACKENDS:
        raise VirtualCameraUnavailable(
            f"no virtual camera could be opened ({where}): no backend registered in "
            f"pyvirtualcam on {platform.system()}",
            virtualcam_fix(),
        )
    try:
        return pyvirtualcam.Camera(
            width, height, fps, fmt=pyvirtualcam.PixelFormat.BGR, backend=backend, device=device
        )
    except Exception as e:  # pyvirtualcam raises RuntimeError with one line per backend
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        if not lines:
            lines = [f"{type(e).__name__} without a message (no backend registered?)"]
        target = f" device {device!r}" if device else ""
        raise VirtualCameraUnavailable(
            f"no virtual camera{target} could be opened ({where}); every backend failed:\n"
            + "\n".join(f"  - {ln}" for ln in lines),
            virtualcam_fix(),
        ) from e


class VirtualCamSink(Sink):
    """Sends frames to a virtual webcam. The output thread paces; ``send`` never sleeps."""

    name = "virtualcam"
    wants_repeats = True

    def __init__(self, backend: str | None = None, device: str | None = None) -> None:
        self._want_backend = backend
        self._want_device = device
        self._cam: pyvirtualcam.Camera | None = None

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        self._cam = open_camera(width, height, fps, self._want_backend, self._want_device)
        log.info(
            "virtual camera open: %s (backend %s, %dx%d @ %g fps)",
            self._cam.device,
            self._cam.backend,
            width,
            height,
            fps,
        )

    def check(self) -> None:
        """VirtualCameraUnavailable when no virtual camera opens (a 64x48 one, briefly)."""
        if self._cam is None:
            probe_virtualcam(self._want_backend, self._want_device)

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        if self._cam is None:
            raise SinkError("virtual camera sink: send() before open()")
        try:
            self._cam.send(frame)
        except (ValueError, TypeError) as e:
            raise SinkError(
                f"virtual camera {self._cam.device} rejected a frame: {e}",
                f"send uint8 BGR frames of {self._cam.width}x{self._cam.height}",
            ) from e
        except Exception as e:
            raise SinkError(f"virtual camera {self._cam.device} failed: {e}") from e

    def close(self) -> None:
        cam, self._cam = self._cam, None
        if cam is not None:
            cam.close()

    @property
    def device(self) -> str | None:
        """The device in use (e.g. ``/dev/video10``), or None before open."""
        return self._cam.device if self._cam is not None else None

    @property
    def backend(self) -> str | None:
        """The pyvirtualcam backend in use (e.g. ``v4l2loopback``), or None before open."""
        return self._cam.backend if self._cam is not None else None


def probe_virtualcam(backend: str | None = None, device: str | None = None) -> str:
    """Briefly open a 64x48 virtual camera and close it: its device and backend, e.g.
    ``/dev/video10 (backend v4l2loopback)``; VirtualCameraUnavailable (every backend's
    failure, this OS's fix) when none opens. Blocks for a moment: call it off a GUI thread."""
    cam = open_camera(64, 48, 30.0, backend, device)
    try:
        return f"{cam.device} (backend {cam.backend})"
    finally:
        cam.close()


def virtualcam_status(backend: str | None = None, device: str | None = None) -> tuple[bool, str]:
    """``probe_virtualcam`` as (True, details) or (False, failures + fix)."""
    try:
        return True, probe_virtualcam(backend, device)
    except VirtualCameraUnavailable as e:
        return False, f"{e.message}\n  fix: {e.hint}"
