"""Typed errors. Each carries a message that says what went wrong and how to fix it."""

from __future__ import annotations

import re
from typing import Any


class LivecamError(Exception):
    """Base class for every error LiveCam raises on purpose.

    ``hint`` is a short, actionable fix shown to the user under the message (in the CLI's
    words: options, config fields). ``panel_hint``, when set, is the same fix in the
    panel's words (its tabs and buttons); the panel shows it instead (``panel_fix``).
    """

    #: the CLI's exit status for this error: 2, a problem with what was asked for
    exit_status = 2

    def __init__(self, message: str, hint: str = "", *, panel_hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.panel_hint = panel_hint

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.hint}" if self.hint else self.message


class ConfigError(LivecamError):
    """A configuration value is invalid (names the field and the allowed values).

    ``field`` (``section.name``), ``value`` and ``allowed`` are set for a bad field value,
    so the CLI can name its own option instead of the field (see ``livecam.cli.main``).
    """

    def __init__(
        self,
        message: str,
        hint: str = "",
        *,
        field: str | None = None,
        value: Any = None,
        allowed: str | None = None,
        panel_hint: str = "",
    ) -> None:
        super().__init__(message, hint, panel_hint=panel_hint)
        self.field = field
        self.value = value
        self.allowed = allowed

    @classmethod
    def bad_value(cls, field: str, value: Any, allowed: str) -> ConfigError:
        """The error for config field ``field`` holding the invalid ``value``."""
        return cls(
            f"config field '{field}' has the invalid value {cut(repr(value))}",
            f"allowed: {allowed}",
            field=field,
            value=value,
            allowed=allowed,
        )


class FrameFormatError(LivecamError):
    """A frame does not follow the frame contract (uint8, BGR, (H, W, 3), C-contiguous)."""


class SourceError(LivecamError):
    """A source cannot be opened or stopped delivering frames."""


class SourceGone(SourceError):
    """A source that cannot come back (a file that no longer exists): retrying suits a
    camera, not a file, so the run ends with this error."""


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


class WriteFailed(LivecamError):
    """A file could not be written (a full disk, a file-size limit, a lost folder): what was
    asked for was fine, its result is not saved (exit status 1, as a failed recording)."""

    exit_status = 1


class ControlError(LivecamError):
    """A live control command cannot be applied (nothing was changed)."""


def as_livecam_error(error: Exception, where: str = "") -> LivecamError:
    """``error`` itself when it is ours, else a LivecamError naming where it happened
    (libraries raise their own types: cv2.error, ONNX Runtime's RuntimeError, OSError)."""
    if isinstance(error, LivecamError):
        return error
    prefix = f"{where}: " if where else ""
    if isinstance(error, OSError) and error.strerror:
        about = f" {error.filename!r}" if error.filename is not None else ""
        return LivecamError(f"{prefix}cannot use{about}: {error.strerror}")
    if type(error).__module__ == "cv2":  # "OpenCV(5.1.0) /io/.../resize.cpp:3587: error: ..."
        said = _OPENCV_ERROR.search(str(error))
        why = f"{said[3]}: {said[1].lower()} ({said[2]})" if said else one_line(str(error))
        return LivecamError(
            f"{prefix}an image operation failed (OpenCV {why})",
            "this is a bug in LiveCam; please report it with the output of the same command "
            "run with -v",
        )
    return LivecamError(f"{prefix}{type(error).__name__}: {error}")


#: OpenCV's error text: ``(-215:Assertion failed) !ssize.empty() in function 'resize'``
_OPENCV_ERROR = re.compile(r"\(-?\d+:([^)]*)\)\s*(.*?)\s+in function '([^']*)'", re.S)


def panel_fix(error: LivecamError) -> str:
    """The fix the panel shows for ``error``: its ``panel_hint``, else its ``hint``."""
    return error.panel_hint or error.hint


#: the most characters of a value (a path, an option's argument) an error line echoes
SHOWN_CHARS = 200
#: the most characters of one error line: the last guard against a huge echoed value
LINE_CHARS = 1000


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as an error line echoes it: at most ``limit`` characters, a longer one cut
    with how long it was (``aaaa... (1000000 characters)``). Every message that echoes a
    value the user gave passes it through this."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space, at most
    ``LINE_CHARS`` long (see ``cut``)."""
    return cut(" ".join(text.split()), LINE_CHARS)


def format_error(error: LivecamError) -> str:
    """The error as the CLI prints it: ``error: <one line>`` and, when there is a fix,
    ``  fix: <one line>``; a start-up error with several causes lists one per line."""
    if isinstance(error, StartupError) and len(error.causes) == 1:
        error = error.causes[0]
    if isinstance(error, StartupError):
        lines = [f"error: LiveCam could not start ({len(error.causes)} problems):"]
        for cause in error.causes:
            fix = f" (fix: {one_line(cause.hint)})" if cause.hint else ""
            lines.append(f"- {one_line(cause.message)}{fix}")
        return "\n".join(lines)
    text = f"error: {one_line(error.message)}"
    return f"{text}\n  fix: {one_line(error.hint)}" if error.hint else text
