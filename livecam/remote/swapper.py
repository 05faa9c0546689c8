"""``RemoteSwapper``: a ``Swapper`` part whose model call runs on a Triton server.

It keeps everything of the local swapper but the model call: the same crops (the local
swapper's affine and template), the same source vectors (its ``prepare``, once per source
face). Each ``swap`` sends its faces' uint8 crops with their vectors through an
``Offload`` (newest answer wins, the local swap stands in when the server is slow or gone:
see ``livecam.remote.offload``). Its monitor thread checks the server about once a second
while it is lost (and the remote enhancer's, ``companions``), reads Triton's batch
statistics and hands the figures to the telemetry.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from livecam.config.remote import RemoteConfig
from livecam.face.crops import align
from livecam.face.swap.neural import Latent, NeuralSwapper
from livecam.remote import wire
from livecam.remote.link import BatchCounts, RemoteError, RemoteLink
from livecam.remote.offload import Offload
from livecam.runtime.providers import Providers
from livecam.types import Affine, FaceWork, FrameContext, RunReport

if TYPE_CHECKING:
    from livecam.face.source.photo import SourceFace

log = logging.getLogger(__name__)

LOST = "REMOTE LOST, local swap"
RETRY_S = 1.0  # the monitor's period


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
    enhancer: str | None = None  # the remote enhancer: "remote", REMOTE LOST line, None: none

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
        enhancer = f"; {self.enhancer}" if self.enhancer not in (None, "remote") else ""
        return (
            f"remote {self.address} ({self.server or '?'}): rtt p50/p99 {self._rtt()}, "
            f"{up:.0f}/{down:.0f} KB/frame up/down{batch}{enhancer}"
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
                *([f"enhancer: {self.enhancer}"] if self.enhancer is not None else []),
            ]
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RemoteSwapper:
    """``local``'s swap with the model call on the server behind ``link``.

    ``settings``: in flight, timeout and wait of ``[remote]``. ``clock``: seconds (for the
    deadlines). ``monitor``: run the reconnect/statistics thread. ``close_local``:
    ``close`` closes ``local`` too (it is this part's own). ``companions``: other parts'
    offloads on the same server (the remote enhancer's), checked by the same monitor."""

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
        self.model_id = f"{local.model_id}@{link.address}"
        # the providers of this machine's part (the fallback); where the server's runs is
        # in the figures (``RemoteStats.server``), as the server reports it
        self.providers: Providers = local.providers
        self.offload = Offload(
            link,
            settings,
            send=lambda inputs, answer: link.send(inputs[0], inputs[1], answer),
            check=self._check,
            lost_prefix=LOST,
            back=lambda info: f"remote swap on {link.address} ({info.where()})",
            clock=clock,
        )
        self.companions: list[Offload] = []
        self._report: RunReport | None = None
        self._counts_at_start: BatchCounts | None = None
        self._counts: BatchCounts | None = None
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
        self._report_figures()  # the last figures, for the run's summary
        for offload in (self.offload, *self.companions):
            offload.cancel()
        self.link.close()
        if self._close_local:
            self.local.close()

    def report_to(self, report: RunReport) -> None:
        """Send "REMOTE LOST" and "remote swap back" events (this part's and its
        companions') and the figures to ``report``."""
        self._report = report
        for offload in (self.offload, *self.companions):
            offload.sink = report.event

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
        n_frames = len({w.frame_index for w in works})
        outputs = self.offload.outputs((crops, vectors), face_keys(works), n_frames)
        missing = [i for i, out in enumerate(outputs) if out is None]
        if missing:
            local = self.local.run_crops(crops[missing], vectors[missing])
            for i, out in zip(missing, local, strict=True):
                outputs[i] = out
        self.offload.count(len(todo) - len(missing), len(missing))
        for (work, affine), crop, out in zip(todo, crops, outputs, strict=True):
            work.affine = affine
            work.crop = crop
            work.output = out
        return list(faces)

    # -- the server ----------------------------------------------------------------------

    def _check(self, timeout_s: float) -> wire.ServerInfo:
        info = self.link.check(self.local.crop_size, timeout_s=timeout_s)
        self._check_latent(info)
        return info

    def check_server(self) -> bool:
        """Ask the server (blocking, up to a few seconds): when it serves this swapper,
        switch to it (True); else keep or go local with the reason (False)."""
        if self.offload.check_server() is None:
            return False
        self._counts_at_start = self._counts = self.link.batch_counts()
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
            if self.offload.lost is not None:
                self.check_server()
            else:
                counts = self.link.batch_counts()
                if counts is not None:
                    self._counts = counts
            for companion in self.companions:
                if companion.lost is not None:
                    companion.check_server()
            self._report_figures()

    def _report_figures(self) -> None:
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
        return self.offload.lost

    def wait_until_remote(self, timeout_s: float) -> bool:
        """Block until the remote swap is on (True) or ``timeout_s`` passes (False)."""
        return self.offload.wait_until_remote(timeout_s)

    def stats(self) -> RemoteStats:
        rtts = self.offload.round_trips_ms()
        counts, start = self._counts, self._counts_at_start
        enhancer = None
        for companion in self.companions:
            lost = companion.lost
            enhancer = "remote" if lost is None else f"{companion.lost_prefix}: {lost}"
        with self.offload.cond:
            s = self.offload.state
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
                enhancer=enhancer,
            )


def face_keys(works: Sequence[FaceWork]) -> tuple[int, ...]:
    """Each face's identity across frames: its track id, else its place in the batch."""
    return tuple(w.face.track_id if w.face.track_id >= 0 else -1 - i for i, w in enumerate(works))
