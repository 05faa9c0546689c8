"""What LiveCam knows of OBS at one moment (``ObsState``) and how the status line and the
panel say it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Connection = Literal["off", "connecting", "connected", "failed"]


@dataclass(frozen=True)
class ObsState:
    """The link's view of OBS: the connection (with OBS's version, or why not and the
    fix), OBS's outputs from its events, and the audio delay LiveCam set.

    ``audio_delay_ms``: the sync offset LiveCam set on ``audio_inputs`` (None: none set,
    or put back); ``audio_problem``: why the lip sync cannot set it (no microphone input,
    an input without audio), "" when fine.
    """

    connection: Connection = "off"
    obs_version: str = ""
    websocket_version: str = ""
    problem: str = ""
    fix: str = ""
    streaming: bool = False
    recording: bool = False
    virtualcam: bool = False
    audio_delay_ms: int | None = None
    audio_inputs: tuple[str, ...] = ()
    audio_problem: str = ""

    @property
    def connected(self) -> bool:
        return self.connection == "connected"

    @property
    def on_air(self) -> bool:
        """OBS is streaming or recording (what viewers see or will see)."""
        return self.connected and (self.streaming or self.recording)

    def outputs_text(self) -> str:
        """``LIVE REC VCAM``: OBS's active outputs, "idle" when none."""
        flags = (("LIVE", self.streaming), ("REC", self.recording), ("VCAM", self.virtualcam))
        return " ".join(name for name, on in flags if on) or "idle"

    def audio_text(self) -> str:
        """The lip sync in words, "" when it is off."""
        if self.audio_problem:
            return f"lip sync: {self.audio_problem}"
        if self.audio_delay_ms is None:
            return ""
        return f"audio delayed by {self.audio_delay_ms} ms in OBS to match the video"

    def connection_text(self) -> str:
        """``connected to OBS 29.0.2 (obs-websocket 5.1.0)``, or why not."""
        if self.connection == "connected":
            return f"connected to OBS {self.obs_version} (obs-websocket {self.websocket_version})"
        if self.connection == "failed":
            return f"not connected: {self.problem}"
        return "connecting..." if self.connection == "connecting" else "off"

    def status_text(self) -> str:
        """The terminal status line's OBS part, short."""
        if self.connection != "connected":
            return "OBS " + ("not connected" if self.connection == "failed" else self.connection)
        delay = f", audio +{self.audio_delay_ms} ms" if self.audio_delay_ms is not None else ""
        return f"OBS {self.outputs_text()}{delay}"
