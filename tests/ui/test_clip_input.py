"""A video file as the panel's input is a camera: played in real time at its own rate
even with "Preview only" (never converted as fast as possible), looped by the Input tab's
Loop (on by default), and its end with Loop off is said in the window, not a silent stop.
A testdata clip of 31 frames at 29.97 fps (about 1 s)."""

from __future__ import annotations

import time
from pathlib import Path

from pytestqt.qtbot import QtBot

from livecam.app import App
from livecam.config.schema import Config
from ui.main_window import MainWindow
from ui.panels.input_panel import InputPanel
from ui.settings import UiSettings, first_run_config
from ui.stream import StreamController

CLIP = Path("video") / "openmpf_video_01_short_h264_aac.mp4"
CLIP_FRAMES = 31
TIMEOUT_MS = 30000


def clip_config(testdata: Path, loop: bool) -> Config:
    """The clip into "Preview only" (the null sink: only the panel shows the frames)."""
    return Config.from_dict(
        {
            "source": {"spec": str(testdata / CLIP), "loop": loop},
            "output": {"sinks": ["null"]},
        }
    )


def test_a_clip_loops_in_real_time(qtbot: QtBot, testdata: Path) -> None:
    stream = StreamController(clip_config(testdata, loop=True))
    with qtbot.waitSignal(stream.running_changed, timeout=TIMEOUT_MS):
        stream.start()
    app = stream.app
    try:
        assert app is not None and app.playback is not None and app.source is not None
        assert app.playback.paced and not app.playback.conversion
        fps = app.source.fps
        # it goes on past its last frame: more frames than the file has, and the file's
        # timestamps run on into a second pass (the frame index wrapped to the start)
        qtbot.waitUntil(lambda: app.snapshot().frames_in > CLIP_FRAMES + 5, timeout=TIMEOUT_MS)
        assert stream.running
        media_ns = app.source.media_ns
        assert media_ns is not None and media_ns > CLIP_FRAMES / fps * 1e9
    finally:
        stream.stop()
    # the panel's real time is not written into the config of the next start
    assert stream.config.source.unpaced is None and stream.config.source.loop


def test_loop_is_on_by_default_and_the_checkbox_writes_it(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    assert first_run_config().source.loop
    stream = StreamController(settings.config)
    panel = InputPanel(stream, settings)
    qtbot.addWidget(panel)
    assert panel.loop.isChecked()
    panel.loop.setChecked(False)
    assert not stream.config.source.loop and not settings.config.source.loop
    stream.set_config(clip_config(testdata, loop=True))
    assert panel.loop.isChecked()  # follows the config


def test_the_end_of_a_clip_without_loop_is_said_in_the_window(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    settings.save_config(clip_config(testdata, loop=False))
    stream = StreamController(Config())
    window = MainWindow(stream, settings)
    qtbot.addWidget(window)
    window.show()
    apps: list[App | None] = []
    stream.running_changed.connect(lambda on: apps.append(stream.app) if on else None)
    shown: list[float] = []  # when each frame reached the panel
    stream.frame.connect(lambda _: shown.append(time.monotonic()))
    try:
        with qtbot.waitSignal(stream.stopped, timeout=TIMEOUT_MS) as stopped:
            window.toggle_running()
        ended = time.monotonic()
        assert stopped.args == [""]  # a normal end, no failure
        app = apps[0]
        assert app is not None
        assert app.playback is not None and app.source is not None
        # played once into "Preview only", still like a camera: paced by the capture
        # thread, newest frame wins (a file conversion would run unpaced, lossless)
        assert app.playback.paced and not app.playback.conversion and not app.playback.lossless
        # so never ahead of the clip's clock: from the first frame shown to the end takes
        # at least the clip's length less two periods (unpaced, the whole clip was out in
        # a third of it); a loaded machine only takes longer, and delivers fewer frames
        fps = app.source.fps
        assert shown, "the panel showed the clip"
        assert ended - shown[0] >= (CLIP_FRAMES - 2) / fps, (ended - shown[0], fps)
        assert 0 < app.snapshot().frames_in <= CLIP_FRAMES
        assert not stream.running
        text = window.message.text()
        assert window.message.isVisible() and CLIP.name in text and "ended" in text
        assert "Loop" in text and CLIP.name in window.statusBar().currentMessage()
    finally:
        window.close()
