"""``Offload``: the model calls of one part (the swapper's, the enhancer's) sent to a Triton
server, newest answer wins, with the local model standing in.

Each call sends its faces' uint8 crops (and any per-face inputs) as one asynchronous
request; the part pastes, for each face, the newest answer the server gave for that face
(its track), so the frame rate does not depend on the round trip:

* at most ``in_flight`` requests are on their way; a newer batch waits in one pending slot
  (the newest crop wins: a pending batch replaced before it was sent is counted
  ``skipped``), and an answer older than one already shown for its face is ``late``;
* while the server usually answers within ``wait_s``, a frame waits that long for its own
  faces (exact, no lag on a LAN); otherwise it takes the newest answer at once;
* a face whose newest answer is older than ``timeout_s`` (or has none yet) gets None, and
  the part runs its local model on it in this very call, so the camera never shows an
  unswapped or frozen face; a request unanswered for ``timeout_s``, a refused connection
  or a wrong token puts the part on its local model (``lost``: "REMOTE LOST, local swap:
  <reason> (fix: ...)"), and ``check_server`` (called by the swapper's monitor about once a
  second) switches back when the server answers again.

Calls come from the inference thread; answers arrive on gRPC's threads; one Condition
guards the shared state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from livecam.config.remote import RemoteConfig
from livecam.remote import wire
from livecam.remote.link import Answer, RemoteError, RemoteLink
from livecam.types import Event, EventLevel

log = logging.getLogger(__name__)

ORIGIN = "remote"
RTT_WINDOW = 200  # round trips kept for p50/p99

Inputs = tuple[npt.NDArray[Any], ...]
Output = npt.NDArray[np.uint8]


def cause_and_fix(error: RemoteError) -> str:
    """``error`` as the one line after "REMOTE LOST, local swap: ": its cause and fix."""
    return f"{error.message} (fix: {error.hint})" if error.hint else error.message


@dataclass
class _Request:
    seq: int
    t_sent: float
    keys: tuple[int, ...]


@dataclass
class _Answer:
    seq: int
    t_sent: float
    output: Output


@dataclass
class OffloadState:
    """An offload's shared state (guarded by ``Offload.cond``)."""

    in_flight: dict[int, _Request] = field(default_factory=dict)
    pending: tuple[Inputs, tuple[int, ...]] | None = None
    answers: dict[int, _Answer] = field(default_factory=dict)
    rtts: deque[float] = field(default_factory=lambda: deque(maxlen=RTT_WINDOW))
    lost: str | None = None
    seq: int = 0
    sent: int = 0
    faces_sent: int = 0
    frames: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    faces_remote: int = 0
    faces_local: int = 0
    late: int = 0
    skipped: int = 0
    info: wire.ServerInfo | None = None


