"""The link to a real OBS Studio (obs-websocket 5, ``obs`` fixture): lip sync read back
from OBS and put back at the end, OBS's recording state from its events, a wrong password
in one line (and never in a log), and OBS killed mid-run while the stream goes on."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from fakes import SlowStage
from obs_studio import MIC, OWN_OFFSET_MS, ObsStudio
from synthetic_stream import small_config
from waiting import poll

from livecam.app import App
from livecam.obs.client import Session
from livecam.obs.link import ObsLink
from livecam.sinks.null import NullSink
from livecam.telemetry.hub import Telemetry

FPS = 30.0
EXTRA_S = 0.06  # latency injected by a slow stage...
HEAVIER_S = 0.25  # ...and after a change (a heavier preset, a remote GPU)


def obs_app(obs: ObsStudio, stage: SlowStage | None = None, **obs_fields: Any) -> App:
    cfg = small_config(
        source={"fps": FPS},
        obs={
            "enabled": True,
            "host": "127.0.0.1",
            "port": obs.port,
            "timeout_s": 3.0,
            "retry_s": 0.3,
            "sync_interval_s": 0.5,
            **obs_fields,
        },
    )
    app = App(cfg, stages=[stage or SlowStage()], sinks=[NullSink()])
    app.start()
    return app


def test_lip_sync_sets_the_microphone_offset_to_the_latency_and_puts_it_back(
    obs: ObsStudio, studio: Session
) -> None:
    stage = SlowStage(EXTRA_S)
    app = obs_app(obs, stage, sync_audio=True)
    period_ms = 1000 / FPS
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.audio_delay_ms is not None, 30), link.state
        state = link.state
        assert state.audio_inputs == (MIC,) and not state.audio_problem
        set_ms = obs.offset(studio)  # read back from OBS
        assert set_ms == state.audio_delay_ms
        latency = app.snapshot().latency_ms
        assert latency is not None and latency.p50 > EXTRA_S * 1000
        assert abs(set_ms - (latency.p50 + period_ms)) <= period_ms, (set_ms, latency)
        assert "audio delayed by" in state.audio_text()
        stage.process_s = HEAVIER_S  # the latency moves: the offset follows, once
        assert poll(lambda: obs.offset(studio) > HEAVIER_S * 1000 + period_ms, 30)
        recent = link.latency.median_ms(time.perf_counter_ns())
        assert recent is not None and recent > HEAVIER_S * 1000
        assert abs(obs.offset(studio) - (recent + period_ms)) <= period_ms, recent
    finally:
        app.stop()
    sets = [e for e in app.telemetry.recent_events() if e.message.startswith("audio delayed")]
    assert 2 <= len(sets) <= 4, [e.message for e in sets]  # follows, never in a loop
    assert obs.offset(studio) == OWN_OFFSET_MS  # the user's own offset is back


def test_switching_lip_sync_off_puts_the_offset_back_while_running(
    obs: ObsStudio, studio: Session
) -> None:
    app = obs_app(obs, sync_audio=True)
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.audio_delay_ms is not None, 30), link.state
        link.set_sync_audio(False)
        assert poll(lambda: obs.offset(studio) == OWN_OFFSET_MS, 10)
        assert link.state.audio_delay_ms is None and app.running
    finally:
        app.stop()


def test_a_renamed_microphone_or_one_without_audio_is_one_line_and_the_stream_goes_on(
    obs: ObsStudio, studio: Session
) -> None:
    scene = studio.call("GetCurrentProgramScene")["currentProgramSceneName"]
    if "Colour card" not in [i["inputName"] for i in studio.call("GetInputList")["inputs"]]:
        card = {"inputName": "Colour card", "inputKind": "color_source_v3", "inputSettings": {}}
        studio.call("CreateInput", {"sceneName": scene, "sceneItemEnabled": True, **card})
    app = obs_app(obs, sync_audio=True, audio_inputs=["Mic renamed", "Colour card", MIC])
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.audio_problem != "", 30), link.state
        state = link.state
        assert state.audio_problem == (
            "OBS has no input named 'Mic renamed' (renamed or deleted?); "
            "OBS's input 'Colour card' has no audio"
        )
        assert state.audio_inputs == (MIC,) and obs.offset(studio) != OWN_OFFSET_MS  # the rest
        sent = app.snapshot().frames_out
        assert poll(lambda: app.snapshot().frames_out > sent + 10, 10) and not app.crashes
    finally:
        app.stop()
    assert obs.offset(studio) == OWN_OFFSET_MS


def test_blank_shows_the_be_right_back_scene_in_obs_and_back(
    obs: ObsStudio, studio: Session
) -> None:
    def program() -> str:
        return str(studio.call("GetCurrentProgramScene")["currentProgramSceneName"])

    scenes = [s["sceneName"] for s in studio.call("GetSceneList")["scenes"]]
    if "BRB" not in scenes:
        studio.call("CreateScene", {"sceneName": "BRB"})
    show = program()
    app = obs_app(obs, blank_scene="BRB")
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.connected, 30), link.state
        app.controls.set_blank(True).wait(10)
        assert poll(lambda: program() == "BRB", 10)
        app.controls.set_blank(False).wait(10)
        assert poll(lambda: program() == show, 10)
    finally:
        app.stop()


def test_recording_in_obs_shows_in_the_state_within_a_second(
    obs: ObsStudio, studio: Session
) -> None:
    app = obs_app(obs)
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.connected, 30), link.state
        assert not link.state.recording and not link.state.on_air
        studio.call("StartRecord")
        try:
            assert poll(lambda: studio.call("GetRecordStatus")["outputActive"], 10)
            assert poll(lambda: link.state.recording, 1.0)  # from OBS's event
            assert link.state.on_air and "REC" in link.state.status_text()
        finally:
            studio.call("StopRecord")
        assert poll(lambda: not link.state.recording, 10)
        assert not link.state.on_air
    finally:
        app.stop()
    assert poll(lambda: list(obs.records.glob("*.mkv")), 20), "OBS recorded nothing"


def test_a_wrong_password_is_one_line_and_never_logged(
    obs: ObsStudio, studio: Session, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "not-the-password-9137"
    cfg = small_config(obs={"enabled": True, "host": "127.0.0.1", "port": obs.port}).obs
    telemetry = Telemetry()
    stop = threading.Event()
    link = ObsLink(cfg, telemetry, stop, FPS, password=wrong)
    link.start()
    try:
        assert poll(lambda: link.state.connection == "failed", 20), link.state
    finally:
        stop.set()
        link.join(10)
    state = link.state
    assert "refused the WebSocket password" in state.problem
    assert "\n" not in state.problem and "livecam obs password" in state.fix
    events = [e for e in telemetry.recent_events() if e.origin == "obs"]
    assert len(events) == 1 and "password" in events[0].message
    assert wrong not in caplog.text and obs.password not in caplog.text


def test_obs_killed_mid_run_leaves_the_stream_running_and_reconnects(
    obs: ObsStudio, studio: Session
) -> None:
    app = obs_app(obs)
    try:
        link = app.obs
        assert link is not None
        assert poll(lambda: link.state.connected, 30), link.state
        obs.kill()
        assert poll(lambda: link.state.connection == "failed", 10), link.state
        sent = app.snapshot().frames_out
        assert poll(lambda: app.snapshot().frames_out > sent + 10, 10)  # frames go on
        assert app.running and not app.crashes
        obs.start()
        assert poll(lambda: link.state.connected, 60), link.state
        assert app.running
    finally:
        app.stop()
