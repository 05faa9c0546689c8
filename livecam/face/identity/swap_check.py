"""The swap check: does the output face carry the source's identity, or still the camera's?

About once a second (of frame time) the swap stage offers one swapped face: the camera
frame, the output frame and the face's record. A worker thread of its own (lowered
priority where the OS allows it) crops the face from both frames and embeds the two crops
with the judge, in one call; the source face is embedded once. The judge is the bundled
MobileFaceNet whatever the preset (``livecam.face.build.JUDGE_MODEL``): it ships with every
install and no swapper was trained against it, where ArcFace, the standard and quality
presets' own recognizer, is what inswapper and hyperswap were trained to please. The
inference thread only compares a time and keeps references to two frames (no copy:
stages never write into a packet's frame): it never waits for the check, and a sample
offered while the worker is busy is skipped.

**Swap strength** (0-100) is how far the output moved from the camera's identity toward
the source's, on the recognizer's cosine similarity. With ``s = cos(out, src)``,
``c = cos(out, cam)`` and ``b = cos(src, cam)``::

    strength = 100 * clip((s - c + 1 - b) / (2 * (1 - b)), 0, 1)

It is the margin ``s - c`` rescaled so that an output identical to the camera face
(``s = b``, ``c = 1``) scores 0, an output identical to the source (``s = 1``, ``c = b``)
scores 100, and an output as close to one as to the other (margin 0) scores 50. It is not
defined (None) when the source and the camera face are nearly the same person
(``1 - b < MIN_SPREAD``).

The swap is **not taking** while the strength stays below ``weak_below`` (25: the output
is at least three times closer to the camera's identity than to the source's, in margin
terms). After ``hold_s`` (2 s) of frame time of such samples, ONE warning event names the
likely causes; an info event says so when the swap takes again.

A judge that **cannot tell the source photo from the camera face** (strength None: the
same person, or a recognizer that sees every face alike) cannot say whether the swap
takes: after ``hold_s`` of such samples that is ONE warning of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from livecam.face.identity.metrics import cosine
from livecam.face.parts import Recognizer
from livecam.types import Event, Face, FaceWork, Frame, FrameContext, SwapReading

if TYPE_CHECKING:
    from livecam.config.schema import SwapConfig
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

INTERVAL_S = 1.0
"""Frame time between two samples."""
HOLD_S = 2.0
"""Frame time the swap must stay weak before the warning."""
WEAK_BELOW = 25.0
"""Swap strength under which the output keeps the camera's identity."""
MIN_SPREAD = 0.1
"""``1 - cos(src, cam)`` under which the strength is not defined (the same person)."""
CROP_GROW = 0.8
"""A face's crop reaches this many box sizes beyond its box on each side."""
NICE = 10
"""How much lower the worker thread's priority is (Linux: per-thread niceness)."""
IDLE_S = 5.0
"""The worker thread ends after this long without a sample (the next one starts it again)."""


def swap_strength(cos_source: float, cos_camera: float, cos_source_camera: float) -> float | None:
    """The 0-100 swap strength (see the module's docstring); None when the source and the
    camera face are nearly the same person."""
    spread = 1.0 - cos_source_camera
    if spread < MIN_SPREAD:
        return None
    value = (cos_source - cos_camera + spread) / (2.0 * spread)
    return 100.0 * min(max(value, 0.0), 1.0)


class CheckReport(Protocol):
    """Where readings and events go (``telemetry.hub.Telemetry`` is one)."""

    def swap_check(self, reading: SwapReading | None) -> None: ...

    def event(self, event: Event) -> None: ...


def likely_causes(cfg: SwapConfig | None, neural: bool) -> tuple[str, ...]:
    """The likely causes of a swap that does not take, the ones the settings point at first."""
    causes: list[str] = []
    if cfg is not None and cfg.masks.opacity == 0:
        causes.append("the opacity is 0 (--opacity)")
    if cfg is not None and neural and cfg.neural.identity_weight == 0:
        causes.append("the identity weight is 0 (--identity-weight)")
    if neural:
        causes.append(
            "a broken or wrong swapper file (a community fp16 inswapper whose `emap` is "
            "missing or moved gives a near-copy of the camera face)"
        )
    else:
        causes.append("a source photo whose face is too small, turned or covered")
    if cfg is None or cfg.masks.opacity != 0:
        causes.append("the opacity near 0 (--opacity)")
    if neural and (cfg is None or cfg.neural.identity_weight != 0):
        causes.append("the identity weight near 0 (--identity-weight)")
    causes.append("a mask that hides the face (--mask, --mouth-mask)")
    return tuple(causes)


