"""File sinks: a video recorder and a still-image writer.

The recorder encodes H.264 (yuv420p) through PyAV with presentation timestamps taken from
the frames' capture times, so a recording lasts as long as the stream it recorded, however
few frames the pipeline delivered. OpenCV writers (MJPG, mp4v) are named choices, and
mp4v is the loud fallback when no H.264 encoder opens. Both sinks write to a temporary
file in the target folder and rename it on success; an existing file is never replaced
unless ``overwrite`` is set: a new name with a timestamp is chosen instead.
"""

from __future__ import annotations

import logging
import os
import time
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, Protocol

import av
import cv2
import numpy as np

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.sinks.recording.audio import AudioTrack, has_audio
from livecam.types import Frame
from livecam.userfiles import OutputFile

log = logging.getLogger(__name__)

RecordCodec = Literal["h264", "mp4v", "mjpg"]

#: the codecs each video container takes, its default first
VIDEO_CODECS: dict[str, tuple[RecordCodec, ...]] = {
    ".mp4": ("h264", "mp4v"),
    ".mkv": ("h264", "mp4v", "mjpg"),
    ".avi": ("mjpg", "mp4v"),
}
#: FFmpeg container names for PyAV
_AV_FORMATS = {".mp4": "mp4", ".mkv": "matroska", ".avi": "avi"}
#: FFmpeg H.264 encoders tried in order (libx264 ships in PyAV's wheels)
H264_ENCODERS = ("libx264", "libopenh264", "h264_videotoolbox", "h264_mf", "h264_nvenc")
#: presentation timestamps are counted in this unit
TIME_BASE = Fraction(1, 90000)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
MP4V_FALLBACK_NOTE = (
    "the file plays in VLC and ffmpeg but not in browsers or most editors; "
    "reinstall PyAV (`pip install --force-reinstall av`) for H.264"
)


class Timeline:
    """Presentation timestamps (in ``TIME_BASE`` units) of a recording's frames.

    From capture times when given (the first frame is 0), so the file plays in real time;
    without one, a frame comes one output period after the previous. Always increasing.
    """

    def __init__(self, fps: float) -> None:
        self.period = float(1 / (TIME_BASE * Fraction(fps).limit_denominator(1_000_000)))
        self.last: int | None = None
        self._origin_ns: int | None = None

    def next_pts(self, t_capture_ns: int | None) -> int:
        fixed = 0 if self.last is None else round(self.last + self.period)
        if t_capture_ns is None:
            pts = fixed
        else:
            if self._origin_ns is None:
                self._origin_ns = t_capture_ns - self._to_ns(fixed)
            pts = round((t_capture_ns - self._origin_ns) * 1e-9 / TIME_BASE)
        if self.last is not None and pts <= self.last:
            pts = self.last + 1
        self.last = pts
        return pts

    def _to_ns(self, pts: int) -> int:
        return round(pts * TIME_BASE * 10**9)

    @property
    def duration_s(self) -> float:
        """Length of the recording so far: up to the last frame plus one period."""
        return 0.0 if self.last is None else float((self.last + self.period) * TIME_BASE)


class _Writer(Protocol):
    encoder: str
    audio: AudioTrack | None

    def write(self, frame: Frame, pts: int) -> None: ...

    def finish(self, end_s: float) -> None: ...

    def abort(self) -> None: ...


