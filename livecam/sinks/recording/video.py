"""The video recorder sink: every new frame into a video file, through PyAV.

H.264 (yuv420p) is the default, with presentation timestamps taken from the frames'
capture times, so a recording lasts as long as the stream it recorded, however few
frames the pipeline delivered. MPEG-4 part 2 ("mp4v") and MJPEG are named choices, and
mp4v is the loud fallback when no H.264 encoder opens. The file is written to a temporary
file in the target folder and renamed on success (``livecam.userfiles``); an existing
file is never replaced unless ``overwrite`` is set: a new name with a timestamp is chosen
instead. A finished file is signed (``livecam.sinks.recording.provenance``: a C2PA
manifest in .mp4, .mov and .avi, a container tag in .mkv) before it gets its name.

Nothing is lost and nothing lies: every write goes through a file that keeps the disk's
error (``livecam.sinks.recording.watched``), so a full disk fails the recording; .mp4 and
.mov are fragmented MP4, so a recording killed with the process keeps all but about its
last second, and the next recording into its folder gives it its name
(``livecam.sinks.recording.recovery``).
"""

from __future__ import annotations

import logging
import os
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, NoReturn

import av
import numpy as np
from av.video.frame import PictureType

from livecam.errors import SinkError
from livecam.sinks.base import Sink
from livecam.sinks.recording.audio import AudioTrack, has_audio
from livecam.sinks.recording.provenance import CARRIES, FileFacts, Provenance, ProvenanceError
from livecam.sinks.recording.recovery import (
    BOXED,
    Lock,
    cut_to_whole_boxes,
    forget,
    hold,
    note,
    playable,
    recover,
)
from livecam.sinks.recording.timeline import TIME_BASE, Timeline
from livecam.sinks.recording.watched import FFmpegFile, open_watched
from livecam.types import Frame
from livecam.userfiles import OutputFile, make_folder_for

log = logging.getLogger(__name__)

RecordCodec = Literal["h264", "mp4v", "mjpg"]

#: the codecs each video container takes, its default first
VIDEO_CODECS: dict[str, tuple[RecordCodec, ...]] = {
    ".mp4": ("h264", "mp4v"),
    ".mov": ("h264", "mp4v"),
    ".mkv": ("h264", "mp4v", "mjpg"),
    ".avi": ("mjpg", "mp4v"),
}
#: FFmpeg container names for PyAV
_AV_FORMATS = {".mp4": "mp4", ".mov": "mov", ".mkv": "matroska", ".avi": "avi"}
#: muxer options: .mp4 and .mov are written as fragmented MP4 (a moov with no samples
#: first, then a fragment at each keyframe or second, each flushed to the file at once),
#: so a recording cut short by a crash plays up to its last second or so
_AV_OPTIONS: dict[str, dict[str, str]] = {
    fmt: {
        "movflags": "frag_keyframe+empty_moov+default_base_moof",
        "frag_duration": "1000000",
        "flush_packets": "1",
    }
    for fmt in ("mp4", "mov")
}
#: with sound: an AAC encoder's priming samples (1024, before the first sound) are said
#: in an edit list; without one (a fragmented file's default) the muxer moved every video
#: frame after the first by their duration (23.2 ms at 44.1 kHz), off the frame grid
_WITH_SOUND = {"use_editlist": "1"}
#: seconds of the frames' own time between keyframes at most (a fragment begins at one)
KEY_EVERY_S = 1.0
#: FFmpeg H.264 encoders tried in order (libx264 ships in PyAV's wheels)
H264_ENCODERS = ("libx264", "libopenh264", "h264_videotoolbox", "h264_mf", "h264_nvenc")
MP4V_FALLBACK_NOTE = (
    "the file plays in VLC and ffmpeg but not in browsers or most editors; "
    "reinstall PyAV (`pip install --force-reinstall av`) for H.264"
)