def face_region(frame: Frame, face: Face, grow: float = CROP_GROW) -> tuple[Frame, Face]:
    """A copy of the part of ``frame`` around ``face`` (``grow`` box sizes beyond its box
    on each side, clipped) and the face moved into the crop's pixels."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in face.bbox)
    pad = grow * max(x2 - x1, y2 - y1)
    left, top = max(int(x1 - pad), 0), max(int(y1 - pad), 0)
    right, bottom = min(int(x2 + pad) + 1, w), min(int(y2 + pad) + 1, h)
    crop = np.ascontiguousarray(frame[top:bottom, left:right])
    shift = np.array([left, top], np.float32)
    moved = dataclasses.replace(
        face,
        bbox=(np.asarray(face.bbox, np.float32) - np.tile(shift, 2)).astype(np.float32),
        kps=(np.asarray(face.kps, np.float32) - shift).astype(np.float32),
        landmarks=None
        if face.landmarks is None
        else (np.asarray(face.landmarks, np.float32) - shift).astype(np.float32),
        embedding=None,
    )
    return crop, moved


@dataclass
class _Job:
    camera: Frame
    output: Frame
    face: Face
    source_index: int
    t_s: float


class SwapCheck:
    """The live swap check of one swap stage (see the module's docstring); ``recognizer``
    is its judge, ``judge`` its name in readings and messages.

    ``offer`` (inference thread) hands over a sample when one is due; ``measure`` is the
    check itself (synchronous: the worker thread and ``livecam check`` call it). Readings
    and events go to the ``CheckReport`` given to ``attach``; ``latest`` is the newest
    reading. The worker starts with a sample; it ends with ``close`` or after ``IDLE_S``
    without one.
    """

    def __init__(
        self,
        recognizer: Recognizer,
        sources: Sequence[SourceFace],
        *,
        causes: Sequence[str] = (),
        judge: str = "MobileFaceNet",
        interval_s: float = INTERVAL_S,
        hold_s: float = HOLD_S,
        weak_below: float = WEAK_BELOW,
    ) -> None:
        self.recognizer = recognizer
        self.sources = tuple(sources)
        self.causes = tuple(causes) or likely_causes(None, neural=True)
        self.judge = judge
        self.interval_s = interval_s
        self.hold_s = hold_s
        self.weak_below = weak_below
        self._source_embeddings: dict[int, np.ndarray] = {}
        self._report: CheckReport | None = None
        self._lock = threading.Condition()
        self._job: _Job | None = None
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._next_t: float | None = None
        self._last_t: float | None = None
        self._weak_since: float | None = None
        self._weak_kind: bool | None = None  # False: not taking; None: the judge is blind
        self._warned = False
        self._samples = 0
        self._latest: SwapReading | None = None

    # --- the inference thread's side ---------------------------------------------------------
    def offer(
        self, frames: Sequence[FrameContext], outputs: Sequence[Frame], done: Sequence[FaceWork]
    ) -> bool:
        """Hand over one swapped face of this batch when a sample is due (the largest face
        of the last frame that has one) and the worker is free; True when handed over.
        ``frames`` are the camera frames, ``outputs`` the output frames, ``done`` the
        swapped records (``frame_index`` into both)."""
        if not done or self._closed:
            return False
        last = max(w.frame_index for w in done)
        t_s = frames[last].t_s
        due = self._next_t
        if due is not None and due - 2 * self.interval_s <= t_s < due:
            return False  # not due yet (a jump back in time, a looped file, restarts it)
        work = max((w for w in done if w.frame_index == last), key=lambda w: w.face.area)
        output = outputs[last]
        if output is frames[last].image:
            return False
        with self._lock:
            if self._busy or self._job is not None:
                return False
            self._next_t = t_s + self.interval_s
            self._job = _Job(frames[last].image, output, work.face, work.source_index, t_s)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="swap-check", daemon=True)
                self._thread.start()
            self._lock.notify()
        return True

    # --- the check ---------------------------------------------------------------------------
    def measure(
        self, camera: Frame, output: Frame, face: Face, source_index: int = 0
    ) -> SwapReading:
        """Embed the face in ``camera`` and ``output`` (one recognizer call) and compare
        both with the source's embedding: a reading (counted; the warning not updated)."""
        source = self._source_embedding(source_index)
        cam_crop, cam_face = face_region(camera, face)
        out_crop, out_face = face_region(output, face)
        works = self.recognizer.embed(
            [FrameContext(cam_crop), FrameContext(out_crop)],
            [FaceWork(0, 0, cam_face), FaceWork(1, 0, out_face)],
        )
        cam_emb, out_emb = (w.face.embedding for w in works)
        if cam_emb is None or out_emb is None:
            raise RuntimeError(f"the recognizer {self.recognizer.model_id} gave no embedding")
        s, c, b = cosine(out_emb, source), cosine(out_emb, cam_emb), cosine(source, cam_emb)
        strength = swap_strength(s, c, b)
        self._samples += 1
        return SwapReading(
            strength=strength,
            cos_source=s,
            cos_camera=c,
            cos_source_camera=b,
            taking=None if strength is None else strength >= self.weak_below,
            t_s=0.0,
            samples=self._samples,
            judge=self.judge,
        )

    def _source_embedding(self, index: int) -> np.ndarray:
        emb = self._source_embeddings.get(index)
        if emb is not None:
            return emb
        source = self.sources[index]
        face = dataclasses.replace(source.face, embedding=None)
        crop, moved = face_region(source.image, face)
        work = self.recognizer.embed([FrameContext(crop)], [FaceWork(0, 0, moved)])[0]
        if work.face.embedding is None:
            raise RuntimeError(f"the recognizer {self.recognizer.model_id} gave no embedding")
        emb = np.asarray(work.face.embedding, np.float32)
        self._source_embeddings[index] = emb
        return emb

    def observe(self, reading: SwapReading) -> SwapReading:
        """Update the not-taking watch with ``reading`` (its ``t_s`` is frame time); the
        reading with ``warning`` set, reported (and the warning or all-clear event sent)."""
        t = reading.t_s
        stale = self._last_t is None or t < self._last_t or t - self._last_t > 3 * self.interval_s
        self._last_t = t
        event = None
        if reading.taking is not True:  # not taking, or a judge that cannot tell
            if self._weak_since is None or stale or self._weak_kind != reading.taking:
                self._weak_since = t
                self._weak_kind = reading.taking
            if not self._warned and t - self._weak_since >= self.hold_s:
                self._warned = True
                event = (
                    self._warning(reading, t - self._weak_since)
                    if reading.taking is False
                    else self._blind_warning(reading)
                )
        else:
            self._weak_since = None
            if self._warned:
                self._warned = False
                event = Event(
                    "info",
                    "swap check",
                    f"the swap takes again ({reading.label()}, cos to source "
                    f"{reading.cos_source:.2f}, to camera {reading.cos_camera:.2f})",
                )
        reading = dataclasses.replace(reading, warning=self._warned)
        self._latest = reading
        report = self._report
        if report is not None:
            report.swap_check(reading)
            if event is not None:
                report.event(event)
        return reading

    def _warning(self, reading: SwapReading, for_s: float) -> Event:
        return Event(
            "warning",
            "swap check",
            f"the swap is not taking: the output keeps the camera's identity "
            f"({reading.label()} for {for_s:.0f} s, judged by {self.judge}; cos to source "
            f"{reading.cos_source:.2f}, to camera {reading.cos_camera:.2f})",
            "likely causes: " + "; ".join(self.causes) + ". `livecam check` tests the presets",
        )

    def _blind_warning(self, reading: SwapReading) -> Event:
        return Event(
            "warning",
            "swap check",
            f"the swap check cannot judge this swap: its judge ({self.judge}) cannot tell "
            f"the source photo from the camera face (cos {reading.cos_source_camera:.2f} "
            "between them)",
            "the source photo may show the camera's own person, or a face too small, turned "
            "or covered to tell; try another photo of the source",
        )

    # --- the worker --------------------------------------------------------------------------
    def _work(self) -> None:
        # Linux: a thread's own niceness; elsewhere the check runs at normal priority
        with contextlib.suppress(AttributeError, OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        while True:
            with self._lock:
                if self._job is None and not self._closed:
                    self._lock.wait_for(lambda: self._job is not None or self._closed, IDLE_S)
                if self._closed:
                    return
                if self._job is None:  # idle (swap off, no face): the next offer restarts it
                    self._thread = None
                    return
                job, self._job, self._busy = self._job, None, True
            try:
                assert job is not None
                reading = self.measure(job.camera, job.output, job.face, job.source_index)
                self.observe(dataclasses.replace(reading, t_s=job.t_s))
            except Exception as e:  # the check is optional: it stops, the stream goes on
                log.warning("the swap check raised %r; it is off", e)
                with self._lock:
                    self._closed = True
                    self._busy = False
                    self._lock.notify_all()
                if self._report is not None:
                    self._report.event(
                        Event("warning", "swap check", f"the swap check raised {e!r}; it is off")
                    )
                return
            with self._lock:
                self._busy = False
                self._lock.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no sample is waiting or being checked (tests, ``livecam check``);
        False on timeout."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self._closed or (self._job is None and not self._busy), timeout
            )

    @property
    def latest(self) -> SwapReading | None:
        """The newest reading (None before the first)."""
        return self._latest

    def attach(self, report: CheckReport | None) -> None:
        """Send readings and events to ``report`` from now on (its reading is reset)."""
        self._report = report
        if report is not None:
            report.swap_check(self._latest)

    def close(self) -> None:
        """Stop the worker (a check in progress finishes on its own)."""
        with self._lock:
            self._closed = True
            self._job = None
            self._lock.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