class Offload:
    """One part's model call on the server behind ``link`` (see the module docstring).

    ``send(inputs, answer)``: one asynchronous request (``RemoteLink.send`` or
    ``.enhance``); ``check(timeout_s)``: the server serves this part (its ServerInfo, else a
    RemoteError); ``lost_prefix``: "REMOTE LOST, local swap" (or "... local enhance");
    ``back(info)``: the line said when the server is back."""

    def __init__(
        self,
        link: RemoteLink,
        settings: RemoteConfig,
        *,
        send: Callable[[Inputs, Answer], int],
        check: Callable[[float], wire.ServerInfo],
        lost_prefix: str,
        back: Callable[[wire.ServerInfo], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link = link
        self.in_flight = settings.in_flight
        self.timeout_s = settings.timeout_ms / 1000
        self.wait_s = settings.wait_ms / 1000
        self.lost_prefix = lost_prefix
        #: where the events go (the telemetry's ``event``; None: the log only)
        self.sink: Callable[[Event], None] | None = None
        self.cond = threading.Condition()
        self.state = OffloadState(lost="not connected yet")
        self._send = send
        self._check = check
        self._back = back
        self._clock = clock

    # -- calls and answers ---------------------------------------------------------------

    def outputs(self, inputs: Inputs, keys: tuple[int, ...], frames: int) -> list[Output | None]:
        """Send this batch of ``frames`` frames' faces (or park it as pending) and return, per
        face, the freshest usable answer (None: run the local model on it). The frames are
        counted here, under the same lock as the bytes sent: every byte counted belongs to a
        frame counted (the stats' bytes per frame never run ahead of the frames)."""
        now = self._clock()
        with self.cond:
            s = self.state
            s.frames += frames
            self._expire(now)
            if s.lost is not None:
                s.pending = None
                return [None] * len(keys)
            if len(s.in_flight) < self.in_flight:
                seq = self._send_locked(inputs, keys, now)
                if self._waits_for_own():
                    deadline = now + self.wait_s
                    while seq in s.in_flight and s.lost is None:
                        left = deadline - self._clock()
                        if left <= 0:
                            break
                        self.cond.wait(left)
            else:
                if s.pending is not None:
                    s.skipped += 1
                s.pending = (inputs, keys)
            now = self._clock()
            out: list[Output | None] = []
            for key in keys:
                answer = s.answers.get(key)
                fresh = answer is not None and now - answer.t_sent <= self.timeout_s
                out.append(answer.output if fresh and answer is not None else None)
            return out

    def count(self, remote: int, local: int) -> None:
        """Count a call's faces answered by the server and run here."""
        with self.cond:
            self.state.faces_remote += remote
            self.state.faces_local += local

    def _waits_for_own(self) -> bool:
        """Wait for this frame's own answer while the median round trip fits ``wait_s``."""
        rtts = self.state.rtts
        if self.wait_s <= 0:
            return False
        if not rtts:
            return True
        return float(np.median(np.asarray(rtts))) <= self.wait_s

    def _send_locked(self, inputs: Inputs, keys: tuple[int, ...], now: float) -> int:
        s = self.state
        s.seq += 1
        seq = s.seq
        s.in_flight[seq] = _Request(seq, now, keys)
        s.sent += 1
        s.faces_sent += len(keys)
        s.bytes_up += int(sum(a.nbytes for a in inputs))

        def answer(out: Output | None, error: RemoteError | None) -> None:
            self._answered(seq, out, error)

        # the callback may run at once on this thread (a closed channel): the Condition is
        # re-entrant for that case
        self._send(inputs, answer)
        return seq

    def _answered(self, seq: int, out: Output | None, error: RemoteError | None) -> None:
        """An answer on gRPC's thread: keep it per face (newest wins), or go local."""
        with self.cond:
            s = self.state
            request = s.in_flight.pop(seq, None)
            if request is None:  # expired already (counted as the loss that it caused)
                return
            if error is not None or out is None:
                self._lose_locked(error or RemoteError(f"{self.link.address} answered nothing"))
            else:
                s.rtts.append(self._clock() - request.t_sent)
                s.bytes_down += int(out.nbytes)
                for key, crop in zip(request.keys, out, strict=True):
                    old = s.answers.get(key)
                    if old is not None and old.seq > seq:
                        s.late += 1
                        continue
                    s.answers[key] = _Answer(seq, request.t_sent, crop)
                if s.pending is not None and s.lost is None:
                    inputs, keys = s.pending
                    s.pending = None
                    self._send_locked(inputs, keys, self._clock())
            self.cond.notify_all()

    def _expire(self, now: float) -> None:
        """A request unanswered for ``timeout_s``: the server is slow or gone."""
        s = self.state
        old = [r for r in s.in_flight.values() if now - r.t_sent > self.timeout_s]
        if old:
            self._lose_locked(
                RemoteError(
                    f"{self.link.address} gave no answer within {self.timeout_s * 1000:.0f} ms",
                    "check the network and the server's load, or raise [remote] timeout_ms",
                )
            )

    def _lose_locked(self, error: RemoteError) -> None:
        reason = cause_and_fix(error)
        s = self.state
        s.in_flight.clear()
        s.pending = None
        s.answers.clear()
        if s.lost is None:
            s.lost = reason
            self.say("warning", f"{self.lost_prefix}: {reason}")
        self.cond.notify_all()

    def say(self, level: EventLevel, message: str) -> None:
        log.log(logging.WARNING if level == "warning" else logging.INFO, "%s", message)
        sink = self.sink
        if sink is not None:
            try:
                sink(Event(level, ORIGIN, message))
            except Exception:  # a listener's bug never stops the stream
                log.exception("the remote's event listener failed")

    def cancel(self) -> None:
        """Forget what is in flight (closing cancels it: not a lost server)."""
        with self.cond:
            self.state.in_flight.clear()
            self.state.pending = None

    # -- the server ----------------------------------------------------------------------

    def check_server(self) -> wire.ServerInfo | None:
        """Ask the server (blocking, up to a few seconds): when it serves this part, switch
        to it (its ServerInfo); else keep or go local with the reason (None)."""
        try:
            info = self._check(max(self.timeout_s * 3, 1.0))
        except RemoteError as e:
            reason = cause_and_fix(e)
            with self.cond:
                s = self.state
                if s.lost is None:
                    self._lose_locked(e)
                elif s.lost != reason:  # a new cause is said once
                    s.lost = reason
                    self.say("warning", f"{self.lost_prefix}: {reason}")
            return None
        with self.cond:
            s = self.state
            s.info = info
            if s.lost is not None:
                s.lost = None
                self.say("info", self._back(info))
        return info

    @property
    def lost(self) -> str | None:
        """Why the local model runs (None: the server's does)."""
        with self.cond:
            return self.state.lost

    def wait_until_remote(self, timeout_s: float) -> bool:
        """Block until the server's model is used (True) or ``timeout_s`` passes (False)."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while self.state.lost is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.05))
            return True

    def round_trips_ms(self) -> npt.NDArray[np.float64]:
        with self.cond:
            return np.asarray(self.state.rtts, np.float64) * 1000
