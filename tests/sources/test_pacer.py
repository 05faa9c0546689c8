"""The capture clock of paced sources (synthetic, images, screens) against a recording's
grid: a capture thread that falls behind must not hand out a burst of frames."""

from __future__ import annotations

import threading
import time

from livecam.sinks.recording.timeline import Timeline
from livecam.sources.base import Pacer

FPS = 30.0
PERIOD_NS = 1e9 / FPS


def test_a_capture_thread_that_falls_behind_loses_no_frame_of_a_recording() -> None:
    """One read takes 3.5 periods (a loaded machine): the frames after it come a period
    apart again, not three back to back, so a recording (one frame a period of its
    grid, stamped at capture) keeps every frame."""
    pacer, stop, timeline = Pacer(FPS), threading.Event(), Timeline(FPS)
    stamps = []
    for i in range(12):
        assert pacer.wait(stop)
        if i == 3:
            time.sleep(3.5 / FPS)  # a slow read: the capture thread is late, not waiting
        stamps.append(time.perf_counter_ns())
    in_one_period = max(sum(1 for u in stamps if t <= u < t + PERIOD_NS) for t in stamps)
    left_out = [i for i, t in enumerate(stamps) if timeline.next_pts(t) is None]
    assert left_out == []
    assert in_one_period <= 2, "a burst of frames after the slow read"