#: the pixel format of each codec (MJPEG: full-range YUV, as JPEG has it)
_PIX_FMTS: dict[RecordCodec, str] = {"h264": "yuv420p", "mp4v": "yuv420p", "mjpg": "yuvj420p"}
#: the FFmpeg encoders of the other codecs (H.264's: ``RecorderSink.h264_encoders``)
_ENCODERS: dict[RecordCodec, tuple[str, ...]] = {"mp4v": ("mpeg4",), "mjpg": ("mjpeg",)}


class _PyAVWriter:
    """One video stream (and the sound of ``audio_from``, when given) into one file; the
    first of ``encoders`` that opens is used (``encoder``).

    H.264 is timed to ``TIME_BASE``; mp4v and MJPEG to the frame period (MPEG-4 part 2
    takes no time base finer than 1/65535 s, and AVI has a fixed frame rate), with the
    rate control of OpenCV's FFmpeg writer (at most 1.5 bits per pixel and frame, qmin 3).
    A keyframe comes at least once a second of the frames' own time (forced by time,
    whatever rate the pipeline delivers; ``gop_size``, the nominal rate, bounds it in
    frames) and libx264 has no lookahead and no frame threads (``zerolatency``): every
    frame is in the file as soon as it was sent, so a fragmented recording cut short
    loses at most the fragment being filled, about a second, at any frame rate. libx264
    is told the nominal rate (``force-cfr``: its stream header says 30 fps, not 90000).

    ``audio_from``: a media file whose sound goes into the recording too (see
    ``livecam.sinks.recording.audio``); when it cannot be carried, the video is recorded
    without it and a warning says why.
    """

    def __init__(
        self,
        tmp: Path,
        fmt: str,
        codec: RecordCodec,
        size: tuple[int, int],
        fps: float,
        encoders: tuple[str, ...],
        audio_from: Path | None = None,
    ) -> None:
        self.size = size
        self.pix_fmt = _PIX_FMTS[codec]
        rate = Fraction(fps).limit_denominator(1001)
        self.time_base = TIME_BASE if codec == "h264" else 1 / rate
        self.last_pts: int | None = None  # in ``time_base`` units
        self.last_key: int | None = None  # the last keyframe's pts
        self.audio: AudioTrack | None = None
        failures: list[str] = []
        for name in encoders:
            if name not in av.codecs_available:
                failures.append(f"{name}: not in this FFmpeg build")
                continue
            try:
                self._open(tmp, fmt, name, rate, audio_from)
            except Exception as e:
                if audio_from is None:
                    failures.append(f"{name}: {e}")
                    continue
                try:  # was it the sound?
                    self._open(tmp, fmt, name, rate, None)
                except Exception:
                    failures.append(f"{name}: {e}")
                    continue
                log.warning("the sound of %s is NOT RECORDED: %s", audio_from, e)
            self.encoder = name
            return
        tmp.unlink(missing_ok=True)
        raise SinkError(f"no {codec} encoder could be opened: " + "; ".join(failures))

    def _open(
        self, tmp: Path, fmt: str, name: str, rate: Fraction, audio_from: Path | None
    ) -> None:
        file = open_watched(tmp)  # FFmpeg drops the error of its last flush: this keeps it
        options = _AV_OPTIONS.get(fmt, {})
        if audio_from is not None and fmt in ("mp4", "mov"):
            options = {**options, **_WITH_SOUND}
        container = av.open(FFmpegFile(file), "w", format=fmt, options=options)
        audio = None
        try:
            stream: Any = container.add_stream(name, rate=rate)
            stream.width, stream.height = self.size
            stream.pix_fmt = self.pix_fmt
            stream.time_base = self.time_base
            stream.codec_context.time_base = self.time_base
            stream.codec_context.gop_size = max(1, round(rate))
            if name == "libx264":
                stream.options = {
                    "preset": "veryfast",
                    "tune": "zerolatency",  # no B-frames, lookahead or frame threads
                    "crf": "21",
                    "x264-params": "force-cfr=1",
                }
            elif self.time_base != TIME_BASE:
                stream.codec_context.bit_rate = round(1.5 * self.size[0] * self.size[1] * rate)
                stream.codec_context.qmin = 3
            stream.codec_context.open()
            if audio_from is not None:
                audio = AudioTrack(audio_from, container, fmt)
            container.start_encoding()  # the header: fails here if a stream does not fit
        except Exception:
            if audio is not None:
                _quietly(audio.close)
            _quietly(container.close)
            file.discard()
            raise
        self.container, self.stream, self.audio, self.file = container, stream, audio, file

    def write(self, frame: Frame, pts: int) -> bool:
        """Encode ``frame`` at ``pts`` (``TIME_BASE`` units); False when it was left out:
        timed to the frame period, a frame falling in a period that already has one."""
        if self.time_base != TIME_BASE:
            pts = round(pts * TIME_BASE / self.time_base)
            if self.last_pts is not None and pts <= self.last_pts:
                return False
        self.last_pts = pts
        picture = av.VideoFrame.from_ndarray(frame, format="bgr24")
        picture.pts, picture.time_base = pts, self.time_base
        if self.last_key is None or (pts - self.last_key) * self.time_base >= KEY_EVERY_S:
            picture.pict_type = PictureType.I  # a keyframe each second of time, at any rate
            self.last_key = pts
        for packet in self.stream.encode(picture):
            self.container.mux(packet)
        if self.audio is not None:
            self.audio.mux_until(float(pts * self.time_base))
        return True

    def finish(self, end_s: float) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        if self.audio is not None:
            self.audio.finish(end_s)
        self.container.close()
        self.file.finish()  # raises the error of any write, the last flush's too

    def abort(self) -> None:
        if self.audio is not None:
            _quietly(self.audio.close)
        _quietly(self.container.close)
        self.file.discard()


