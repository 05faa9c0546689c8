"""Mirror applies live: the Input panel's checkbox flips a running stream's frames (a real
clip from testdata as the camera) from the next frame on, without a restart; the config
follows and is what the next start uses. The input's other settings say "applies at
restart" beside them, the mirror does not."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.sources import make_source
from livecam.sources.base import EndOfStream
from ui.panels.input_panel import InputPanel
from ui.panels.next_start import RESTART_TAG, TAG_NAME
from ui.settings import UiSettings
from ui.stream import StreamController

CLIP = "video/liveportrait_d6.mp4"  # a talking head, 33 s, 480x480
SIZE = (320, 240)
THUMB = (80, 60)
MATCH = 3.0  # mean grey-level distance of a frame to the clip frame it is (decode noise)


def thumb(frame: np.ndarray) -> np.ndarray:
    return np.asarray(cv2.resize(frame, THUMB, interpolation=cv2.INTER_AREA), np.float32)


def clip_thumbs(spec: str) -> np.ndarray:
    """Every frame of the clip as the stream's source delivers it, at ``SIZE``, thumbnailed."""
    config = small_config(source={"spec": spec, "size": list(SIZE)})
    source = make_source(config.source)
    source.open()
    thumbs = []
    try:
        while True:
            frame = source.read()
            if (frame.shape[1], frame.shape[0]) != SIZE:  # as the capture conforms it
                frame = np.asarray(cv2.resize(frame, SIZE, interpolation=cv2.INTER_AREA))
            thumbs.append(thumb(frame))
    except EndOfStream:
        pass
    finally:
        source.close()
    return np.stack(thumbs)


def distances(frame: np.ndarray, clip: np.ndarray) -> tuple[float, float]:
    """How far ``frame`` is from the nearest clip frame as it is, and mirrored."""
    t = thumb(frame)
    plain = float(np.abs(clip - t).mean(axis=(1, 2, 3)).min())
    flipped = float(np.abs(clip - t[:, ::-1]).mean(axis=(1, 2, 3)).min())
    return plain, flipped


def test_mirror_flips_a_running_clip_without_a_restart(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    spec = str(testdata / CLIP)
    clip = clip_thumbs(spec)
    assert np.abs(clip - clip[:, :, ::-1]).mean() > 5 * MATCH  # the clip is not symmetric
    stream = StreamController(small_config(source={"spec": spec, "size": list(SIZE)}))
    frames: list[np.ndarray] = []
    stream.frame.connect(frames.append)
    panel = InputPanel(stream, settings)
    qtbot.addWidget(panel)
    stream.start()
    app = stream.app
    try:
        qtbot.waitUntil(lambda: len(frames) >= 3, timeout=10000)
        plain, flipped = distances(frames[-1], clip)
        assert plain < MATCH < flipped, (plain, flipped)

        for on in (True, False):
            with qtbot.waitSignal(stream.applied, timeout=5000) as done:
                panel.mirror.setChecked(on)
            assert done.args == [f"mirror {'on' if on else 'off'}"]
            wanted = len(frames) + 12
            # the frames already in flight are at most the ring's; then every one is flipped
            qtbot.waitUntil(lambda: len(frames) >= wanted, timeout=10000)  # noqa: B023
            plain, flipped = distances(frames[-1], clip)
            mirrored, other = (flipped, plain) if on else (plain, flipped)
            assert mirrored < MATCH < other, (on, plain, flipped)
            assert stream.app is app and stream.running  # no restart
            assert stream.config.source.mirror is on
            assert panel.changes.bar.isHidden()  # nothing waits for a restart
    finally:
        stream.stop()
    assert stream.config.source.mirror is False  # the next start uses the live state
    # (the window saves each applied config: MainWindow._on_config)


def test_a_mirror_change_while_stopped_goes_into_the_config(
    qtbot: QtBot, settings: UiSettings
) -> None:
    stream = StreamController(small_config())
    panel = InputPanel(stream, settings)
    qtbot.addWidget(panel)
    panel.mirror.setChecked(True)
    assert stream.config.source.mirror and UiSettings().config.source.mirror


def test_only_the_settings_that_wait_for_a_restart_say_so(
    qtbot: QtBot, settings: UiSettings
) -> None:
    panel = InputPanel(StreamController(small_config()), settings)
    qtbot.addWidget(panel)
    panel.show()
    for control in (panel.kind, panel.resolution, panel.fps):
        assert control.property(TAG_NAME) is True
        row = control.parentWidget()
        assert row is not None
        tags = [t for t in row.findChildren(QLabel, TAG_NAME) if t.buddy() is control]
        assert [t.text() for t in tags] == [RESTART_TAG] and tags[0].isVisible()
    assert not panel.mirror.property(TAG_NAME)
    assert not [t for t in panel.findChildren(QLabel, TAG_NAME) if t.buddy() is panel.mirror]
