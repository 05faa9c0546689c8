"""``RemoteSwapper``: a ``Swapper`` part whose model call runs on a Triton server.

It keeps everything of the local swapper but the model call: the same crops (the local
swapper's affine and template), the same source vectors (its ``prepare``, once per source
face). Each ``swap`` sends its faces' uint8 crops with their vectors as one asynchronous
request and pastes, for each face, the newest answer the server gave for that face (its
track), so the frame rate does not depend on the round trip:

* at most ``in_flight`` requests are on their way; a newer batch waits in one pending slot
  (the newest crop wins: a pending batch replaced before it was sent is counted
  ``skipped``), and an answer older than one already shown for its face is ``late``;
* while the server usually answers within ``wait_s``, a frame waits that long for its own
  faces (exact, no lag on a LAN); otherwise it takes the newest answer at once;
* a face whose newest answer is older than ``timeout_s`` (or has none yet) is swapped
  locally in this very call, so the camera never shows an unswapped or frozen face; a
  request unanswered for ``timeout_s``, a refused connection or a wrong token puts the
  whole stream on the local swap (``lost``: "REMOTE LOST, local swap: <reason>"), and
  a monitor thread checks the server about once a second and switches back when it
  answers again.

The part runs on the inference thread; answers arrive on gRPC's threads; one Condition
guards the shared state.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from livecam.config.remote import RemoteConfig, parse_address
from livecam.errors import ConfigError
from livecam.face.crops import align
from livecam.face.parts import Swapper
from livecam.face.swap.neural import Latent, NeuralSwapper
from livecam.remote import wire
from livecam.remote.link import BatchCounts, RemoteError, RemoteLink
from livecam.runtime.providers import Providers
from livecam.types import Affine, Event, EventLevel, FaceWork, FrameContext

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

ORIGIN = "remote"
LOST = "REMOTE LOST, local swap"
RTT_WINDOW = 200  # round trips kept for p50/p99
RETRY_S = 1.0  # the monitor's period
TOKEN_ENV = "LIVECAM_REMOTE_TOKEN"


class EventSink(Protocol):
    """Where the remote's events and figures go (``telemetry.hub.Telemetry`` is one)."""

    def event(self, event: Event) -> None: ...

    def remote(self, reading: RemoteStats | None) -> None: ...


@dataclass
class _Request:
    seq: int
    t_sent: float
    keys: tuple[int, ...]


@dataclass
class _Answer:
    seq: int
    t_sent: float
    output: npt.NDArray[np.uint8]


@dataclass(frozen=True)
class RemoteStats:
    """What the remote did so far (``RemoteSwapper.stats``).

    ``route``: "remote" or "local" (lost); ``lost``: why, with its fix, when local. Round
    trips in ms (None before the first answer); ``bytes_up_per_frame`` and
    ``bytes_down_per_frame``: payload bytes sent and received per frame with faces (before
    gRPC's compression), and the same per face sent; ``faces_remote`` and ``faces_local``:
    faces pasted from the server's answers and swapped here; ``late``: answers dropped
    because a newer one for the face was shown; ``skipped``: batches replaced by a newer
    one before they were sent; ``mean_batch``: the server's mean batch size since this
    client connected (Triton's statistics); ``server``: where the swap runs as the server
    reports it (``server_providers`` on ``server_gpu``, empty: no GPU), ``server_model``
    the model it serves."""

    address: str
    route: str
    lost: str | None
    rtt_p50_ms: float | None
    rtt_p99_ms: float | None
    bytes_up_per_frame: float
    bytes_down_per_frame: float
    bytes_up_per_face: float
    bytes_down_per_face: float
    faces_remote: int
    faces_local: int
    late: int
    skipped: int
    sent: int
    mean_batch: float | None
    server: str
    server_providers: tuple[str, ...] = ()
    server_gpu: str = ""
    server_model: str = ""

    def _rtt(self) -> str:
        if self.rtt_p50_ms is None or self.rtt_p99_ms is None:
            return "n/a"
        return f"{self.rtt_p50_ms:.0f}/{self.rtt_p99_ms:.0f} ms"

    def label(self) -> str:
        """The status line's part: where the swap runs and how the link does."""
        if self.lost is not None:
            return f"{LOST}: {self.lost}"
        batch = f", server batch {self.mean_batch:.1f}" if self.mean_batch is not None else ""
        up, down = self.bytes_up_per_frame / 1000, self.bytes_down_per_frame / 1000
        return (
            f"remote {self.address} ({self.server or '?'}): rtt p50/p99 {self._rtt()}, "
            f"{up:.0f}/{down:.0f} KB/frame up/down{batch}"
        )

    def details(self) -> str:
        """The Stats tab's lines: the state, where the swap runs (the server's own word),
        the round trip, bytes per frame, the server's batch and where the faces came from."""
        state = f"{LOST}: {self.lost}" if self.lost is not None else "remote swap on"
        gpu = self.server_gpu or "no GPU"
        where = (
            f"{self.address}: {'+'.join(self.server_providers) or '?'} on {gpu}"
            + (f", {self.server_model}" if self.server_model else "")
            if self.server
            else f"{self.address}: not reached yet"
        )
        batch = f"{self.mean_batch:.2f}" if self.mean_batch is not None else "n/a"
        return "\n".join(
            [
                state,
                where,
                f"round trip p50/p99 {self._rtt()}",
                f"{self.bytes_up_per_frame / 1000:.1f} KB up, "
                f"{self.bytes_down_per_frame / 1000:.1f} KB down per frame",
                f"server mean batch {batch}",
                f"faces: {self.faces_remote} from the server, {self.faces_local} here; "
                f"late {self.late}, skipped {self.skipped}",
            ]
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class _State:
    """The part's shared state (guarded by ``RemoteSwapper._cond``)."""

    in_flight: dict[int, _Request] = field(default_factory=dict)
    pending: tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32], tuple[int, ...]] | None = None
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
    counts_at_start: BatchCounts | None = None
    counts: BatchCounts | None = None


