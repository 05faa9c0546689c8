"""Typed errors. Each carries a message that says what went wrong and how to fix it."""

from __future__ import annotations


class LivecamError(Exception):
    """Base class for every error LiveCam raises on purpose.

    ``hint`` is a short, actionable fix shown to the user under the message.
    """

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class ConfigError(LivecamError):
    """A configuration value is invalid (names the field and the allowed values)."""


class FrameFormatError(LivecamError):
    """A frame does not follow the frame contract (uint8, BGR, (H, W, 3), C-contiguous)."""


class SourceError(LivecamError):
    """A source cannot be opened or stopped delivering frames."""


class SinkError(LivecamError):
    """A sink cannot be opened or rejected a frame."""


class VirtualCameraUnavailable(SinkError):
    """No virtual-camera backend could be opened; the message lists every backend's failure."""


class ModelError(LivecamError):
    """A model file is missing, corrupt or has an unexpected contract."""


class FaceSourceError(LivecamError):
    """The source face image has no face, or several where one is needed."""


class StartupError(LivecamError):
    """Several problems found while starting; ``causes`` holds each of them."""

    def __init__(self, causes: list[LivecamError]) -> None:
        self.causes = causes
        text = "LiveCam could not start:\n" + "\n".join(f"- {c}" for c in causes)
        super().__init__(text)

    def __str__(self) -> str:
        return self.message


class ControlError(LivecamError):
    """A live control command cannot be applied (nothing was changed)."""


def as_livecam_error(error: Exception, where: str = "") -> LivecamError:
    """``error`` itself when it is ours, else a LivecamError naming where it happened
    (libraries raise their own types: cv2.error, ONNX Runtime's RuntimeError, OSError)."""
    if isinstance(error, LivecamError):
        return error
    prefix = f"{where}: " if where else ""
    return LivecamError(f"{prefix}{type(error).__name__}: {error}")