class RecorderSink(Sink):
    """Records every new frame to a video file (``.mp4``, ``.mov``, ``.mkv``, ``.avi``).

    ``codec``: None picks the container's default (H.264 for .mp4/.mkv, MJPEG for .avi);
    "h264", "mp4v" or "mjpg" asks for one. With the default, an H.264 encoder that cannot
    open falls back to mp4v with a loud warning. ``wants_repeats`` is False: frames are
    timed by their capture times, not by repeats.

    The file is written to a hidden temporary file beside the target and renamed when
    ``close`` succeeds; ``target`` is the name it gets (a new one with a timestamp when the
    requested file exists and ``overwrite`` is False). Any write or encoder failure raises
    SinkError and nothing claims success: what of the file plays is kept under the
    claimed name (``NAME-partial`` when that is the user's file) and the error says so;
    the rest is removed.

    In a conversion of a video file (``take_audio_from``), the file's sound is recorded
    too (.mp4, .mov and .mkv recordings; see ``livecam.sinks.recording.audio``).
    ``frames_written`` counts the frames in the file: timed to the frame period (mp4v,
    MJPEG), a second frame within one period is left out.

    ``provenance``: the finished temporary file is signed (its manifest counts the frames
    the swap changed, ``frames_swapped``) before the rename, so only a whole signed file
    takes the name; when signing fails the recording is kept unsigned with a loud
    warning (``provenance_kind`` None; else what the file carries).
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
        provenance: Provenance | None = None,
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
        self.encoder: str | None = None  # e.g. "libx264", "mpeg4", "mjpeg" once open
        self.frames_written = 0
        self.provenance = provenance
        self.frames_swapped = 0  # frames written that the swap changed
        self.provenance_kind: str | None = None  # what the finished file carries
        self._writer: _PyAVWriter | None = None
        self._locks: list[Lock] = []  # on the temporary files while they are written
        self._noted: Path | None = None  # the journal's note of the recording
        self._out: OutputFile | None = None
        self._tmp: Path | None = None
        self._size = (0, 0)
        self._timeline = Timeline(30.0)
        self._converting = False  # a conversion: the file's timestamps are kept exactly
        self.audio_from: Path | None = None  # a media file whose sound is recorded too
        self.audio: str | None = None  # e.g. "aac copied", once open with sound

    def take_audio_from(self, path: Path) -> None:
        self.audio_from = path if has_audio(path) else None
        self._converting = True  # the frames come with the file's own timestamps

    def open(self, width: int, height: int, fps: float) -> None:
        self.close()
        out = OutputFile(self.path, overwrite=self.overwrite)
        try:
            make_folder_for(self.path)  # the last folder level only, said in the log
            keep = self.path.absolute() if self.overwrite else None
            recover(self.path.absolute().parent, tuple(VIDEO_CODECS), keep=keep)
            self.target = out.claim()
            tmp = out.temp_path("recording")
            self._locks.append(hold(tmp))  # tells a later run this recording is alive
            self._noted = note(tmp)  # tells a later start where to look if it is killed
        except OSError as e:
            out.discard()
            raise SinkError(
                f"cannot record to {self.path}: {e.strerror or e}", "record into a writable folder"
            ) from e
        self._size = (width, height)
        try:
            self._writer = self._open_writer(tmp, _even((width, height)), fps)
        except BaseException:
            tmp.unlink(missing_ok=True)
            self._release()
            out.discard()
            raise
        self._out, self._tmp = out, tmp
        # H.264 is timed to TIME_BASE: a converted file's times fit it as they are
        exact = self._converting and self._writer.time_base == TIME_BASE
        self._timeline = Timeline(fps, exact=exact)
        self.encoder = self._writer.encoder
        self.audio = _describe_audio(self._writer)
        self.frames_written = self.frames_swapped = 0
        self.recording = self.target  # the REC indicator's name
        self.provenance_kind = None
        log.info(
            "recording %dx%d (%g fps nominal) to %s with %s%s",
            width,
            height,
            fps,
            self.target,
            self.encoder,
            f", sound {self.audio}" if self.audio else "",
        )

    def _open_writer(self, tmp: Path, size: tuple[int, int], fps: float) -> _PyAVWriter:
        suffix = self.path.suffix.lower()
        audio_from = self.audio_from
        if audio_from is not None and suffix == ".avi":
            log.warning(
                "the sound of %s is NOT RECORDED: .avi recordings have no sound; "
                "record to .mp4, .mov or .mkv for sound",
                audio_from,
            )
            audio_from = None
        encoders = self.h264_encoders if self.codec == "h264" else _ENCODERS[self.codec]
        try:
            return _PyAVWriter(
                tmp, _AV_FORMATS[suffix], self.codec, size, fps, encoders, audio_from
            )
        except SinkError as e:
            if not self._fallback:
                raise SinkError(
                    f"cannot record to {self.target}: {e.message}",
                    "check the folder is writable, or record to .avi (MJPEG) instead",
                ) from e
            log.warning(
                "H.264 UNAVAILABLE (%s): recording %s with the FALLBACK codec mp4v "
                "(MPEG-4 part 2); %s",
                e.message,
                self.target,
                MP4V_FALLBACK_NOTE,
            )
            self.codec, self._fallback = "mp4v", False
            return self._open_writer(tmp, size, fps)
        except Exception as e:  # PyAV errors: a missing folder, no permission
            tmp.unlink(missing_ok=True)
            raise SinkError(
                f"cannot record to {self.target}: {e!r}", "check the folder is writable"
            ) from e

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
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
            pts = self._timeline.next_pts(t_capture_ns)
            written = pts is not None and writer.write(_crop_even(frame), pts)
        except Exception as e:
            self._fail(e)
        self.frames_written += written
        if written and swapped:
            self.frames_swapped += 1

    def close(self) -> None:
        """Finish the file and give it its name; raise SinkError if that fails."""
        writer, tmp, out = self._writer, self._tmp, self._out
        self.recording = None
        if writer is None or tmp is None or out is None:
            return
        if self.frames_written == 0:
            self._writer = self._tmp = self._out = None
            writer.abort()
            tmp.unlink(missing_ok=True)
            self._release()
            out.discard()
            log.info("no frame reached the recorder: %s was not written", self.target)
            return
        try:
            writer.finish(self._timeline.duration_s)
            if not tmp.exists() or tmp.stat().st_size == 0:
                raise FileNotFoundError(f"{tmp} is missing or empty after writing")
            final, unsigned = self._sign(tmp, out)
            out.commit(final)
        except Exception as e:
            self._fail(e)
        self._writer = self._tmp = self._out = None
        self._release()
        if unsigned is not None:  # the disk filled up while signing: the file is whole
            raise SinkError(
                f"recording to {self.target}: its copy with provenance could not be "
                f"written ({unsigned.strerror or unsigned}); {self.target} is kept UNSIGNED",
                "check that the disk has room",
            )
        self.written = self.target
        log.info(
            "recorded %d frames (%.1f s) to %s (%s%s; provenance: %s)",
            self.frames_written,
            self._timeline.duration_s,
            self.target,
            self.encoder,
            f", sound {self.audio}" if self.audio else "",
            self.provenance_kind or "none",
        )

    def _sign(self, tmp: Path, out: OutputFile) -> tuple[Path, OSError | None]:
        """The finished file to commit: a signed copy of ``tmp`` (which is removed), or
        ``tmp`` itself when there is no provenance to write or signing failed; with the
        write error when the signed copy could not be written (a full disk)."""
        if self.provenance is None:
            return tmp, None
        signed = out.temp_path("signed")
        try:
            self._locks.append(hold(signed))
        except OSError as e:
            return tmp, e
        facts = FileFacts(self.target.name, self.frames_written, self.frames_swapped)
        try:
            done = self.provenance.finish_file(tmp, signed, facts)
        except ProvenanceError as e:
            signed.unlink(missing_ok=True)
            log.warning("%s is kept WITHOUT signed provenance: %s", self.target, e.message)
            return tmp, None
        except OSError as e:
            signed.unlink(missing_ok=True)
            return tmp, e
        if not done:
            signed.unlink(missing_ok=True)
            return tmp, None
        self._tmp = signed  # removed by _fail if the rename fails
        tmp.unlink(missing_ok=True)
        self.provenance_kind = CARRIES[self.target.suffix.lower()]
        return signed, None

    def _release(self) -> None:
        """Let go of the temporary files' locks (after they were renamed or removed)."""
        locks, self._locks = self._locks, []
        for lock in locks:
            lock.release()
        forget(self._noted)
        self._noted = None

    def _fail(self, error: Exception) -> NoReturn:
        """Drop the writer, keep what of its file plays (``_keep``) or remove it and the
        claimed name, then raise SinkError saying which."""
        writer, tmp, out = self._writer, self._tmp, self._out
        self.recording = None
        self._writer = self._tmp = self._out = None
        cause: BaseException = error
        if writer is not None:
            cause = writer.file.error or error  # the disk's own error, not FFmpeg's
            _quietly(writer.abort)
        kept = "nothing was saved"
        if tmp is not None and out is not None:
            kept = self._keep(tmp, out)
        elif tmp is not None:
            _quietly(lambda: tmp.unlink(missing_ok=True))
        self._release()
        if out is not None:
            out.discard()
        why = cause.strerror if isinstance(cause, OSError) and cause.strerror else cause
        raise SinkError(
            f"recording to {self.target} failed after {self.frames_written} frames: {why}; {kept}",
            "check that the folder still exists and the disk has room",
        ) from error

    def _keep(self, tmp: Path, out: OutputFile) -> str:
        """Keep what of the failed recording ``tmp`` plays (a fragmented .mp4/.mov up to
        its last whole fragment; an .mkv or .avi as far as it decodes) under the claimed
        name, or ``NAME-partial`` when that name holds the user's file (``overwrite``);
        where the folder no longer takes a rename, its content is copied into the claimed
        (empty) file. Remove what does not play. Return the words for the error line."""
        if tmp.suffix.lower() in BOXED:
            cut_to_whole_boxes(tmp)
        facts = playable(tmp)
        if facts is None:
            _quietly(lambda: tmp.unlink(missing_ok=True))
            return "nothing was saved" + (f"; {tmp} is left" if tmp.exists() else "")
        what = f"its first {facts[0]} frames ({facts[1]:.1f} s), which play, are kept in"
        unsigned = "signed" if ".signed-" in tmp.name else "unsigned"
        claim = out.target
        if not _is_empty(claim):  # --overwrite: the user's file is not replaced by a part
            partial = OutputFile(claim.with_name(f"{claim.stem}-partial{claim.suffix}"))
            try:
                partial.claim()
                return f"{what} {partial.commit(tmp)} ({unsigned})"
            except OSError:
                partial.discard()
                return f"{what} {tmp} ({unsigned})"
        try:
            return f"{what} {out.commit(tmp)} ({unsigned})"
        except OSError as e:
            log.debug("could not rename %s into place: %s", tmp, e)
        try:  # a folder that no longer takes a rename: the claim is ours to write
            _copy_into(tmp, claim)
        except OSError as e:
            log.debug("could not copy %s into %s: %s", tmp, claim, e)
            return f"{what} {tmp} ({unsigned}; {claim.name} could not take it)"
        try:
            tmp.unlink()
        except OSError as e:  # a read-only folder: the copy's bytes can still go
            try:
                os.truncate(tmp, 0)
            except OSError:
                return f"{what} {claim} ({unsigned}; a copy is left at {tmp}: {e.strerror or e})"
            return (
                f"{what} {claim} ({unsigned}; the folder refuses to remove the emptied hidden "
                f"file {tmp.name}: {e.strerror or e}; the next start there removes it)"
            )
        return f"{what} {claim} ({unsigned})"


