"""What telemetry reports: a ``Snapshot`` of every meter, a ``FrameReport`` per sent frame,
and the labels the terminal and the panel show them with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from livecam.telemetry.meters import Percentiles
from livecam.types import FramePacket, RemoteReading, SwapReading


@dataclass(frozen=True)
class FrameReport:
    """One new output frame: when it was captured and sent, and what each stage cost it.

    ``stages_ms`` is read-only (one report is shared by every subscriber);
    ``dict(report.stages_ms)`` gives a plain dict.
    """

    seq: int
    t_capture_ns: int
    t_sent_ns: int
    latency_ms: float
    stages_ms: Mapping[str, float]

    @staticmethod
    def of(packet: FramePacket, t_sent_ns: int) -> FrameReport:
        stages: dict[str, float] = {}
        for timing in packet.timings:
            stages[timing.name] = stages.get(timing.name, 0.0) + timing.ms
        return FrameReport(
            seq=packet.seq,
            t_capture_ns=packet.t_capture_ns,
            t_sent_ns=t_sent_ns,
            latency_ms=(t_sent_ns - packet.t_capture_ns) / 1e6,
            stages_ms=MappingProxyType(stages),
        )


@dataclass(frozen=True)
class Snapshot:
    """A consistent reading of every meter at one moment.

    ``frames_processed``: frames the inference thread finished; ``skipped``: finished
    frames the output thread did not send because newer ones were due; ``dropped``:
    frames dropped by the hand-off buffers. ``providers``: per stage, the execution
    provider ``requested`` and the one actually ``used``.

    Faces, over the sent frames the swap stage worked on (``frames_searched``): faces
    found and swapped in all of them, ``frames_swapped`` those with at least one swapped
    face, and ``faces_now`` (found, swapped) in the last sent frame (None when the swap
    stage did not work on it: swap off, blank, freeze, or no frame yet). ``faces_reused``:
    swapped faces that got their track's previous swapped face again (``swap.reuse.reuse``);
    ``reuse_hit_rate`` is their share of the swapped faces. ``swap_check``: the swap
    check's newest reading (``face.identity.swap_check``: swap strength 0-100 and the
    cosines; None before the first).
    """

    elapsed_s: float
    frames_in: int
    frames_out: int
    repeats: int
    dropped: int
    fps_in: float
    fps_out: float
    latency_ms: Percentiles | None
    stages_ms: dict[str, Percentiles]
    rss_mb: float
    gpu: dict[str, Any] | None
    events: int
    providers: dict[str, dict[str, str]] = field(default_factory=dict)
    frames_processed: int = 0
    fps_processed: float = 0.0
    skipped: int = 0
    frames_searched: int = 0
    faces_detected: int = 0
    faces_swapped: int = 0
    frames_swapped: int = 0
    faces_now: tuple[int, int] | None = None
    faces_reused: int = 0
    swap_check: SwapReading | None = None
    #: the remote swap's newest figures (``remote.swapper.RemoteStats``; None: swapped here)
    remote: RemoteReading | None = None

    @property
    def reuse_hit_rate(self) -> float:
        """Share of the swapped faces that reused their track's last swap (0 when none)."""
        return self.faces_reused / self.faces_swapped if self.faces_swapped else 0.0

    def status_line(self) -> str:
        """One short line for the terminal."""
        lat = f"{self.latency_ms.p50:.1f}/{self.latency_ms.p99:.1f}" if self.latency_ms else "n/a"
        parts = [
            f"in {self.fps_in:5.1f} | proc {self.fps_processed:5.1f} | out {self.fps_out:5.1f} fps",
            f"latency p50/p99 {lat} ms",
            f"drops {self.dropped} skips {self.skipped}",
        ]
        if self.faces_now is not None:
            share = self.frames_swapped / max(self.frames_searched, 1)
            parts.append(
                f"faces found {self.faces_now[0]} swapped {self.faces_now[1]}, "
                f"{share:.0%} of frames swapped"
                + (f", {self.reuse_hit_rate:.0%} reused" if self.faces_reused else "")
                + (f", {self.swap_check.label()}" if self.swap_check is not None else "")
            )
        if self.remote is not None:
            parts.append(self.remote.label())
        if self.stages_ms:
            parts.append(" ".join(f"{n}={p.p50:.1f}" for n, p in self.stages_ms.items()))
        if self.providers:
            parts.append(" ".join(provider_label(n, p) for n, p in self.providers.items()))
        parts.append(f"RSS {self.rss_mb:.0f}MB")
        parts.append(vram_label(self.gpu))
        return " | ".join(parts)

    def to_summary(self) -> dict[str, Any]:
        """The JSON summary written by ``--stats-json``."""
        return {
            "elapsed_s": round(self.elapsed_s, 3),
            "frames_in": self.frames_in,
            "frames_processed": self.frames_processed,
            "frames_out": self.frames_out,
            "repeats": self.repeats,
            "skipped": self.skipped,
            "dropped": self.dropped,
            "fps_in": round(self.fps_in, 2),
            "fps_processed": round(self.fps_processed, 2),
            "fps_out": round(self.fps_out, 2),
            "latency_ms": _pct_dict(self.latency_ms),
            "stages_ms": {n: _pct_dict(p) for n, p in self.stages_ms.items()},
            "rss_mb": round(self.rss_mb, 1),
            "gpu": self.gpu if self.gpu else "n/a",
            "providers": self.providers,
            "events": self.events,
            "frames_searched": self.frames_searched,
            "faces_detected": self.faces_detected,
            "faces_swapped": self.faces_swapped,
            "frames_swapped": self.frames_swapped,
            "faces_reused": self.faces_reused,
            "reuse_hit_rate": round(self.reuse_hit_rate, 4),
            "swap_check": self.swap_check.as_dict() if self.swap_check is not None else None,
            "remote": self.remote.as_dict() if self.remote is not None else None,
        }


def provider_label(stage: str, provider: Mapping[str, str]) -> str:
    """``stage=CUDA``, or a loud ``stage=CPU (FALLBACK, wanted CUDA)``."""
    used, requested = provider.get("used", "?"), provider.get("requested", "?")
    if used == requested:
        return f"{stage}={used}"
    return f"{stage}={used} (FALLBACK, wanted {requested})"


def vram_label(gpu: Mapping[str, Any] | None) -> str:
    """VRAM in use, labelled with its scope: this process, or the whole GPU."""
    if not gpu:
        return "GPU n/a"
    total = gpu.get("vram_total_mb", 0)
    if gpu.get("vram_scope") == "process" and gpu.get("vram_process_mb") is not None:
        return f"VRAM {gpu['vram_process_mb']:.0f}/{total:.0f}MB (this process)"
    return f"VRAM {gpu.get('vram_used_mb', 0):.0f}/{total:.0f}MB (whole GPU)"


def _pct_dict(p: Percentiles | None) -> dict[str, float | None]:
    return {"p50": p.p50, "p99": p.p99} if p else {"p50": None, "p99": None}
