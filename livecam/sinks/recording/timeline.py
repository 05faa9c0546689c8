"""Presentation timestamps of a recording, from its frames' capture times."""

from __future__ import annotations

import math
from fractions import Fraction

#: presentation timestamps are counted in this unit
TIME_BASE = Fraction(1, 90000)


class Timeline:
    """Presentation timestamps (in ``TIME_BASE`` units) of a recording's frames.

    From capture times when given (the first frame is 0), so the file plays in real time;
    without one, a frame comes one output period after the previous. Always increasing.

    Timestamps sit on the grid of the nominal frame period (a capture time goes to the
    nearest period, at most half a period away), so every gap is a whole number of
    periods and players and probes read the real frame rate (``r_frame_rate`` 30/1, not
    the 90000/1 of jittery timestamps). A frame whose period already has one (a source
    faster than the nominal rate) keeps its own time, off the grid (a writer timed to the
    frame period then leaves it out).
    """

    def __init__(self, fps: float) -> None:
        self.period = float(1 / (TIME_BASE * Fraction(fps).limit_denominator(1_000_000)))
        self.last: int | None = None
        self._origin_ns: int | None = None
        self._slot = -1.0  # the period the last frame sits in (fractional: off the grid)

    def next_pts(self, t_capture_ns: int | None) -> int:
        following = math.floor(self._slot) + 1
        if t_capture_ns is None:
            slot = following
        else:
            if self._origin_ns is None:
                self._origin_ns = t_capture_ns - self._to_ns(round(following * self.period))
            raw = (t_capture_ns - self._origin_ns) * 1e-9 / float(TIME_BASE)
            slot = round(raw / self.period)
        if slot >= following:
            pts = round(slot * self.period)
            self._slot = slot
        else:  # its period is taken: its own time, off the grid
            pts = round(raw)
            if self.last is not None and pts <= self.last:
                pts = self.last + 1
            self._slot = max(self._slot, pts / self.period)
        self.last = pts
        return pts

    def _to_ns(self, pts: int) -> int:
        return round(pts * TIME_BASE * 10**9)

    @property
    def duration_s(self) -> float:
        """Length of the recording so far: up to the last frame plus one period."""
        return 0.0 if self.last is None else float((self.last + self.period) * TIME_BASE)
