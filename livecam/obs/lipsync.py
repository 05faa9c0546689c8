"""Lip sync that sets itself: OBS's microphone delayed by LiveCam's measured latency.

The microphone goes to OBS directly while the video goes through LiveCam, so the voice
arrives early by LiveCam's glass-to-glass latency plus the virtual camera's frame period
(a frame waits up to one period to be read). ``target_ms`` is that sum, from the median
latency of the frames sent in the last ``LatencyWindow.window_s`` seconds (telemetry's
per-frame reports). ``SyncPolicy`` sets a new offset only when the target moved by more
than a threshold, and at most once per interval: a wobbling latency never sets in a loop.
``AudioSync`` sets the offset of the chosen inputs (default: the microphone/aux inputs)
and puts each input's own offset back at the end.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass, field

from livecam.config.obs import MAX_SYNC_OFFSET_MS
from livecam.obs.client import INVALID_STATE, NOT_FOUND, ObsError, RequestFailed, Session
from livecam.telemetry.snapshot import FrameReport

#: input kinds that capture a microphone (PulseAudio, ALSA, Windows, macOS)
MIC_KINDS = frozenset(
    {"pulse_input_capture", "alsa_input_capture", "wasapi_input_capture", "coreaudio_input_capture"}
)
#: OBS's global audio devices that are microphones (Settings > Audio: Mic/Aux 1-4)
SPECIAL_MICS = ("mic1", "mic2", "mic3", "mic4")
NO_MIC_FIX = (
    "add your microphone to the scene in OBS (Sources > + > Audio Input Capture), or name "
    "the input to delay: --obs-audio-input NAME ([obs] audio_inputs)"
)


class SyncProblem(ObsError):
    """The lip sync cannot set an offset (no microphone input, an input without audio)."""


class LatencyWindow:
    """The glass-to-glass latency of the frames sent in the last ``window_s`` seconds.

    ``add`` is a telemetry frame listener: it runs on the output thread and only appends
    to a bounded deque under a lock (no OBS call, no computation).
    """

    def __init__(self, window_s: float = 2.0, min_frames: int = 8) -> None:
        self.window_s = window_s
        self.min_frames = min_frames
        self._lock = threading.Lock()
        self._seen: deque[tuple[int, float]] = deque(maxlen=4096)

    def add(self, report: FrameReport) -> None:
        with self._lock:
            self._seen.append((report.t_sent_ns, report.latency_ms))

    def median_ms(self, now_ns: int) -> float | None:
        """The median latency of the frames of the last ``window_s``, or of the last
        ``min_frames`` when fewer were sent meanwhile (a slow pipeline); None before
        ``min_frames`` frames were sent at all."""
        since = now_ns - int(self.window_s * 1e9)
        with self._lock:
            while len(self._seen) > self.min_frames and self._seen[0][0] < since:
                self._seen.popleft()
            recent = [ms for _, ms in self._seen]
        return statistics.median(recent) if len(recent) >= self.min_frames else None


def target_ms(latency_ms: float, fps: float) -> int:
    """The audio delay that matches the video: latency plus one output frame period, in
    whole ms within what OBS accepts."""
    return max(0, min(MAX_SYNC_OFFSET_MS, round(latency_ms + 1000.0 / fps)))


@dataclass(frozen=True)
class SyncPolicy:
    """When a new offset is set: the first time, then when the target moved by more than
    ``threshold_ms`` and the last one was set at least ``interval_s`` ago."""

    threshold_ms: float
    interval_s: float

    def due(self, target: int, last: int | None, last_at_s: float, now_s: float) -> bool:
        if last is None:
            return True
        return abs(target - last) > self.threshold_ms and now_s - last_at_s >= self.interval_s


@dataclass
class AudioSync:
    """Sets the audio sync offset of the chosen inputs (``names``; empty: the microphone
    inputs of the current scene) and remembers each input's own offset, read the first
    time LiveCam touched it (kept across reconnects: OBS may hold LiveCam's value by then).
    """

    names: tuple[str, ...] = ()
    originals: dict[str, int] = field(default_factory=dict)
    set_ms: int | None = None
    set_at_s: float = -math.inf
    inputs: tuple[str, ...] = ()

    def mic_inputs(self, session: Session) -> tuple[str, ...]:
        """The inputs to delay: ``names``, else the global Mic/Aux devices and the
        microphone captures of the current scene. SyncProblem when there is none."""
        if self.names:
            return self.names
        special = session.call("GetSpecialInputs")
        found = [str(special[k]) for k in SPECIAL_MICS if special.get(k)]
        scene = session.call("GetCurrentProgramScene").get("currentProgramSceneName")
        items = session.call("GetSceneItemList", {"sceneName": scene}).get("sceneItems", [])
        for item in items:
            name = str(item.get("sourceName", ""))
            if item.get("inputKind") in MIC_KINDS and name not in found:
                found.append(name)
        if not found:
            raise SyncProblem(f"OBS's scene {scene!r} has no microphone input", NO_MIC_FIX)
        return tuple(found)

    def apply(self, session: Session, target: int, now_s: float) -> None:
        """Set every input's offset to ``target`` ms. SyncProblem naming each input that
        is gone or has no audio (the others are set)."""
        inputs = self.mic_inputs(session)
        problems = []
        done = []
        for name in inputs:
            try:
                if name not in self.originals:
                    got = session.call("GetInputAudioSyncOffset", {"inputName": name})
                    self.originals[name] = int(got.get("inputAudioSyncOffset", 0))
                data = {"inputName": name, "inputAudioSyncOffset": target}
                session.call("SetInputAudioSyncOffset", data)
                done.append(name)
            except RequestFailed as e:
                problems.append(input_problem(name, e))
        self.set_ms, self.set_at_s, self.inputs = target, now_s, tuple(done)
        if problems:
            raise SyncProblem("; ".join(problems), NO_MIC_FIX)

    def restore(self, session: Session) -> list[str]:
        """Put every touched input's own offset back; the lines of those that could not
        be (renamed or deleted meanwhile)."""
        lines = []
        for name, ms in list(self.originals.items()):
            try:
                session.call(
                    "SetInputAudioSyncOffset", {"inputName": name, "inputAudioSyncOffset": ms}
                )
            except RequestFailed as e:
                lines.append(input_problem(name, e))
            del self.originals[name]
        self.set_ms, self.set_at_s, self.inputs = None, -math.inf, ()
        return lines

    def forget_set(self) -> None:
        """After a reconnect: set again at once (the originals are kept)."""
        self.set_ms, self.set_at_s = None, -math.inf


def input_problem(name: str, error: RequestFailed) -> str:
    """A failed request on input ``name`` in words."""
    if error.code == NOT_FOUND:
        return f"OBS has no input named {name!r} (renamed or deleted?)"
    if error.code == INVALID_STATE:
        return f"OBS's input {name!r} has no audio"
    return f"OBS input {name!r}: {error.message}"
