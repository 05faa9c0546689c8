"""The OBS section of the config (``[obs]``): LiveCam and OBS Studio in step through
obs-websocket 5 (see ``livecam.obs`` and docs/obs.md). Off by default.

The WebSocket password is not a config field: a config file is plain text that the panel
saves and users share. It is a secret read from ``$LIVECAM_OBS_PASSWORD`` or from the
user's private password file (``livecam obs password``, the panel's OBS box; see
``livecam.obs.secret``), and never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from livecam.config.setting import setting
from livecam.config.validation import Validated

#: obs-websocket's own limits of an input's audio sync offset, in ms
MIN_SYNC_OFFSET_MS, MAX_SYNC_OFFSET_MS = -950, 20000


@dataclass(frozen=True)
class ObsConfig(Validated):
    """How LiveCam talks to OBS Studio (obs-websocket 5, OBS 28 and later)."""

    SECTION: ClassVar[str] = "obs"
    enabled: bool = setting(
        False,
        option="--obs",
        help="connect to OBS Studio (obs-websocket 5): show its stream and recording state "
        "and reconnect by itself (password: $LIVECAM_OBS_PASSWORD or `livecam obs password`)",
    )
    host: str = setting(
        "localhost",
        option="--obs-host",
        metavar="HOST",
        help="the host OBS runs on (default {default})",
    )
    port: int = setting(
        4455,
        option="--obs-port",
        metavar="PORT",
        range=(1, 65535),
        help="OBS's WebSocket server port (default {default})",
    )
    sync_audio: bool = setting(
        False,
        option="--obs-sync-audio",
        help="with --obs: delay OBS's microphone by LiveCam's measured latency so lips match "
        "the voice (the input's own sync offset is put back when LiveCam stops)",
    )
    # OBS input names whose audio is delayed; empty: the microphone/aux inputs (the global
    # Mic/Aux devices and the audio capture inputs of the current scene)
    audio_inputs: tuple[str, ...] = setting(
        (),
        option="--obs-audio-input",
        metavar="NAME",
        help="an OBS input to delay (repeat for several; default: the microphone/aux inputs "
        "of the current scene)",
    )
    # a "be right back" scene OBS shows while the output is blanked (None: OBS not switched)
    blank_scene: str | None = setting(
        None,
        option="--obs-blank-scene",
        metavar="SCENE",
        help="with --obs: switch OBS to this scene while LiveCam's output is blanked, and "
        "back after",
    )
    # a new offset is set when the target moved by more than this ...
    sync_threshold_ms: float = setting(
        10.0, range=(1, 1000), allowed="a number of milliseconds from {min} to {max}"
    )
    # ... and at most once per this period (a latency that wobbles never sets in a loop)
    sync_interval_s: float = setting(
        3.0, range=(0.5, 600), allowed="a number of seconds from {min} to {max}"
    )
    # every request to OBS gives up after this long
    timeout_s: float = setting(
        2.0, range=(0.2, 30), allowed="a number of seconds from {min} to {max}"
    )
    # a lost or refused connection is tried again after this long
    retry_s: float = setting(
        2.0, range=(0.1, 600), allowed="a number of seconds from {min} to {max}"
    )

    def _check(self) -> None:
        self._require(bool(self.host.strip()), "host", "a host name or address, e.g. localhost")
        self._require(
            self.blank_scene is None or bool(self.blank_scene.strip()),
            "blank_scene",
            "the name of an OBS scene, e.g. BRB (or leave the field out)",
        )
        self._require(
            all(name.strip() for name in self.audio_inputs),
            "audio_inputs",
            "OBS input names (not empty), e.g. Mic/Aux",
        )
