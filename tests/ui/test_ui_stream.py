"""The panel's stream controller: start a real stream on the synthetic source, get its
frames and stats on the GUI thread, change it live without blocking, stop it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.config.schema import Config
from livecam.errors import LivecamError
from ui.stream import StreamController

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def threads_named(prefix: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix)]


def test_start_frames_stats_live_change_and_stop(qtbot: QtBot) -> None:
    stream = StreamController(small_config())
    frames: list[np.ndarray] = []
    stream.frame.connect(frames.append)
    stats: list[object] = []
    stream.stats.connect(stats.append)
    with qtbot.waitSignal(stream.running_changed, timeout=5000) as started:
        stream.start()
    assert started.args == [True] and stream.running
    qtbot.waitUntil(lambda: len(frames) >= 5 and len(stats) >= 1, timeout=5000)
    assert frames[-1].shape == (240, 320, 3) and frames[-1].dtype == np.uint8
    # a live change goes through the control plane and comes back as a signal
    with qtbot.waitSignal(stream.applied, timeout=10000) as applied:
        stream.change("blank on", lambda c: c.set_blank(True))
    assert applied.args == ["blank on"]
    qtbot.waitUntil(lambda: not frames[-1].any(), timeout=5000)  # black frames now
    # an impossible change is a failure signal, and the stream keeps running
    with qtbot.waitSignal(stream.failed, timeout=5000) as failed:
        stream.change("swap on", lambda c: c.set_swap(True))  # no source face yet
    assert failed.args[0] == "swap on" and isinstance(failed.args[1], LivecamError)
    assert stream.running
    with qtbot.waitSignal(stream.running_changed, timeout=5000) as stopped:
        assert stream.stop() == []
    assert stopped.args == [False] and not stream.running


def test_a_face_change_while_live_keeps_frames_coming(qtbot: QtBot) -> None:
    stream = StreamController(small_config(ASSETS / "grace_hopper.jpg"))
    frames: list[np.ndarray] = []
    stream.frame.connect(frames.append)
    stream.start()
    try:
        qtbot.waitUntil(lambda: len(frames) >= 3, timeout=10000)
        before = len(frames)
        with qtbot.waitSignal(stream.config_changed, timeout=20000) as changed:
            stream.change("face", lambda c: c.set_face(ASSETS / "astronaut.png"))
        assert changed.args[0].swap.face == str(ASSETS / "astronaut.png")
        # the preview goes on with the new face (the build ran on the app's loader thread)
        qtbot.waitUntil(lambda: len(frames) >= before + 3, timeout=10000)
    finally:
        stream.stop()
    assert stream.config.swap.face == str(ASSETS / "astronaut.png")  # kept for the next start


def test_settings_round_trip_and_a_damaged_file_is_set_aside(tmp_path: Path) -> None:
    from ui.settings import MAX_RECENT_FACES, UiSettings, first_run_config

    settings = UiSettings(tmp_path)
    assert settings.config == first_run_config() and settings.panel.recent_faces == []
    assert settings.config.source.size == (1280, 720) and settings.config.source.fps == 30
    assert settings.config.output.sinks == ("virtualcam",)
    cfg = small_config(ASSETS / "grace_hopper.jpg")
    settings.save_config(cfg)
    for i in range(MAX_RECENT_FACES + 2):
        settings.add_recent_face(tmp_path / f"face{i}.jpg")
    settings.add_recent_face(tmp_path / "face3.jpg")  # again: moves to the front, once
    settings.panel.notice_acknowledged = True
    settings.save_panel()
    again = UiSettings(tmp_path)
    assert again.config == cfg  # the same TOML `livecam run --config` reads
    assert Config.load(tmp_path / "config.toml") == cfg
    assert again.panel.notice_acknowledged
    assert again.panel.recent_faces[0].endswith("face3.jpg")
    assert len(again.panel.recent_faces) == MAX_RECENT_FACES
    (tmp_path / "panel.toml").write_text("recent_faces = [", encoding="utf-8")
    damaged = UiSettings(tmp_path)
    assert damaged.panel.recent_faces == [] and (tmp_path / "panel.toml.bad").exists()


def test_start_async_runs_off_the_gui_thread_and_reports_failures(qtbot: QtBot) -> None:
    stream = StreamController(small_config())
    with qtbot.waitSignal(stream.running_changed, timeout=10000) as started:
        stream.start_async()
        assert stream.starting and not stream.running  # the GUI thread returned at once
    assert started.args == [True] and stream.running and not stream.starting
    stream.stop()
    # a swap stage without a face cannot start: every cause comes back as a signal
    bad = StreamController(small_config().with_section("pipeline", stages=("swap",)))
    with qtbot.waitSignal(bad.start_failed, timeout=10000) as failed:
        bad.start_async()
    assert isinstance(failed.args[0], LivecamError) and "face to swap in" in str(failed.args[0])
    assert not bad.running and not bad.starting
    # closing while a start is under way: the start thread stops what it opened
    before = set(threading.enumerate())  # other tests' threads are not this start's
    late = StreamController(small_config())
    late.start_async()
    with qtbot.waitSignal(late.running_changed, timeout=1000) as abandoned:
        late.stop()
    assert abandoned.args == [False], "listeners learn that the start ended"
    assert not late.starting

    def started_here() -> list[str]:
        return [
            t.name
            for t in set(threading.enumerate()) - before
            if t.name.startswith(("panel-start", "livecam-"))
        ]

    # the start thread ends by stopping the app it opened: none of its threads stays (on
    # a loaded machine a stop's join may time out first; its threads still end)
    try:
        qtbot.waitUntil(lambda: not started_here(), timeout=30000)
    except Exception as e:
        raise AssertionError(f"threads of the abandoned start left: {started_here()}") from e
    assert not late.running
