"""A repeated camera frame gets the same output: what the swap stage keeps of its last frame.

Many webcams and phones repeat frames (a 25 fps camera on a 30 fps stream sends every
sixth frame twice). The tracker answers a repeat with the very same faces; the stage then
gives the repeat its last output again instead of rendering it anew, so nothing that
changes over time (smoothing, colour statistics) moves on a picture that did not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from livecam.types import Face, Frame

Picks = Sequence[tuple[Face, int]]


class LastOutput:
    """The last camera frame with faces picked, its picks and its output frame (copies).

    A frame ``repeats`` the last one when its picks are the same face records (the tracker
    held them) and its pixels are exactly the same; ``output`` is then a copy of the last
    output. One instance per stage, used on one thread.
    """

    def __init__(self) -> None:
        self._input: Frame | None = None
        self._output: Frame | None = None
        self._picks: list[tuple[Face, int]] = []
        self.swapped: int | None = 0
        self.reused = 0

    def clear(self) -> None:
        self._input = self._output = None
        self._picks = []

    def repeats(self, frame: Frame, picks: Picks) -> bool:
        """Whether ``frame`` with ``picks`` repeats the last remembered frame exactly."""
        return self._input is not None and is_repeat(frame, picks, self._input, self._picks)

    def mark(self, frames: Sequence[Frame], picks: Sequence[Picks]) -> list[bool]:
        """Per frame of a batch (in order), whether it repeats the frame before it (the
        first: the last remembered one)."""
        out = [self.repeats(frames[0], picks[0])] if frames else []
        for i in range(1, len(frames)):
            out.append(is_repeat(frames[i], picks[i], frames[i - 1], picks[i - 1]))
        return out

    def output(self) -> Frame:
        assert self._output is not None
        return self._output.copy()

    def remember(
        self, frame: Frame, picks: Picks, output: Frame, swapped: int | None, reused: int
    ) -> None:
        """Keep copies of a frame with faces picked and of its output."""
        if not picks:
            self.clear()
            return
        self._input = _copy_into(self._input, frame)
        self._output = _copy_into(self._output, output)
        self._picks = list(picks)
        self.swapped, self.reused = swapped, reused


def is_repeat(frame: Frame, picks: Picks, last: Frame, last_picks: Picks) -> bool:
    """Whether a frame with faces picked repeats the one before it: the same face records
    with the same sources (the tracker held them) and exactly the same pixels."""
    if not picks or len(picks) != len(last_picks):
        return False
    same = all(
        face is old and source == old_source
        for (face, source), (old, old_source) in zip(picks, last_picks, strict=True)
    )
    return same and last.shape == frame.shape and bool(np.array_equal(last, frame))


def _copy_into(buffer: Frame | None, frame: Frame) -> Frame:
    if buffer is None or buffer.shape != frame.shape or buffer.dtype != frame.dtype:
        buffer = np.empty_like(frame)
    np.copyto(buffer, frame)
    return buffer
