"""Is this video, image or camera marked as AI-modified? (`livecam verify FILE|DEVICE`, and
the panel's Verify button)

It reads the frames (a video or image file, or a camera device such as ``/dev/video2``,
``camera:N`` or a stream URL, so a viewer can point it at a virtual camera or a
downloaded call recording), looks for LiveCam's invisible mark in each (in windows of
``window`` frames, 2 seconds by default: a window is marked when most of its frames
are) and, for a file, reads its provenance (a C2PA manifest or LiveCam's container tag).

Exit status: 0 marked (the invisible mark was found, or the file declares an AI edit in
a C2PA manifest whose signature checks out, or in LiveCam's tag), 1 not marked, 2 bad
input (no such file or device, or nothing in it can be decoded as a picture: one
``error:`` line). A damaged file whose first frames still decode is verified on those
frames (a note says where decoding stopped); a damaged manifest is reported as such
(present, signature invalid), never taken as a mark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np

from livecam.config.schema import SourceConfig
from livecam.config.specs import SourceSpec
from livecam.errors import LivecamError, one_line
from livecam.sinks.recording.provenance import ProvenanceError, ProvenanceReport, read_provenance
from livecam.stream.watermark import Payload, StreamDetection, detect_frames
from livecam.types import Frame
from livecam.userfiles.decoder_messages import decoder_messages, decoder_reason
from livecam.userfiles.images import IMAGE_EXTENSIONS, MAX_DECODE_PIXELS, header_size

log = logging.getLogger(__name__)

#: frames read from a file / a camera unless --frames says otherwise
FILE_FRAMES = 300
DEVICE_FRAMES = 120
#: seconds of frames in one detection window (meeting apps send 30 fps: 60 frames)
WINDOW_S = 2.0


class VerifyError(LivecamError):
    """Bad input for `livecam verify` (exit status 2)."""


@dataclass
class Frames:
    """The frames read from the input: an iterator (consumed once), the input's frame
    rate, and, once consumed, ``note`` saying why reading stopped early (a damaged file)."""

    frames: Iterator[Frame]
    fps: float
    kind: str
    note: list[str] = field(default_factory=list)
    #: the frames its header promises (None: unknown)
    count: int | None = None


@dataclass(frozen=True)
class Verdict:
    """What `livecam verify` found: the mark over the frames, the provenance (None for a
    device) and whether the input counts as marked."""

    target: str
    kind: str
    mark: StreamDetection
    window: int
    provenance: ProvenanceReport | None
    notes: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        """The file declares an AI edit in a valid manifest or in LiveCam's tag."""
        p = self.provenance
        if p is None or not p.present or p.ai_action is None:
            return False
        return p.signature_valid or p.kind == "tag"

    @property
    def marked(self) -> bool:
        return self.mark.marked or self.declared


#: ``progress(what, done, total)``: ``what`` is ``"bytes"`` (the C2PA check hashing the
#: file: bytes read of its size) or ``"frames"`` (frames looked at of those to read)
Progress = Callable[[str, int, int], None]


def verify(
    target: str,
    frames: int | None = None,
    window: int | None = None,
    progress: Progress | None = None,
) -> Verdict:
    """Check ``target`` (see the module docstring); VerifyError for bad input.
    ``progress`` follows the long parts (a 20 GB file takes minutes to hash)."""
    tell: Progress = progress or (lambda _what, _done, _total: None)
    spec = SourceSpec.parse(target)
    if spec.kind == "file":
        path = Path(target).expanduser()
        if not path.exists():
            raise VerifyError(f"verify: no such file or device: {target}")
        if not path.is_file():
            raise VerifyError(f"verify: {target} is not a file")
        read = _read_file(path, frames or FILE_FRAMES)
        size = path.stat().st_size
        provenance = _provenance(path, lambda done: tell("bytes", min(done, size), size))
        tell("bytes", size, size)  # done, whether the check read all of it or stopped
    elif spec.kind == "camera":
        read = _read_device(target, frames or DEVICE_FRAMES)
        provenance = None
    else:
        raise VerifyError(
            f"verify: {target!r} is neither a file nor a camera device",
            "give a video or image file, /dev/videoN, camera:N or a stream URL",
        )
    size = window or (1 if read.kind == "image" else max(1, round(WINDOW_S * read.fps)))
    limit = frames or (FILE_FRAMES if spec.kind == "file" else DEVICE_FRAMES)
    limit = min(limit, read.count or limit)
    mark = detect_frames(_counted(read.frames, lambda n: tell("frames", n, limit)), size)
    if mark.frames_total == 0 and (provenance is None or not provenance.present):
        why = read.note[0] if read.note else "no frame could be decoded"
        raise VerifyError(f"verify: cannot read {target}: {why}")
    # nothing decodes but the file carries provenance: report it (other readers do)
    return Verdict(target, read.kind, mark, size, provenance, tuple(read.note))


