"""The Source panel: a photo's faces boxed and picked, bad photos a message while the
stream keeps running, live face changes keep frames coming, recent faces persisted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from pytestqt.qtbot import QtBot
from synthetic_stream import small_config

from livecam.app import Resources
from livecam.config.schema import Config
from livecam.face.build import build_parts, photo_analyzer
from livecam.models.presets import PRESETS
from livecam.userfiles.images import load_image_bgr
from ui.panels.photo_faces import BOX_COLOURS, PhotoFaceFinder
from ui.panels.source_panel import SourcePanel
from ui.settings import UiSettings
from ui.stream import StreamController

TWO_PEOPLE = "faces/obama_biden_two_people.jpg"
BOX_RGB_OTHER = tuple(reversed(BOX_COLOURS[0]))


@pytest.fixture
def live(qtbot: QtBot, testdata: Path) -> Iterator[StreamController]:
    """A running stream on the synthetic source swapping in a real face."""
    stream = StreamController(small_config(testdata / "faces/astronaut_eileen_collins.png"))
    stream.start()
    yield stream
    stream.stop()


def make_panel(qtbot: QtBot, stream: StreamController, settings: UiSettings) -> SourcePanel:
    panel = SourcePanel(stream, settings)
    qtbot.addWidget(panel)
    return panel


def load(qtbot: QtBot, panel: SourcePanel, path: Path) -> bool:
    with qtbot.waitSignal(panel.analysed, timeout=30000) as done:
        panel.load(path)
    ok: bool = done.args[0]
    return ok


def test_two_people_are_boxed_and_face_1_goes_into_the_config(
    qtbot: QtBot, testdata: Path, settings: UiSettings
) -> None:
    stream = StreamController(small_config())
    panel = make_panel(qtbot, stream, settings)
    photo = testdata / TWO_PEOPLE
    assert load(qtbot, panel, photo)
    assert panel.faces is not None and len(panel.faces.boxes) == 2
    assert panel.picker.count() == 2 and panel.face_index == 0
    assert panel.message.text().startswith("2 faces found: the largest (0) is used")

    # click the second face's box on the thumbnail
    x0, y0, x1, y1 = panel.faces.boxes[1]
    pixmap = panel.thumb.pixmap()
    scale = pixmap.width() / panel.faces.image.shape[1]
    cx = (panel.thumb.width() - pixmap.width()) / 2 + (x0 + x1) / 2 * scale
    cy = (panel.thumb.height() - pixmap.height()) / 2 + (y0 + y1) / 2 * scale
    qtbot.mouseClick(panel.thumb, Qt.MouseButton.LeftButton, pos=QPoint(round(cx), round(cy)))
    assert panel.face_index == 1 and panel.picker.currentIndex() == 1
    assert panel.message.text().startswith("2 faces found: face 1 is used"), panel.message.text()
    # the thumbnail boxes both faces; the chosen one (1) in the chosen colour
    shown = panel.thumb.pixmap().toImage()
    b, g, r = BOX_COLOURS[1]
    for i, (bx0, by0, _, by1) in enumerate(panel.faces.boxes):
        left = shown.pixelColor(round(bx0 * scale), round((by0 + by1) / 2 * scale))
        assert (left.red(), left.green(), left.blue()) == ((r, g, b) if i == 1 else BOX_RGB_OTHER)
    cfg = stream.config
    assert cfg.swap.face == str(photo) and cfg.swap.face_index == 1
    assert "swap" in cfg.pipeline.stages and "passthrough" not in cfg.pipeline.stages
    saved = UiSettings()  # what the next run reads
    assert saved.config.swap.face_index == 1 and saved.config.swap.face == str(photo)


def test_panel_numbers_faces_as_the_swap_does(testdata: Path) -> None:
    """Face N of the panel is face N of the lite swap's own photo analysis."""
    photo = testdata / TWO_PEOPLE
    boxes = PhotoFaceFinder(Resources()).find(photo).boxes
    parts = build_parts(PRESETS["lite"], Config().swap)
    try:
        faces = photo_analyzer(parts, identity=False).analyze(load_image_bgr(photo))
    finally:
        for part in parts.all():
            part.close()
    assert len(faces) == len(boxes) == 2
    for face, (x0, y0, x1, y1) in zip(faces, boxes, strict=True):
        cx, cy = (face.bbox[0] + face.bbox[2]) / 2, (face.bbox[1] + face.bbox[3]) / 2
        assert x0 <= cx <= x1 and y0 <= cy <= y1