class RemoteSwapper:
    """``local``'s swap with the model call on the server behind ``link``.

    ``settings``: in flight, timeout and wait of ``[remote]``. ``clock``: seconds (for the
    deadlines). ``monitor``: run the reconnect/statistics thread (tests of the state machine
    may drive ``check_server`` themselves). ``close_local``: ``close`` closes ``local`` too
    (it is this part's own)."""

    needs_identity = True

    def __init__(
        self,
        local: NeuralSwapper,
        link: RemoteLink,
        settings: RemoteConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        monitor: bool = True,
        close_local: bool = True,
    ) -> None:
        self.local = local
        self.link = link
        self.in_flight = settings.in_flight
        self.timeout_s = settings.timeout_ms / 1000
        self.wait_s = settings.wait_ms / 1000
        self.model_id = f"{local.model_id}@{link.address}"
        self.providers = Providers(
            requested=("remote", *local.providers.requested),
            used=local.providers.used,
        )
        self._clock = clock
        self._cond = threading.Condition()
        self._state = _State(lost="not connected yet")
        self._report: EventSink | None = None
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._use_monitor = monitor
        self._close_local = close_local

    # -- the Swapper protocol ------------------------------------------------------------

    def prepare(self, source: SourceFace) -> Latent:
        return self.local.prepare(source)

    def warmup(self) -> None:
        """Warm the local swapper (the fallback), check the server once and start the
        monitor; an unusable server is an event, never an error: the local swap runs."""
        self.local.warmup()
        self.check_server()
        if self._use_monitor and self._monitor is None:
            self._monitor = threading.Thread(target=self._watch, name="remote-monitor", daemon=True)
            self._monitor.start()

    def close(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=3)
            self._monitor = None
        with self._cond:  # closing cancels what is in flight: not a lost server
            self._state.in_flight.clear()
            self._state.pending = None
        self.link.close()
        if self._close_local:
            self.local.close()

    def report_to(self, report: EventSink) -> None:
        """Send "REMOTE LOST" and "remote swap back" events to ``report``."""
        self._report = report

    def swap(
        self,
        frames: Sequence[FrameContext],
        faces: Sequence[FaceWork],
        sources: Sequence[Latent],
    ) -> list[FaceWork]:
        """Fill ``affine``, ``crop`` and ``output`` of each record that can be swapped: the
        server's newest answer for its face when it is fresh, else the local swap."""
        size = self.local.crop_size
        todo: list[tuple[FaceWork, Affine]] = []
        for work in faces:
            affine = self.local.face_affine(work.face, frames[work.frame_index].shape)
            if affine is not None:
                todo.append((work, affine))
        if not todo:
            return list(faces)
        works = [w for w, _ in todo]
        crops = np.stack(
            [align.warp_crop(frames[w.frame_index].image, a, size) for w, a in todo]
        ).astype(np.uint8)
        vectors = self.local.source_vectors(frames, works, sources)
        keys = tuple(_key(w, i) for i, w in enumerate(works))
        outputs = self._remote_outputs(crops, vectors, keys)
        missing = [i for i, out in enumerate(outputs) if out is None]
        if missing:
            local = self.local.run_crops(crops[missing], vectors[missing])
            for i, out in zip(missing, local, strict=True):
                outputs[i] = out
        with self._cond:
            self._state.frames += len({w.frame_index for w in works})
            self._state.faces_local += len(missing)
            self._state.faces_remote += len(todo) - len(missing)
        for (work, affine), crop, out in zip(todo, crops, outputs, strict=True):
            work.affine = affine
            work.crop = crop
            work.output = out
        return list(faces)

    # -- sending and answers -------------------------------------------------------------

    def _remote_outputs(
        self,
        crops: npt.NDArray[np.uint8],
        vectors: npt.NDArray[np.float32],
        keys: tuple[int, ...],
    ) -> list[npt.NDArray[np.uint8] | None]:
        """Send this batch (or park it as pending) and return, per face, the freshest
        usable answer (None: swap it locally)."""
        now = self._clock()
        with self._cond:
            s = self._state
            self._expire(now)
            if s.lost is not None:
                s.pending = None
                return [None] * len(keys)
            if len(s.in_flight) < self.in_flight:
                seq = self._send_locked(crops, vectors, keys, now)
                if self._waits_for_own():
                    deadline = now + self.wait_s
                    while seq in s.in_flight and s.lost is None:
                        left = deadline - self._clock()
                        if left <= 0:
                            break
                        self._cond.wait(left)
            else:
                if s.pending is not None:
                    s.skipped += 1
                s.pending = (crops, vectors, keys)
            now = self._clock()
            out: list[npt.NDArray[np.uint8] | None] = []
            for key in keys:
                answer = s.answers.get(key)
                fresh = answer is not None and now - answer.t_sent <= self.timeout_s
                out.append(answer.output if fresh and answer is not None else None)
            return out

    def _waits_for_own(self) -> bool:
        """Wait for this frame's own answer while the median round trip fits ``wait_s``."""
        rtts = self._state.rtts
        if self.wait_s <= 0:
            return False
        if not rtts:
            return True
        return float(np.median(np.asarray(rtts))) <= self.wait_s

    def _send_locked(
        self,
        crops: npt.NDArray[np.uint8],
        vectors: npt.NDArray[np.float32],
        keys: tuple[int, ...],
        now: float,
    ) -> int:
        s = self._state
        s.seq += 1
        seq = s.seq
        s.in_flight[seq] = _Request(seq, now, keys)
        s.sent += 1
        s.faces_sent += len(keys)
        s.bytes_up += int(crops.nbytes + vectors.nbytes)

        def answer(out: npt.NDArray[np.uint8] | None, error: RemoteError | None) -> None:
            self._answered(seq, out, error)

        # the callback may run at once on this thread (a closed channel): the Condition is
        # re-entrant for that case
        self.link.send(crops, vectors, answer)
        return seq

    def _answered(
        self, seq: int, out: npt.NDArray[np.uint8] | None, error: RemoteError | None
    ) -> None:
        """An answer on gRPC's thread: keep it per face (newest wins), or go local."""
        with self._cond:
            s = self._state
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
                    crops, vectors, keys = s.pending
                    s.pending = None
                    self._send_locked(crops, vectors, keys, self._clock())
            self._cond.notify_all()

    def _expire(self, now: float) -> None:
        """A request unanswered for ``timeout_s``: the server is slow or gone."""
        s = self._state
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
        s = self._state
        s.in_flight.clear()
        s.pending = None
        s.answers.clear()
        if s.lost is None:
            s.lost = reason
            self._say("warning", f"{LOST}: {reason}")
        self._cond.notify_all()

    def _say(self, level: EventLevel, message: str) -> None:
        log.log(logging.WARNING if level == "warning" else logging.INFO, "%s", message)
        report = self._report
        if report is not None:
            try:
                report.event(Event(level, ORIGIN, message))
            except Exception:  # a listener's bug never stops the stream
                log.exception("the remote's event listener failed")

    # -- the monitor ---------------------------------------------------------------------

    def check_server(self) -> bool:
        """Ask the server (blocking, up to a few seconds): when it serves this swapper,
        switch to it (True); else keep or go local with the reason (False)."""
        try:
            info = self.link.check(self.local.crop_size, timeout_s=max(self.timeout_s * 3, 1.0))
            self._check_latent(info)
        except RemoteError as e:
            reason = cause_and_fix(e)
            with self._cond:
                s = self._state
                if s.lost is None:
                    self._lose_locked(e)
                elif s.lost != reason:  # a new cause is said once
                    s.lost = reason
                    self._say("warning", f"{LOST}: {reason}")
            return False
        counts = self.link.batch_counts()
        with self._cond:
            s = self._state
            s.info = info
            s.counts_at_start = counts
            s.counts = counts
            if s.lost is not None:
                s.lost = None
                self._say("info", f"remote swap on {self.link.address} ({info.where()})")
        return True

    def _check_latent(self, info: wire.ServerInfo) -> None:
        """A server whose swapper takes another kind of source vector than the one this
        machine computes would swap in someone else: a RemoteError (a Triton container
        with an exported repository does not say, "?")."""
        if info.latent not in ("?", self.local.latent):
            raise RemoteError(
                f"{self.link.address} serves {info.model_id}, which takes {info.latent} source "
                f"vectors; this preset's swapper ({self.local.model_id}) makes {self.local.latent} "
                "ones",
                "serve the same preset and swapper model on both machines",
            )

    def _watch(self) -> None:
        while not self._stop.wait(RETRY_S):
            if self.lost is not None:
                self.check_server()
            else:
                counts = self.link.batch_counts()
                if counts is not None:
                    with self._cond:
                        self._state.counts = counts
            report = self._report
            if report is not None:
                try:
                    report.remote(self.stats())
                except Exception:  # a listener's bug never stops the monitor
                    log.exception("the remote's figures listener failed")

    # -- what it did ---------------------------------------------------------------------

    @property
    def lost(self) -> str | None:
        """Why the local swap runs (None: the remote one does)."""
        with self._cond:
            return self._state.lost

    def wait_until_remote(self, timeout_s: float) -> bool:
        """Block until the remote swap is on (True) or ``timeout_s`` passes (False)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._state.lost is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def stats(self) -> RemoteStats:
        with self._cond:
            s = self._state
            rtts = np.asarray(s.rtts, np.float64) * 1000
            counts, start = s.counts, s.counts_at_start
            faces, frames = max(s.faces_sent, 1), max(s.frames, 1)
            info = s.info
            return RemoteStats(
                address=str(self.link.address),
                route="local" if s.lost is not None else "remote",
                lost=s.lost,
                rtt_p50_ms=float(np.percentile(rtts, 50)) if rtts.size else None,
                rtt_p99_ms=float(np.percentile(rtts, 99)) if rtts.size else None,
                bytes_up_per_frame=s.bytes_up / frames,
                bytes_down_per_frame=s.bytes_down / frames,
                bytes_up_per_face=s.bytes_up / faces,
                bytes_down_per_face=s.bytes_down / faces,
                faces_remote=s.faces_remote,
                faces_local=s.faces_local,
                late=s.late,
                skipped=s.skipped,
                sent=s.sent,
                mean_batch=counts.mean_batch(start) if counts is not None else None,
                server=info.where() if info is not None else "",
                server_providers=info.providers_used if info is not None else (),
                server_gpu=info.gpu if info is not None else "",
                server_model=info.model_id if info is not None else "",
            )


def cause_and_fix(error: RemoteError) -> str:
    """``error`` as the one line after "REMOTE LOST, local swap: ": its cause and fix."""
    return f"{error.message} (fix: {error.hint})" if error.hint else error.message


def _key(work: FaceWork, index: int) -> int:
    """The face's identity across frames: its track id, else its place in the batch."""
    return work.face.track_id if work.face.track_id >= 0 else -1 - index


def remote_wrapper(settings: RemoteConfig) -> Callable[[Swapper[Any]], Swapper[Any]]:
    """What ``build_swap_stage`` puts in front of the preset's swapper for ``[remote]``:
    a RemoteSwapper falling back to it (a ConfigError for a swapper it cannot offload)."""
    if settings.url is None:
        raise ConfigError("no remote server set", "give --remote grpc://HOST:PORT")
    address = parse_address(settings.url)
    token = settings.token or os.environ.get(TOKEN_ENV) or None

    def wrap(local: Swapper[Any]) -> Swapper[Any]:
        if not isinstance(local, NeuralSwapper):
            raise ConfigError(
                "the remote swap offloads a neural swapper; this preset swaps with the "
                "classic CPU swapper",
                "use --preset standard (or quality) with --remote",
            )
        link = RemoteLink(
            address,
            token=token,
            ca_cert=Path(settings.ca_cert) if settings.ca_cert else None,
            compression=settings.compression,
            timeout_s=settings.timeout_ms / 1000,
        )
        return RemoteSwapper(local, link, settings)

    return wrap
