"""Video files (any container/codec OpenCV's FFmpeg reads, animated GIF included), looped."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2

from livecam.config import SourceConfig
from livecam.errors import SourceError
from livecam.sources.cv_capture import CvCaptureSource, RawFrame

log = logging.getLogger(__name__)


class VideoSource(CvCaptureSource):
    """Decodes a file and starts again at the end; paced by the capture thread.

    ``fps`` is the file's own rate (``cfg.fps`` when the file reports none). Frames are
    fitted to ``cfg.size`` when set, else made even by dropping a last odd row/column.
    """

    name = "video"
    self_paced = False

    def __init__(self, path: str | Path, cfg: SourceConfig | None = None) -> None:
        super().__init__(cfg or SourceConfig(spec=str(path)))
        self.path = Path(path)

    @property
    def label(self) -> str:
        return f"video source {self.path}"

    def _unreadable(self, why: str) -> SourceError:
        return SourceError(
            f"cannot play video file {self.path}: {why}",
            "check the file plays in a media player; re-encode it to H.264 MP4 "
            "(e.g. ffmpeg -i in -c:v libx264 out.mp4)",
        )

    def _start(self) -> tuple[cv2.VideoCapture, RawFrame]:
        """Open the file from its start and decode the first frame."""
        if not self.path.is_file():
            raise SourceError(f"video file {self.path} does not exist", "check the path")
        cap = cv2.VideoCapture(str(self.path))
        if not cap.isOpened():
            cap.release()
            raise self._unreadable("unknown format or corrupt file")
        ok, raw = cap.read()
        if not ok or raw is None:
            cap.release()
            raise self._unreadable("no frame could be decoded")
        return cap, raw

    def open(self) -> None:
        super().open()
        log.info("video source %s: %.3f fps", self.path, self.fps)

    def _after_read(self, ok: bool, raw: RawFrame | None) -> RawFrame:
        return raw if ok and raw is not None else self._replay()  # end of file: loop