def _counted(frames: Iterator[Frame], done: Callable[[int], None]) -> Iterator[Frame]:
    """``frames``, calling ``done(frames so far)`` after each."""
    for n, frame in enumerate(frames, 1):
        yield frame
        done(n)


def _provenance(path: Path, progress: Callable[[int], None]) -> ProvenanceReport:
    try:
        return read_provenance(path, progress)
    except ProvenanceError as e:
        raise VerifyError(f"verify: {e.message}") from None
    except Exception as e:  # forged provenance never hides the mark: damaged, reported
        log.debug("reading the provenance of %s failed", path, exc_info=True)
        return ProvenanceReport(True, False, None, detail=f"DAMAGED provenance ({e!r:.120})")


def _read_file(path: Path, limit: int) -> Frames:
    """The frames of an image or video file (at most ``limit``); VerifyError when it
    cannot be opened as either."""
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        _check_image_size(path)
        with decoder_messages() as said:
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        reason = decoder_reason(said)
        if image is not None:
            read = Frames(iter([np.ascontiguousarray(image)]), 1.0, "image")
            if reason:
                read.note.append(f"the picture is damaged ({reason}): verified on what decodes")
            return read
        why = f" ({reason})" if reason else ""
        return Frames(iter(()), 1.0, "image", [f"not a readable image{why} (damaged?)"])
    try:
        container = av.open(str(path))
    except Exception as e:
        raise VerifyError(f"verify: cannot read {path}: {_av_reason(e)}") from None
    if not container.streams.video:
        container.close()
        raise VerifyError(f"verify: cannot read {path}: it holds no video")
    stream = container.streams.video[0]
    fps = float(stream.average_rate or stream.guessed_rate or 30)
    read = Frames(iter(()), fps, "video", count=_frame_count(stream, fps))
    read.frames = _decode(container, limit, read.note)
    return read


def _frame_count(stream: Any, fps: float) -> int | None:
    """The frames a video stream's header promises, or its duration times ``fps`` (a
    fragmented MP4 counts none); None when it says neither."""
    if stream.frames:
        return int(stream.frames)
    if stream.duration and stream.time_base:
        return max(1, round(float(stream.duration * stream.time_base) * fps))
    return None


def _check_image_size(path: Path) -> None:
    """VerifyError before decoding an image whose header claims more pixels than any
    image LiveCam decodes (as a source photo is checked)."""
    try:
        with path.open("rb") as f:
            head = np.frombuffer(f.read(1 << 16), np.uint8)
    except OSError as e:
        raise VerifyError(f"verify: cannot read {path}: {e.strerror or e}") from None
    size = header_size(head)
    if size is not None and size[0] * size[1] > MAX_DECODE_PIXELS:
        raise VerifyError(
            f"verify: {path} claims {size[0]}x{size[1]} pixels, too large to decode "
            f"(at most {MAX_DECODE_PIXELS // 1_000_000} megapixels)"
        )


def _decode(container: Any, limit: int, note: list[str]) -> Iterator[Frame]:
    """Decode up to ``limit`` frames; a decoding error ends the frames with a ``note``."""
    count = 0
    try:
        for picture in container.decode(video=0):
            yield np.ascontiguousarray(picture.to_ndarray(format="bgr24"))
            count += 1
            if count >= limit:
                return
    except Exception as e:
        note.append(f"decoding stopped after {count} frames: {_av_reason(e)}")
    finally:
        container.close()


