"""Video files (any container/codec OpenCV's FFmpeg reads, animated GIF included).

A file plays once and then ends the run, like a file (``cfg.loop``: again from the start,
for ever). Every frame carries its timestamp in the file (``media_ns``), so a conversion
keeps the file's timing; a file that ends well before the frame count its header
promises (truncated or damaged) is reported once.
"""

from __future__ import annotations

import logging
from pathlib import Path

import cv2

from livecam.config.schema import SourceConfig
from livecam.errors import LivecamError, SourceError, SourceGone
from livecam.sources.base import EndOfStream
from livecam.sources.cv_capture import CvCaptureSource, RawFrame
from livecam.userfiles.decoder_messages import decoder_messages

log = logging.getLogger(__name__)

ASPECT_TOLERANCE = 0.01  # width/height difference under which a clip fills the frame

REENCODE_HINT = (
    "check the file plays in a media player; re-encode it to H.264 MP4 "
    "(e.g. ffmpeg -i in -c:v libx264 out.mp4)"
)


def _truncated(frames: int, expected: int | None) -> bool:
    """Whether a pass that delivered ``frames`` of ``expected`` ended early (more than
    2 % and 2 frames short: headers of some formats only estimate the count)."""
    return expected is not None and frames + max(2, expected // 50) < expected


def _without_video(path: Path) -> str | None:
    """What a file that opens as media but holds no video stream holds instead ("only
    sound: aac"), or None (it holds video, or it does not open as media at all)."""
    import av  # loaded only for a file OpenCV cannot open

    try:
        with av.open(str(path)) as container:
            if container.streams.video:
                return None
            sound = [s.codec_context.name for s in container.streams.audio]
            others = len(container.streams) - len(sound)
    except Exception:  # not media at all (or unreadable): the caller's "corrupt" holds
        return None
    if sound:
        return f"only sound: {', '.join(sound)}"
    return f"{others} stream(s) of other kinds" if others else "no streams at all"


class VideoSource(CvCaptureSource):
    """Decodes a file frame by frame; paced by the capture thread (or not at all, in a
    conversion). Ends with EndOfStream after the last frame unless ``cfg.loop``.

    ``fps`` is the file's own rate (``cfg.fps`` when the file reports none). Frames are
    fitted whole into ``cfg.size`` when set (``fit_frame`` contain: a portrait or 4:3
    clip gets bars at its sides, never loses its top and bottom; said once at open),
    else made even by dropping a last odd row/column.
    ``media_ns`` runs on across loops (each pass starts where the previous one ended).
    """

    name = "video"
    self_paced = False
    fit = "contain"

    def __init__(self, path: str | Path, cfg: SourceConfig | None = None) -> None:
        super().__init__(cfg or SourceConfig(spec=str(path)))
        self.path = Path(path)
        self.media_path = self.path
        self.finite = not self.cfg.loop
        self._expected: int | None = None  # frames per pass, from the file's header
        self._frames_this_pass = 0
        self._pass_start_ns = 0  # media time where the current pass starts
        self._media: int | None = None
        self._notices: list[LivecamError] = []
        self._reported_truncation = False

    @property
    def label(self) -> str:
        return f"video source {self.path}"

    @property
    def frame_count(self) -> int | None:
        return None if self.cfg.loop else self._expected

    @property
    def media_ns(self) -> int | None:
        return self._media

    def take_notices(self) -> list[LivecamError]:
        notices, self._notices = self._notices, []
        return notices

    def _unreadable(self, why: str) -> SourceError:
        return SourceError(f"cannot play video file {self.path}: {why}", REENCODE_HINT)

    def _start(self) -> tuple[cv2.VideoCapture, RawFrame]:
        """Open the file from its start and decode the first frame."""
        if not self.path.is_file():
            gone = SourceGone if self._media is not None else SourceError  # played, then gone
            raise gone(f"video file {self.path} does not exist", "check the path")
        with decoder_messages():  # OpenCV's own lines when no backend opens it
            cap = cv2.VideoCapture(str(self.path))
        if not cap.isOpened():
            cap.release()
            try:
                self.path.open("rb").close()
            except OSError as e:  # not damage: no permission to read it
                raise SourceError(
                    f"cannot read video file {self.path}: {e.strerror or e}",
                    "check that you may read the file (its permissions)",
                ) from None
            no_video = _without_video(self.path)
            if no_video is not None:
                raise SourceError(
                    f"cannot play {self.path}: it has no video stream ({no_video})",
                    "give a file with pictures: a video file, a GIF or a photo",
                )
            raise self._unreadable("unknown format or corrupt file")
        ok, raw = cap.read()
        if not ok or raw is None:
            cap.release()
            raise self._unreadable("no frame could be decoded")
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        self._expected = count if count > 0 else None
        self._frames_this_pass = 0
        self._stamp(cap)
        return cap, raw

    def _stamp(self, cap: cv2.VideoCapture) -> None:
        """Count the frame just decoded and note its timestamp in the file."""
        period_ns = round(1e9 / self.fps)
        previous = self._media
        pos = cap.get(cv2.CAP_PROP_POS_MSEC)
        t_ns = self._pass_start_ns + round(pos * 1e6)
        if self._frames_this_pass > 0 and previous is not None and t_ns <= previous:
            t_ns = previous + period_ns  # a container without usable timestamps
        self._media = t_ns
        self._frames_this_pass += 1

    def open(self) -> None:
        self._pass_start_ns, self._media = 0, None
        super().open()
        log.info(
            "video source %s: %.3f fps, %s frames%s",
            self.path,
            self.fps,
            self._expected if self._expected is not None else "unknown",
            ", looped" if self.cfg.loop else "",
        )
        self._say_fit()

    def _say_fit(self) -> None:
        """Say when the clip's aspect differs from the asked size: it is fitted whole."""
        size = self.cfg.size
        cap = self._cap
        if size is None or cap is None:
            return
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        if w and h and abs(w / h - size[0] / size[1]) > ASPECT_TOLERANCE:
            bars = "at its sides" if w / h < size[0] / size[1] else "above and below it"
            log.info(
                "video source %s is %dx%d: fitted whole into %dx%d with bars %s (the size "
                "%dx%d, or none, fills the frame)",
                self.path,
                w,
                h,
                *size,
                bars,
                w - w % 2,
                h - h % 2,
            )

    def _after_read(self, ok: bool, raw: RawFrame | None) -> RawFrame:
        if ok and raw is not None and self._cap is not None:
            self._stamp(self._cap)
            return raw
        self._end_of_pass()
        if not self.cfg.loop:
            raise EndOfStream(str(self.path))
        last = self._media if self._media is not None else self._pass_start_ns
        self._pass_start_ns = last + round(1e9 / self.fps)
        return self._replay()

    def _end_of_pass(self) -> None:
        """Report (once) a pass that ended well before the promised frame count."""
        if self._reported_truncation or not _truncated(self._frames_this_pass, self._expected):
            return
        self._reported_truncation = True
        self._notices.append(
            SourceError(
                f"video file {self.path} ended after {self._frames_this_pass} of "
                f"{self._expected} frames: it is truncated or damaged",
                REENCODE_HINT,
            )
        )
