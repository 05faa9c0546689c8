"""Presentation timestamps of a recording, from its frames' capture times."""

from __future__ import annotations

from fractions import Fraction

#: presentation timestamps are counted in this unit
TIME_BASE = Fraction(1, 90000)


#: how far ahead of its capture time a frame may be put on the grid, in periods: a frame
#: whose period is taken moves to the next free one when that is at most this far ahead,
#: and is left out otherwise. A paced source (frames late, never early, against a first
#: frame up to half a period late) so never loses a frame; a source faster than the rate
#: keeps about one frame a period
MAX_AHEAD_PERIODS = 1.5


class Timeline:
    """Presentation timestamps (in ``TIME_BASE`` units) of a recording's frames.

    From capture times when given (the first frame is 0), so the file plays in real time;
    without one, a frame comes one output period after the previous. Always increasing.

    Every timestamp sits on the grid of the nominal frame period, whatever the load, so
    every gap is a whole number of periods and players and probes read the real frame
    rate (``r_frame_rate`` 30/1, not the 90000/1 or 120/1 of jittery timestamps). A capture
    time goes to the nearest period; when that period already has a frame (a frame that
    came early after a late one), it goes to the next free period if that is at most
    ``MAX_AHEAD_PERIODS`` after its capture time, and is left out otherwise (``None``: a
    burst or a source faster than the nominal rate has more frames than the file has
    periods). A conversion (``exact``) keeps its file's own times instead, to the tick.
    """

    def __init__(self, fps: float, *, exact: bool = False) -> None:
        self.period = float(1 / (TIME_BASE * Fraction(fps).limit_denominator(1_000_000)))
        #: ``exact``: the times are a file's own (a conversion): kept as they are, to the
        #: ``TIME_BASE`` tick, off any grid (a variable-frame-rate clip keeps its timing)
        self.exact = exact
        self.last: int | None = None
        self._origin_ns: int | None = None
        self._slot = -1  # the period the last frame sits in

    def next_pts(self, t_capture_ns: int | None) -> int | None:
        """The frame's timestamp, or None when it is left out (its period and the next
        are taken)."""
        if self.exact and t_capture_ns is not None:
            return self._exact_pts(t_capture_ns)
        following = self._slot + 1
        if t_capture_ns is None:
            slot = following
        else:
            if self._origin_ns is None:
                self._origin_ns = t_capture_ns - self._to_ns(round(following * self.period))
            at = (t_capture_ns - self._origin_ns) * 1e-9 / float(TIME_BASE) / self.period
            slot = max(round(at), following)
            if slot - at > MAX_AHEAD_PERIODS:
                return None
        self._slot = slot
        self.last = round(slot * self.period)
        return self.last

    def _exact_pts(self, t_ns: int) -> int:
        """``t_ns`` after the first frame's, in ``TIME_BASE`` ticks (after the last one)."""
        if self._origin_ns is None:
            self._origin_ns = t_ns
        pts = round((t_ns - self._origin_ns) * 1e-9 / float(TIME_BASE))
        self.last = pts if self.last is None else max(pts, self.last + 1)
        self._slot = round(self.last / self.period)
        return self.last

    def _to_ns(self, pts: int) -> int:
        return round(pts * TIME_BASE * 10**9)

    @property
    def duration_s(self) -> float:
        """Length of the recording so far: up to the last frame plus one period."""
        return 0.0 if self.last is None else float((self.last + self.period) * TIME_BASE)