def test_bad_photos_are_a_message_and_the_stream_keeps_running(
    qtbot: QtBot, tmp_path: Path, settings: UiSettings, live: StreamController
) -> None:
    panel = make_panel(qtbot, live, settings)
    before = live.config
    fake = tmp_path / "not_a_photo.jpg"
    fake.write_text("this is text, not a JPEG\n")
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((480, 640, 3), 200, np.uint8))
    frames: list[np.ndarray] = []
    live.frame.connect(frames.append)

    assert not load(qtbot, panel, fake)
    assert "not_a_photo.jpg" in panel.message.text() and "fix:" in panel.message.text()
    assert not load(qtbot, panel, blank)
    assert "no face found in blank.png" in panel.message.text()
    assert live.running and live.config == before
    assert settings.panel.recent_faces == []  # failures are not remembered
    qtbot.waitUntil(lambda: len(frames) >= 3, timeout=5000)

    # the control plane's own refusal (a photo removed after it was shown) is shown too
    assert load(qtbot, panel, Path(__file__).resolve().parents[2] / "assets/grace_hopper.jpg")
    assert panel.faces is not None
    gone = tmp_path / "gone.jpg"
    panel.faces = type(panel.faces)(gone, panel.faces.image, panel.faces.boxes)
    with qtbot.waitSignal(live.failed, timeout=5000):
        panel.pick_face(0)
    assert "gone.jpg" in panel.message.text() and live.running


def test_a_live_face_change_keeps_frames_coming(
    qtbot: QtBot, testdata: Path, settings: UiSettings, live: StreamController
) -> None:
    panel = make_panel(qtbot, live, settings)
    frames: list[np.ndarray] = []
    live.frame.connect(frames.append)
    photo = testdata / TWO_PEOPLE
    with qtbot.waitSignal(live.applied, timeout=60000) as applied:
        assert load(qtbot, panel, photo)
        n = len(frames)
    assert applied.args[0].startswith("face obama_biden_two_people.jpg")
    assert live.config.swap.face == str(photo) and live.config.swap.face_index == 0
    qtbot.waitUntil(lambda: len(frames) >= n + 5, timeout=10000)  # frames kept coming
    assert "Now swapping in" in panel.message.text()
    assert UiSettings().config.swap.face == str(photo)  # kept for the next run


def test_recent_faces_persist_and_a_click_uses_one(
    qtbot: QtBot, testdata: Path, settings: UiSettings
) -> None:
    stream = StreamController(small_config())
    panel = make_panel(qtbot, stream, settings)
    first, second = testdata / "faces/grace_hopper_navy_portrait.jpg", testdata / TWO_PEOPLE
    assert load(qtbot, panel, first)
    assert load(qtbot, panel, second)

    again = make_panel(qtbot, StreamController(small_config()), UiSettings())
    names = [again.gallery.item(i).text() for i in range(again.gallery.count())]
    assert names == [second.name, first.name]
    assert not again.gallery.item(1).icon().isNull()
    with qtbot.waitSignal(again.analysed, timeout=30000):
        again.gallery.itemClicked.emit(again.gallery.item(1))
    assert again.stream.config.swap.face == str(first)
    assert again.stream.config.swap.face_index is None  # one face in that photo


def test_the_panel_finds_faces_through_the_apps_cache(
    qtbot: QtBot, testdata: Path, settings: UiSettings
) -> None:
    """One cache for the panel and every run it starts: a photo is analysed once."""
    stream = StreamController(small_config())
    panel = make_panel(qtbot, stream, settings)
    photo = testdata / TWO_PEOPLE
    assert load(qtbot, panel, photo)
    cache = stream.resources.faces
    analysed = cache.analyses  # 1, or 0 where an earlier test left it on disk
    assert load(qtbot, panel, photo)
    assert cache.analyses == analysed and len(cache) == 1  # the second time from the cache
    stream.start()
    try:
        assert stream.app is not None and stream.app.faces is stream.resources.faces
    finally:
        stream.stop()


def test_the_saved_face_is_shown_at_start_and_nothing_is_applied(
    qtbot: QtBot, testdata: Path, settings: UiSettings
) -> None:
    photo = testdata / TWO_PEOPLE
    config = small_config().with_section("swap", face=str(photo), face_index=1)
    stream = StreamController(config)
    panel = make_panel(qtbot, stream, settings)
    qtbot.waitUntil(lambda: panel.faces is not None, timeout=30000)
    assert panel.faces is not None and panel.faces.path == photo.absolute()
    assert len(panel.faces.boxes) == 2
    assert panel.face_index == 1 and panel.picker.currentIndex() == 1  # the saved face
    assert not panel.thumb.pixmap().isNull()
    assert stream.config == config  # shown, not applied
    assert UiSettings().config.swap.face is None  # and nothing saved
