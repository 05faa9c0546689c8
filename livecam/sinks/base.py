"""The Sink interface: where finished frames go (virtual camera, window, file, null)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from livecam.types import Frame


class Sink(ABC):
    """Consumes finished frames. Driven by exactly one output thread.

    ``open`` is called once with the size of the first frame; every later frame has
    that size. ``send`` may raise SinkError; the output thread reports it as an event.
    """

    name: str = "sink"
    #: True for sinks that need a steady rate (virtual cameras, windows): in a paced run
    #: the output thread sends to them exactly once per output period (the next new
    #: frame, or the last one again). False: every new frame once, as soon as it is done.
    wants_repeats: bool = True
    #: set by sinks the user can close (a preview window); the output thread then drops
    #: the sink, and when no sink is left the stream ends
    closed: bool = False
    #: a video recording (it can carry a converted file's sound, see ``take_audio_from``)
    records_video: bool = False
    #: a still image file: it keeps one frame, the last one sent
    still_file: bool = False
    #: the file this sink finished writing (recorders, image writers), once it is on disk
    written: Path | None = None
    #: the file a video recording is being written to now, by its real name (a new one
    #: with a timestamp when the chosen file existed), from ``open`` until it is finished
    #: or fails; None otherwise (the panel's REC indicator shows it)
    recording: Path | None = None

    @abstractmethod
    def open(self, width: int, height: int, fps: float) -> None:
        """Prepare for frames of ``width`` x ``height`` at ``fps``; raise SinkError on failure."""

    @abstractmethod
    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        """Deliver one frame (uint8 BGR (H, W, 3), C-contiguous).

        ``t_capture_ns`` is the frame's capture time (``time.perf_counter_ns``) in a
        real-time run; in an unpaced run, the frame's timestamp in its file (a video
        source's ``media_ns``), or None when there is none: a recorder then spaces frames
        one output period apart. Either way only differences between frames matter.

        ``swapped``: the swap changed this frame (a file sink counts it for its signed
        manifest; a repeat of a frame carries the frame's own answer).
        """

    def check(self) -> None:  # noqa: B027 - optional hook
        """Raise SinkError when ``open`` would fail for a reason found without opening for
        real (nothing written, no window shown): start-up calls it, when another part has
        already failed, to report every cause at once. Default: nothing to check."""

    def take_audio_from(self, path: Path) -> None:  # noqa: B027 - optional hook
        """The run converts the media file ``path`` (every frame, at the file's own
        timestamps): a sink that can carry sound copies its audio. Called before ``open``."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Flush and release. Safe to call twice, and before ``open``."""