def _describe_audio(writer: _PyAVWriter) -> str | None:
    """``aac copied`` / ``pcm_s16le as AAC`` for a writer that records sound, else None."""
    audio = writer.audio
    if audio is None:
        return None
    return f"{audio.codec} copied" if audio.copied else f"{audio.codec} as AAC"


def _even(size: tuple[int, int]) -> tuple[int, int]:
    """yuv420p needs even sides: drop a last odd column/row."""
    w, h = size
    if (w % 2, h % 2) != (0, 0):
        log.info("recording %dx%d as %dx%d (yuv420p needs even sides)", w, h, w - w % 2, h - h % 2)
    return w - w % 2, h - h % 2


def _crop_even(frame: Frame) -> Frame:
    h, w = frame.shape[:2]
    if (w % 2, h % 2) == (0, 0):
        return frame
    return np.ascontiguousarray(frame[: h - h % 2, : w - w % 2])


def _is_empty(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size == 0
    except OSError:
        return False


def _copy_into(src: Path, claim: Path) -> None:
    """Copy ``src`` into the existing file ``claim`` (never following a link, never
    creating it); on failure it is emptied again."""
    fd = os.open(claim, os.O_WRONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "wb") as dst:
        try:
            with src.open("rb") as f:
                shutil.copyfileobj(f, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
        except OSError:
            _quietly(lambda: os.ftruncate(dst.fileno(), 0))
            raise


def _quietly(action: Any) -> None:
    """Run a clean-up ``action`` after a failure already being reported; log its own error."""
    try:
        action()
    except Exception as e:
        log.debug("clean-up after a recording failure: %r", e)