class _PyAVWriter:
    """H.264 yuv420p through PyAV; frames carry their own presentation timestamps.

    ``audio_from``: a media file whose sound goes into the recording too (see
    ``livecam.sinks.recording.audio``); when it cannot be carried, the video is recorded without it
    and a warning says why.
    """

    def __init__(
        self,
        tmp: Path,
        fmt: str,
        size: tuple[int, int],
        fps: float,
        encoders: tuple[str, ...],
        audio_from: Path | None = None,
    ) -> None:
        self.size = size
        self.audio: AudioTrack | None = None
        failures: list[str] = []
        for name in encoders:
            if name not in av.codecs_available:
                failures.append(f"{name}: not in this FFmpeg build")
                continue
            try:
                self._open(tmp, fmt, name, fps, audio_from)
            except Exception as e:
                if audio_from is None:
                    failures.append(f"{name}: {e}")
                    continue
                try:  # was it the sound?
                    self._open(tmp, fmt, name, fps, None)
                except Exception:
                    failures.append(f"{name}: {e}")
                    continue
                log.warning("the sound of %s is NOT RECORDED: %s", audio_from, e)
            self.encoder = name
            return
        tmp.unlink(missing_ok=True)
        raise SinkError("no H.264 encoder could be opened: " + "; ".join(failures))

    def _open(self, tmp: Path, fmt: str, name: str, fps: float, audio_from: Path | None) -> None:
        container = av.open(str(tmp), "w", format=fmt)
        audio = None
        try:
            stream: Any = container.add_stream(name, rate=Fraction(fps).limit_denominator(1001))
            stream.width, stream.height = self.size
            stream.pix_fmt = "yuv420p"
            stream.time_base = TIME_BASE
            stream.codec_context.time_base = TIME_BASE
            if name == "libx264":
                stream.options = {"preset": "veryfast", "crf": "21"}
            stream.codec_context.open()
            if audio_from is not None:
                audio = AudioTrack(audio_from, container, fmt)
            container.start_encoding()  # the header: fails here if a stream does not fit
        except Exception:
            if audio is not None:
                _quietly(audio.close)
            _quietly(container.close)
            raise
        self.container, self.stream, self.audio = container, stream, audio

    def write(self, frame: Frame, pts: int) -> None:
        picture = av.VideoFrame.from_ndarray(frame, format="bgr24")
        picture.pts, picture.time_base = pts, TIME_BASE
        for packet in self.stream.encode(picture):
            self.container.mux(packet)
        if self.audio is not None:
            self.audio.mux_until(float(pts * TIME_BASE))

    def finish(self, end_s: float) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        if self.audio is not None:
            self.audio.finish(end_s)
        self.container.close()

    def abort(self) -> None:
        if self.audio is not None:
            _quietly(self.audio.close)
        _quietly(self.container.close)


class _OpenCVWriter:
    """A fixed-rate OpenCV writer that keeps real time: each frame is held until the next
    one arrives and then fills every output period up to it; of two frames falling in the
    same period the later one is kept."""

    def __init__(self, tmp: Path, fourcc: str, size: tuple[int, int], fps: float) -> None:
        self.writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter.fourcc(*fourcc), fps, size)
        if not self.writer.isOpened():
            self.writer.release()
            tmp.unlink(missing_ok=True)
            raise SinkError(f"OpenCV could not open a {fourcc} writer")
        self.encoder = fourcc
        self.audio: AudioTrack | None = None  # OpenCV writes no sound
        self.period = float(1 / (TIME_BASE * Fraction(fps).limit_denominator(1_000_000)))
        self.periods_written = 0
        self._held: tuple[Frame, int] | None = None  # the last frame and its period index

    def write(self, frame: Frame, pts: int) -> None:
        index = round(pts / self.period)
        if self._held is not None:
            held, held_index = self._held
            self._put(held, index - held_index)
            index = max(index, held_index)
        self._held = (frame, index)

    def _put(self, frame: Frame, periods: int) -> None:
        for _ in range(periods):
            self.writer.write(frame)
        self.periods_written += max(periods, 0)

    def finish(self, end_s: float) -> None:
        if self._held is not None:
            self._put(self._held[0], 1)
            self._held = None
        self.writer.release()

    def abort(self) -> None:
        self._held = None
        self.writer.release()


