"""Presentation timestamps of a recording, from its frames' capture times."""

from __future__ import annotations

from fractions import Fraction

#: presentation timestamps are counted in this unit
TIME_BASE = Fraction(1, 90000)


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