def _av_reason(error: Exception) -> str:
    """PyAV's reason, without its error number and the file name it appends."""
    reason = getattr(error, "strerror", None)  # OSError and av.FFmpegError have it
    if isinstance(reason, str) and reason:
        return one_line(reason).lower()
    return one_line(str(error)) or type(error).__name__


def _read_device(target: str, limit: int) -> Frames:
    """Frames from a camera, a virtual camera or a stream (at most ``limit``)."""
    from livecam.sources import make_source
    from livecam.sources.base import EndOfStream

    source = make_source(SourceConfig(spec=target))
    source.open()  # SourceError (a LivecamError) when it cannot

    def frames() -> Iterator[Frame]:
        try:
            for _ in range(limit):
                yield source.read()
        except EndOfStream:
            return
        finally:
            source.close()

    return Frames(frames(), source.fps or 30.0, "camera")


def payload_text(payload: Payload | None) -> str:
    if payload is None:
        return "unreadable"
    return f"LiveCam mark v{payload.version}, session {payload.session_id:08x}"


def report_text(v: Verdict) -> str:
    """The report: the mark, the provenance and the verdict, a few lines."""
    lines = [f"{v.target} ({v.kind})", f"  invisible mark: {mark_text(v.mark, v.window)}"]
    lines += [f"  note: {n}" for n in v.notes]
    p = v.provenance
    if p is None:
        lines.append("  provenance: none (a live camera carries no manifest)")
    elif not p.present:
        lines.append(f"  provenance: none ({p.detail})")
    else:
        what = "C2PA manifest" if p.kind == "c2pa" else "LiveCam container tag"
        if p.kind == "c2pa":
            valid = "signature valid" if p.signature_checked else "signature INVALID"
            lines.append(f"  {what}: present, {valid}; {p.detail}")
        else:
            lines.append(f"  {what}: present, not signed; {p.detail}")
        lines.append(f"  AI action: {p.ai_action or 'none declared'}")
        if p.watermark and p.watermark != "none":
            lines.append(f"  it names the mark: {p.watermark}{_same_session(p, v.mark)}")
        if p.models:
            models = ", ".join(_model_text(model) for model in p.models)
            lines.append(f"  preset {p.preset or '?'}; models: {models}")
    verdict = "MARKED as AI-modified" if v.marked else "NOT marked as AI-modified"
    if v.mark.frames_total == 0 and not v.marked:
        verdict = "UNKNOWN: no frame decodes to look for the mark in, and no valid manifest"
    lines.append(f"  verdict: {verdict}")
    return "\n".join(lines)


def mark_text(m: StreamDetection, window: int) -> str:
    """What the frames say of the mark: found (in which windows), too weak (seen in some
    frames, but in no window in more than half of them), not found, or not checked."""
    if m.frames_total == 0:
        return "not checked (no frame decodes)"
    seen = f"{m.frames_marked} of {m.frames_total} frames"
    windows = f"{m.windows_total} windows of {window} frames"
    if m.marked:
        payload = payload_text(m.payload)
        return f"FOUND in {seen} ({m.windows_marked} of {windows}), payload: {payload}"
    if m.frames_marked == 0:
        return f"not found (in 0 of {m.frames_total} frames)"
    return (
        f"too weak: seen in only {seen}, in none of the {windows} in more than half its "
        "frames (not counted as marked)"
    )


def _same_session(p: ProvenanceReport, m: StreamDetection) -> str:
    """Whether the mark found in the frames is the one the provenance names."""
    if m.payload is None:
        return ""
    same = p.watermark.endswith(f"session {m.payload.session_id:08x}")
    return " (the one found)" if same else " (NOT the one found in the frames)"


def _model_text(model: dict[str, str]) -> str:
    digest = model.get("sha256", "")
    return f"{model.get('name', '?')}" + (f" (sha256 {digest[:12]}...)" if digest else "")