class RecorderSink(Sink):
    """Records every new frame to a video file (``.mp4``, ``.mkv``, ``.avi``).

    ``codec``: None picks the container's default (H.264 through PyAV for .mp4/.mkv, MJPG
    through OpenCV for .avi); "h264", "mp4v" or "mjpg" asks for one. With the default, an
    H.264 encoder that cannot open falls back to OpenCV mp4v with a loud warning.
    ``wants_repeats`` is False: frames are timed by their capture times, not by repeats.

    The file is written to a hidden temporary file beside the target and renamed when
    ``close`` succeeds; ``target`` is the name it gets (a new one with a timestamp when the
    requested file exists and ``overwrite`` is False). Any write or encoder failure raises
    SinkError, the temporary file is removed and nothing claims success.

    In a conversion of a video file (``take_audio_from``), the file's sound is recorded
    too (H.264 recordings, i.e. .mp4 and .mkv; see ``livecam.sinks.recording.audio``).
    """

    name = "recorder"
    records_video = True
    wants_repeats = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        codec: RecordCodec | None = None,
        h264_encoders: tuple[str, ...] = H264_ENCODERS,
    ) -> None:
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        if suffix not in VIDEO_CODECS:
            raise SinkError(
                f"cannot record to {self.path}: unknown video type {suffix!r}",
                f"use one of {', '.join(VIDEO_CODECS)}",
            )
        allowed = VIDEO_CODECS[suffix]
        if codec is not None and codec not in allowed:
            raise SinkError(
                f"cannot record {codec} into a {suffix} file ({self.path})",
                f"for {suffix} use one of {', '.join(allowed)}",
            )
        self.codec: RecordCodec = codec or allowed[0]
        self._fallback = codec is None and self.codec == "h264"
        self.overwrite = overwrite
        self.h264_encoders = h264_encoders
        self.target = self.path
        self.encoder: str | None = None  # e.g. "libx264", "mp4v", "MJPG" once open
        self.frames_written = 0
        self._writer: _Writer | None = None
        self._out: OutputFile | None = None
        self._tmp: Path | None = None
        self._size = (0, 0)
        self._timeline = Timeline(30.0)
        self.audio_from: Path | None = None  # a media file whose sound is recorded too
        self.audio: str | None = None  # e.g. "aac copied", once open with sound

    def take_audio_from(self, path: Path) -> None:
        self.audio_from = path if has_audio(path) else None

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        out = OutputFile(self.path, overwrite=self.overwrite)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.target = out.claim()
        except OSError as e:
            raise SinkError(
                f"cannot record to {self.path}: {e.strerror or e}", "record into a writable folder"
            ) from e
        tmp = out.temp_path("recording")
        self._size = (width, height)
        try:
            self._writer = self._open_writer(tmp, (width, height), fps)
        except BaseException:
            out.discard()
            raise
        self._out, self._tmp = out, tmp
        self._timeline = Timeline(fps)
        self.encoder = self._writer.encoder
        self.audio = _describe_audio(self._writer)
        self.frames_written = 0
        log.info(
            "recording %dx%d (%g fps nominal) to %s with %s%s",
            width,
            height,
            fps,
            self.target,
            self.encoder,
            f", sound {self.audio}" if self.audio else "",
        )

    def _open_writer(self, tmp: Path, size: tuple[int, int], fps: float) -> _Writer:
        try:
            if self.codec == "h264":
                fmt = _AV_FORMATS[self.path.suffix.lower()]
                return _PyAVWriter(tmp, fmt, _even(size), fps, self.h264_encoders, self.audio_from)
            if self.audio_from is not None:
                log.warning(
                    "the sound of %s is NOT RECORDED: %s recordings (through OpenCV) have "
                    "no sound; record to .mp4 or .mkv for sound",
                    self.audio_from,
                    self.codec,
                )
            return _OpenCVWriter(
                tmp, self.codec.upper() if self.codec == "mjpg" else "mp4v", size, fps
            )
        except SinkError as e:
            if not self._fallback:
                raise SinkError(
                    f"cannot record to {self.target}: {e.message}",
                    "check the folder is writable, or record to .avi (MJPG) instead",
                ) from e
            log.warning(
                "H.264 UNAVAILABLE (%s): recording %s with the FALLBACK codec mp4v "
                "through OpenCV; %s",
                e.message,
                self.target,
                MP4V_FALLBACK_NOTE,
            )
            self.codec, self._fallback = "mp4v", False
            return self._open_writer(tmp, size, fps)
        except Exception as e:  # PyAV/OpenCV errors: a missing folder, no permission
            tmp.unlink(missing_ok=True)
            raise SinkError(
                f"cannot record to {self.target}: {e!r}", "check the folder is writable"
            ) from e

    def send(self, frame: Frame, t_capture_ns: int | None = None) -> None:
        writer, tmp = self._writer, self._tmp
        if writer is None or tmp is None:
            raise SinkError(f"recorder {self.path}: send() before open() (or after a failure)")
        h, w = frame.shape[:2]
        if (w, h) != self._size:
            raise SinkError(
                f"recorder {self.target}: frame is {w}x{h}, the file is "
                f"{self._size[0]}x{self._size[1]}",
                "every frame of a recording must have the size of the first one",
            )
        try:
            if not tmp.parent.is_dir():
                raise FileNotFoundError(f"the folder {tmp.parent} was removed")
            writer.write(_crop_even(frame), self._timeline.next_pts(t_capture_ns))
        except Exception as e:
            self._fail(e)
        self.frames_written += 1

    def close(self) -> None:
        """Finish the file and give it its name; raise SinkError if that fails."""
        writer, tmp, out = self._writer, self._tmp, self._out
        if writer is None or tmp is None or out is None:
            return
        if self.frames_written == 0:
            self._writer = self._tmp = self._out = None
            writer.abort()
            tmp.unlink(missing_ok=True)
            out.discard()
            log.info("no frame reached the recorder: %s was not written", self.target)
            return
        try:
            writer.finish(self._timeline.duration_s)
            if not tmp.exists() or tmp.stat().st_size == 0:
                raise FileNotFoundError(f"{tmp} is missing or empty after writing")
            out.commit(tmp)
        except Exception as e:
            self._fail(e)
        self.written = self.target
        self._writer = self._tmp = self._out = None
        log.info(
            "recorded %d frames (%.1f s) to %s (%s%s)",
            self.frames_written,
            self._timeline.duration_s,
            self.target,
            self.encoder,
            f", sound {self.audio}" if self.audio else "",
        )

    def _fail(self, error: Exception) -> None:
        """Drop the writer, its temporary file and the claimed name, then raise SinkError."""
        writer, tmp, out = self._writer, self._tmp, self._out
        self._writer = self._tmp = self._out = None
        if writer is not None:
            _quietly(writer.abort)
        if tmp is not None:
            _quietly(lambda: tmp.unlink(missing_ok=True))
        if out is not None:
            out.discard()
        raise SinkError(
            f"recording to {self.target} failed after {self.frames_written} frames: "
            f"{error}; nothing was saved",
            "check that the folder still exists and the disk has room",
        ) from error


