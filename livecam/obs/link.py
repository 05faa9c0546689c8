"""The link between a running stream and OBS: one thread of its own (``ObsLink``) that
does every OBS call, each with the config's timeout, so no frame ever waits for OBS.

* Connects, and after a refusal or a lost connection (OBS quit, restarted or was killed)
  tries again every ``obs.retry_s`` until the stream stops; each change of the connection
  is one event (the status line and the panel show ``state``).
* Follows OBS's stream, recording and virtual-camera state from OBS's own events
  (obsws-python's event thread only records them); the state is read once per connect.
* With ``obs.blank_scene``, switches OBS to that scene while the output is blanked and
  back to the scene it showed before when the blank ends (or the stream stops).
* With ``obs.sync_audio``, keeps the microphone inputs' audio sync offset at LiveCam's
  measured latency (``livecam.obs.lipsync``), and puts each input's own offset back when
  the stream stops or the sync is switched off (``set_sync_audio``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from livecam.config.obs import ObsConfig
from livecam.obs.client import ObsError, ObsLost, RequestFailed, Session, connect
from livecam.obs.lipsync import AudioSync, LatencyWindow, SyncPolicy, SyncProblem, target_ms
from livecam.obs.secret import read_password
from livecam.obs.state import ObsState
from livecam.stream.worker import Worker
from livecam.telemetry.hub import Telemetry
from livecam.types import Event

log = logging.getLogger(__name__)

TICK_S = 0.2  # how often the link looks at the latency, the sync switch and the connection
HEARTBEAT_S = 5.0  # a request when nothing was heard from OBS for this long
ORIGIN = "obs"
UNDO_HINT = "set it back in OBS: Edit > Advanced Audio Properties > Sync Offset"


class ObsLink(Worker):
    """See the module docstring. ``state`` is safe to read from any thread."""

    def __init__(
        self,
        cfg: ObsConfig,
        telemetry: Telemetry,
        stop: threading.Event,
        fps: float,
        password: str | None = None,
        blanked: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__("obs", stop, telemetry)
        self.cfg = cfg
        self.fps = fps
        self.finish_grace_s = 3 * cfg.timeout_s + 0.5  # putting the offsets back
        self._password = read_password() if password is None else password
        self._lock = threading.Lock()
        self._state = ObsState(connection="connecting")
        self._sync_on = cfg.sync_audio
        self._heard_at = time.monotonic()
        self.latency = LatencyWindow()
        self._subscription = telemetry.subscribe(on_frame=self.latency.add)
        self._audio = AudioSync(cfg.audio_inputs)
        self._policy = SyncPolicy(cfg.sync_threshold_ms, cfg.sync_interval_s)
        self._session: Session | None = None
        self._blanked = blanked or (lambda: False)
        self._scene_before: str | None = None  # the scene blank_scene replaced
        self._blank_seen = False

    # --- reading and switching (any thread) ----------------------------------------------
    @property
    def state(self) -> ObsState:
        with self._lock:
            return self._state

    @property
    def sync_audio(self) -> bool:
        with self._lock:
            return self._sync_on

    def set_sync_audio(self, on: bool) -> None:
        """Lip sync on or off; off puts the inputs' own offsets back (within a tick)."""
        with self._lock:
            self._sync_on = on

    def _update(self, **changes: Any) -> ObsState:
        with self._lock:
            self._state = dataclasses.replace(self._state, **changes)
            return self._state

    def _say(self, level: str, message: str, hint: str = "", panel_hint: str = "") -> None:
        self.telemetry.event(Event(level, ORIGIN, message, hint, panel_hint=panel_hint))  # type: ignore[arg-type]

    # --- the thread ----------------------------------------------------------------------
    def loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._session = self._connect()
            except ObsError as e:
                self._failed(e)
                self.stop_event.wait(self.cfg.retry_s)
                continue
            try:
                self._serve(self._session)
            except ObsError as e:
                self._session.close()
                self._session = None
                self._audio.forget_set()
                self._failed(e)
                self.stop_event.wait(self.cfg.retry_s)

    def _connect(self) -> Session:
        handlers = {
            "stream_state_changed": lambda d: self._output("streaming", d),
            "record_state_changed": lambda d: self._output("recording", d),
            "virtualcam_state_changed": lambda d: self._output("virtualcam", d),
        }
        cfg = self.cfg
        session = connect(cfg.host, cfg.port, self._password, cfg.timeout_s, handlers)
        try:
            version = session.call("GetVersion")
            outputs = {
                "streaming": _active(session, "GetStreamStatus"),
                "recording": _active(session, "GetRecordStatus"),
                "virtualcam": _active(session, "GetVirtualCamStatus"),
            }
        except ObsError:
            session.close()
            raise
        self._heard_at = time.monotonic()
        state = self._update(
            connection="connected",
            obs_version=str(version.get("obsVersion", "?")),
            websocket_version=str(version.get("obsWebSocketVersion", "?")),
            problem="",
            fix="",
            **outputs,
        )
        self._say("info", f"{state.connection_text()}; {state.outputs_text()}")
        return session

    def _failed(self, error: ObsError) -> None:
        before = self.state
        self._update(
            connection="failed", problem=error.message, fix=error.hint, audio_delay_ms=None
        )
        if before.problem != error.message:  # each new reason once, not every retry
            self._say(
                "warning",
                f"{error.message}; LiveCam goes on and tries again every {self.cfg.retry_s:g} s",
                error.hint,
                error.panel_hint,
            )

    def _output(self, name: str, data: Any) -> None:
        """An output event from OBS (obsws-python's event thread): record it, say it."""
        active = bool(getattr(data, "output_active", False))
        self._heard_at = time.monotonic()
        before = getattr(self.state, name)
        self._update(**{name: active})
        if active != before:
            what = {
                "streaming": "streaming",
                "recording": "recording",
                "virtualcam": "virtual camera",
            }
            self._say("info", f"OBS {'started' if active else 'stopped'} {what[name]}")

    def _serve(self, session: Session) -> None:
        """Until the stream stops: the lip sync, and a heartbeat when OBS was quiet.
        ObsLost when the connection is gone."""
        while not self.stop_event.is_set():
            if not session.alive:
                raise ObsLost("OBS closed the connection (it quit or restarted)", "start OBS again")
            self._sync(session)
            self._follow_blank(session)
            if time.monotonic() - self._heard_at > HEARTBEAT_S:
                self._update(recording=_active(session, "GetRecordStatus"))
                self._heard_at = time.monotonic()
            self.stop_event.wait(TICK_S)

    def _sync(self, session: Session) -> None:
        """Set, update or put back the audio offset as the switch and latency say."""
        if not self.sync_audio:
            if self._audio.originals:
                self._put_back(session)
            return
        median = self.latency.median_ms(time.perf_counter_ns())
        if median is None:
            return
        target = target_ms(median, self.fps)
        now = time.monotonic()
        audio = self._audio
        if not self._policy.due(target, audio.set_ms, audio.set_at_s, now):
            return
        try:
            audio.apply(session, target, now)
        except SyncProblem as e:
            audio.set_at_s = now  # tried: again after the interval, not every tick
            if self.state.audio_problem != e.message:
                self._say("warning", f"lip sync: {e.message}", e.hint)
            self._update(
                audio_problem=e.message, audio_delay_ms=audio.set_ms, audio_inputs=audio.inputs
            )
            return
        self._update(audio_delay_ms=target, audio_inputs=audio.inputs, audio_problem="")
        own = ", ".join(f"{n} {ms} ms" for n, ms in audio.originals.items())
        self._say(
            "info",
            f"audio delayed by {target} ms in OBS to match the video (latency {median:.0f} ms "
            f"+ one frame); own offsets, put back at the end: {own}",
        )

    def _follow_blank(self, session: Session, blank: bool | None = None) -> None:
        """OBS on ``obs.blank_scene`` while the output is blanked, back after (each change
        of the blank once: a missing scene is one warning, not a retry every tick)."""
        scene = self.cfg.blank_scene
        blank = self._blanked() if blank is None else blank
        if scene is None or blank == self._blank_seen:
            return
        self._blank_seen = blank
        target = scene if blank else self._scene_before
        if target is None:  # the switch to the blank scene had failed
            return
        try:
            if blank:
                now = session.call("GetCurrentProgramScene").get("currentProgramSceneName")
                session.call("SetCurrentProgramScene", {"sceneName": scene})
                self._scene_before = str(now)
                self._say("info", f"blanked: OBS shows the scene {scene!r}")
            else:
                self._scene_before = None
                session.call("SetCurrentProgramScene", {"sceneName": target})
                self._say("info", f"blank off: OBS shows the scene {target!r} again")
        except RequestFailed as e:
            self._say(
                "warning",
                f"OBS did not switch to the scene {target!r}: {e.comment or e.message}",
                "name an existing scene: --obs-blank-scene SCENE ([obs] blank_scene)",
            )

    def _put_back(self, session: Session) -> None:
        originals = dict(self._audio.originals)
        lines = self._audio.restore(session)
        self._update(audio_delay_ms=None, audio_inputs=(), audio_problem="")
        for line in lines:
            self._say("warning", f"the audio offset was not put back: {line}", UNDO_HINT)
        done = ", ".join(f"{n} {ms} ms" for n, ms in originals.items())
        self._say("info", f"OBS's own audio offsets put back: {done}")

    def cleanup(self) -> None:
        """Put the inputs' own offsets back (connecting once more if the link was down),
        then close the connection."""
        self._subscription.unsubscribe()
        session = self._session
        try:
            if self._audio.originals or self._scene_before is not None:
                if session is None or not session.alive:
                    cfg = self.cfg
                    session = connect(cfg.host, cfg.port, self._password, cfg.timeout_s)
                self._follow_blank(session, blank=False)
                if self._audio.originals:
                    self._put_back(session)
        except ObsError as e:
            lost = ", ".join(f"{n} to {ms} ms" for n, ms in self._audio.originals.items())
            self._say(
                "warning",
                f"OBS's audio offset was not put back ({e.message})",
                f"{UNDO_HINT}: {lost}",
            )
        finally:
            if session is not None:
                session.close()
            self._session = None
            self._update(connection="off", audio_delay_ms=None)


def _active(session: Session, request: str) -> bool:
    """Whether the output of a Get...Status request is active (False where OBS has no such
    output: no virtual camera on this machine)."""
    try:
        return bool(session.call(request).get("outputActive", False))
    except RequestFailed:
        return False
