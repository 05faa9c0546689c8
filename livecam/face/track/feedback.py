"""Feedback when no face is swapped: ``NoFaceWatch`` follows the frames the face pipeline
searched and says, rate-limited, how long nothing was swapped and the likely cause.

Causes, most specific first: faces found but none selected; the picture too dark (mean
brightness); the face got too small (the last one seen was near the detector's limit);
it left the picture (last seen at an edge); it was lost while large (turned away or
covered); or no face was seen at all. The app subscribes one watch to telemetry
(``livecam.app.watch_no_face``), which feeds it every sent frame the swap stage worked on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from livecam.types import Event, Face, Frame

ORIGIN = "swap"
SMALL_FACE = 0.08  # a face last seen narrower than this share of the frame width "got small"
EDGE = 0.02  # a box this close to a border (share of the frame size) touches the edge
DARK_LUMA = 40.0  # mean brightness (0-255) below which the picture is too dark
SMALL_HINT = "move closer to the camera, or raise --detect-size (e.g. 800; faces from ~3 %)"
PANEL_SMALL_HINT = "move closer to the camera (faces narrower than ~6 % of the picture are lost)"


def mean_luma(frame: Frame) -> float:
    """Mean brightness (Rec. 601 luma, 0-255) of a frame, from every 8th pixel."""
    sample = frame[::8, ::8].reshape(-1, 3).astype(np.float32)
    return float((sample @ np.array([0.114, 0.587, 0.299], np.float32)).mean())


class NoFaceWatch:
    """Says when no face has been swapped for ``after_s`` seconds (capture time), then
    every ``repeat_s`` while it lasts; once faces are swapped again, says so once.

    ``observe`` is called for every frame the face pipeline searched, in order, from one
    thread; it returns the event to emit, if any.
    """

    def __init__(self, after_s: float = 5.0, repeat_s: float = 30.0) -> None:
        if after_s <= 0 or repeat_s <= 0:
            raise ValueError(f"after_s and repeat_s must be > 0, got {after_s}, {repeat_s}")
        self.after_ns = round(after_s * 1e9)
        self.repeat_ns = round(repeat_s * 1e9)
        self._since_ns: int | None = None  # start of the stretch without a swap
        self._next_ns = 0  # when to warn next within the stretch
        self._warned = False
        self._last_seen: tuple[float, bool] | None = None  # (width share, at an edge)

    def observe(self, t_ns: int, frame: Frame, faces: Sequence[Face], swapped: int) -> Event | None:
        """Take one searched frame (captured at ``t_ns``) with the faces found in it and
        how many were swapped."""
        if faces:
            self._last_seen = _describe(max(faces, key=lambda f: f.area), frame.shape)
        if swapped > 0:
            event = None
            if self._warned and self._since_ns is not None:
                gone_s = (t_ns - self._since_ns) / 1e9
                event = Event("info", ORIGIN, f"faces swapped again after {gone_s:.1f} s")
            self._since_ns, self._warned = None, False
            return event
        if self._since_ns is None:
            self._since_ns, self._next_ns = t_ns, t_ns + self.after_ns
        if t_ns < self._next_ns:
            return None
        self._next_ns = t_ns + self.repeat_ns
        self._warned = True
        return self._event((t_ns - self._since_ns) / 1e9, frame, len(faces))

    def _event(self, gone_s: float, frame: Frame, found: int) -> Event:
        if found:
            return Event(
                "warning",
                ORIGIN,
                f"no face swapped for {gone_s:.1f} s: {found} face(s) found, none selected",
                "with --select reference, none matches the reference photo: use another "
                "reference photo or --select one",
                panel_hint="none matches the reference photo: pick another reference photo "
                "or set Replace to one in the Processing tab",
            )
        cause, hint = self._cause(frame)
        return Event(
            "warning",
            ORIGIN,
            f"no face found for {gone_s:.1f} s: {cause}",
            hint,
            panel_hint=hint.replace(SMALL_HINT, PANEL_SMALL_HINT),  # the panel has no option
        )

    def _cause(self, frame: Frame) -> tuple[str, str]:
        luma = mean_luma(frame)
        if luma < DARK_LUMA:
            return (
                f"the picture is too dark (mean brightness {luma:.0f} of 255)",
                "light your face from the front (a lamp behind the camera)",
            )
        if self._last_seen is None:
            return (
                "no face in the picture so far (faces narrower than ~6 % of the frame width "
                "are not found)",
                f"face the camera in good light; {SMALL_HINT}",
            )
        share, at_edge = self._last_seen
        if share < SMALL_FACE:
            return f"the face got too small (last seen {share:.0%} of the frame width)", SMALL_HINT
        if at_edge:
            return "the face left the picture (last seen at its edge)", "move back into view"
        return (
            f"the face was lost while large ({share:.0%} of the frame width): turned away, "
            "covered, or in profile",
            "face the camera (the detector finds frontal and three-quarter faces)",
        )


def _describe(face: Face, shape: tuple[int, ...]) -> tuple[float, bool]:
    """(width as a share of the frame width, whether its box touches an edge)."""
    h, w = shape[:2]
    x1, y1, x2, y2 = (float(v) for v in face.bbox)
    mx, my = EDGE * w, EDGE * h
    at_edge = x1 <= mx or y1 <= my or x2 >= w - mx or y2 >= h - my
    return face.width / w, at_edge