def _describe_audio(writer: _Writer) -> str | None:
    """``aac copied`` / ``pcm_s16le as AAC`` for a writer that records sound, else None."""
    audio = writer.audio
    if audio is None:
        return None
    return f"{audio.codec} copied" if audio.copied else f"{audio.codec} as AAC"


def _even(size: tuple[int, int]) -> tuple[int, int]:
    """H.264 in yuv420p needs even sides: drop a last odd column/row."""
    w, h = size
    if (w % 2, h % 2) != (0, 0):
        log.info("recording %dx%d as %dx%d (H.264 needs even sides)", w, h, w - w % 2, h - h % 2)
    return w - w % 2, h - h % 2


def _crop_even(frame: Frame) -> Frame:
    h, w = frame.shape[:2]
    if (w % 2, h % 2) == (0, 0):
        return frame
    return np.ascontiguousarray(frame[: h - h % 2, : w - w % 2])


def _quietly(action: Any) -> None:
    """Run a clean-up ``action`` after a failure already being reported; log its own error."""
    try:
        action()
    except Exception as e:
        log.debug("clean-up after a recording failure: %r", e)


class ImageWriterSink(Sink):
    """Keeps the latest frame in an image file: written every ``interval_s`` and on close.

    Each write goes to a temporary file that replaces the target, so readers never see a
    half-written image. An existing file is kept unless ``overwrite``: ``target`` is then
    a new name with a timestamp. ``wants_repeats`` is False (a repeat would not change
    the file).
    """

    name = "image"
    wants_repeats = False

    def __init__(
        self, path: str | os.PathLike[str], interval_s: float = 1.0, *, overwrite: bool = False
    ) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() not in IMAGE_SUFFIXES:
            raise SinkError(
                f"cannot write images to {self.path}: unknown image type {self.path.suffix!r}",
                f"use one of {', '.join(IMAGE_SUFFIXES)}",
            )
        self.interval_s = interval_s
        self.overwrite = overwrite
        self.target = self.path
        self._out: OutputFile | None = None
        self._last: Frame | None = None
        self._last_write = 0.0
        self.writes = 0

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        out = OutputFile(self.path, overwrite=self.overwrite)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.target = out.claim()
        except OSError as e:
            raise SinkError(
                f"cannot write images to {self.path}: {e.strerror or e}",
                "write into a writable folder",
            ) from e
        self._out = out
        self._last = None
        self._last_write = time.monotonic()  # first periodic write one interval in

    def send(self, frame: Frame, t_capture_ns: int | None = None) -> None:
        self._last = frame
        now = time.monotonic()
        if now - self._last_write >= self.interval_s:
            self._write()
            self._last_write = now

    def _write(self) -> None:
        if self._last is None or self._out is None:
            return
        ok, data = cv2.imencode(self.target.suffix.lower(), self._last)
        if not ok:
            raise SinkError(f"OpenCV could not encode a frame as {self.target.suffix}")
        try:
            self._out.write_bytes(data.tobytes())
        except OSError as e:
            raise SinkError(
                f"cannot write {self.target}: {e.strerror or e}",
                "check that the folder still exists and the disk has room",
            ) from e
        self.writes += 1
        self.written = self.target

    def close(self) -> None:
        """Write the last frame; without any frame, remove the claimed name."""
        out = self._out
        try:
            self._write()
        finally:
            self._out, self._last = None, None
            if out is not None:
                out.discard()
