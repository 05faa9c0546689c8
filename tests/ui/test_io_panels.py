"""The Input and Output panels write the right config fields (round trip through the
settings), apply input changes on restart, check the virtual camera, and the mirror
flips real captured frames."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from pytestqt.qtbot import QtBot
from recording_backend import RecordingStore
from synthetic_stream import small_config

from livecam.config.schema import Config
from livecam.sinks.virtualcam import virtualcam_fix
from livecam.sources.screen import list_monitors
from ui.panels.input_panel import (
    KINDS,
    NO_CAMERA_FOUND,
    NO_CAMERA_ITEM,
    InputPanel,
    spec_kind,
)
from ui.panels.output_panel import ERROR_STYLE, OutputPanel
from ui.settings import UiSettings
from ui.stream import StreamController


def input_panel(qtbot: QtBot, stream: StreamController, settings: UiSettings) -> InputPanel:
    panel = InputPanel(stream, settings)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.devices_listed, timeout=10000):
        pass  # listed on a worker thread, announced through the event loop
    return panel


def test_input_choices_round_trip_through_the_settings(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    stream = StreamController(small_config())
    panel = input_panel(qtbot, stream, settings)
    panel.kind.setCurrentIndex(KINDS.index("region"))
    for box, value in zip(panel.region, (10, 20, 640, 360), strict=True):
        box.setValue(value)
    panel.apply_source()
    panel.resolution.setCurrentIndex(2)  # 720p
    panel.fps.setCurrentIndex(1)  # 60 fps
    panel.mirror.setChecked(True)
    panel.apply_format()
    src = UiSettings().config.source  # what the next run reads
    assert (src.spec, src.size, src.fps, src.mirror) == (
        "screen:10,20,640,360",
        (1280, 720),
        60.0,
        True,
    )
    assert stream.config.source == src

    again = input_panel(qtbot, StreamController(UiSettings().config), UiSettings())
    assert KINDS[again.kind.currentIndex()] == "region"
    assert [b.value() for b in again.region] == [10, 20, 640, 360]
    assert again.resolution.currentText().startswith("720p") and again.mirror.isChecked()

    video = testdata / "video/openmpf_video_01.mp4"
    panel.kind.setCurrentIndex(KINDS.index("video"))
    panel.video.setText(str(video))
    panel.apply_source()
    assert UiSettings().config.source.spec == str(video)
    assert spec_kind(str(video)) == "video" and spec_kind("camera:1") == "camera"
    panel.kind.setCurrentIndex(KINDS.index("synthetic"))
    assert UiSettings().config.source.spec == "synthetic"


def test_no_camera_and_no_display_are_explained(
    qtbot: QtBot, settings: UiSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    stream = StreamController(small_config())
    panel = InputPanel(stream, settings)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.devices_listed, timeout=10000):
        panel.refresh_devices()
    assert panel.message.text() == ""  # the test pattern needs neither: nothing said
    panel.kind.setCurrentIndex(KINDS.index("camera"))
    if not any(Path(f"/dev/video{i}").exists() for i in range(5)):
        assert "No camera found" in panel.message.text()
    panel.kind.setCurrentIndex(KINDS.index("screen"))
    assert "DISPLAY is not set" in panel.message.text()
    assert panel.monitor.itemData(panel.monitor.count() - 1) == "screen:0"


def test_the_no_camera_note_follows_the_chosen_input(
    qtbot: QtBot, settings: UiSettings, testdata: Path
) -> None:
    if any(Path(f"/dev/video{i}").exists() for i in range(5)):
        pytest.skip("a camera may be connected here")  # the note is about having none
    video = testdata / "video/openmpf_video_01.mp4"
    stream = StreamController(small_config(source={"spec": str(video)}))
    panel = input_panel(qtbot, stream, settings)
    assert KINDS[panel.kind.currentIndex()] == "video"
    assert panel.message.text() == ""  # no camera note with a video file chosen
    assert not panel.no_camera_offer.isVisibleTo(panel)

    panel.kind.setCurrentIndex(KINDS.index("camera"))  # no camera: said, and offered
    assert panel.message.text() == NO_CAMERA_FOUND
    assert panel.camera.count() == 0 and panel.camera.currentIndex() == -1
    assert panel.camera.placeholderText() == NO_CAMERA_ITEM  # the empty list says why
    assert panel.no_camera_offer.isVisibleTo(panel)
    assert stream.config.source.spec == str(video)  # no camera to choose: nothing changed

    panel.kind.setCurrentIndex(KINDS.index("video"))
    assert panel.message.text() == "" and not panel.no_camera_offer.isVisibleTo(panel)
    panel.kind.setCurrentIndex(KINDS.index("synthetic"))
    assert stream.config.source.spec == "synthetic"
    assert panel.message.text() == "" and not panel.no_camera_offer.isVisibleTo(panel)


def test_monitors_are_listed_from_the_display(xvfb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPLAY", xvfb)
    assert list_monitors() == [{"left": 0, "top": 0, "width": 640, "height": 480}]


def test_an_input_change_while_running_applies_on_restart(
    qtbot: QtBot, settings: UiSettings
) -> None:
    stream = StreamController(small_config())
    frames: list[np.ndarray] = []
    stream.frame.connect(frames.append)
    panel = input_panel(qtbot, stream, settings)
    stream.start()
    try:
        qtbot.waitUntil(lambda: len(frames) >= 2, timeout=5000)
        panel.resolution.setCurrentIndex(1)  # 480p
        panel.apply_format()
        assert not panel.changes.bar.isHidden() and "restart" in panel.changes.note.text()
        assert stream.config.source.size == (320, 240)  # the running stream is untouched
        assert UiSettings().config.source.size == (640, 480)  # kept for the next run
        with qtbot.waitSignal(panel.changes.restarted, timeout=10000) as done:
            panel.changes.restart_button.click()
        assert done.args == [""] and stream.running
        assert stream.config.source.size == (640, 480) and panel.changes.bar.isHidden()
        qtbot.waitUntil(lambda: frames[-1].shape == (480, 640, 3), timeout=5000)
    finally:
        stream.stop()


def test_a_restart_abandoned_before_it_started_is_forgotten(
    qtbot: QtBot, settings: UiSettings
) -> None:
    stream = StreamController(small_config())
    panel = input_panel(qtbot, stream, settings)
    stream.start()
    panel.resolution.setCurrentIndex(1)
    panel.apply_format()
    panel.changes.restart_button.click()  # stops, then starts again off the GUI thread
    assert stream.starting
    stream.stop()  # the window closes before that start is done
    assert panel.changes.restart_button.isEnabled() and not stream.starting
    restarted: list[str] = []
    panel.changes.restarted.connect(restarted.append)
    # a later start of the main window that fails is not taken for the restart's outcome
    stream.set_config(stream.config.with_section("pipeline", stages=("swap",)))  # no face
    with qtbot.waitSignal(stream.start_failed, timeout=10000):
        stream.start_async()
    assert restarted == []


def test_output_choices_round_trip_and_preview_only(
    qtbot: QtBot, settings: UiSettings, tmp_path: Path, vcam: RecordingStore
) -> None:
    stream = StreamController(small_config())
    panel = OutputPanel(stream, settings)
    qtbot.addWidget(panel)
    assert panel.preview_only.isChecked() and not panel.virtualcam.isChecked()
    panel.backend.setCurrentIndex(panel.backend.findData(vcam.name))
    panel.device.setText(vcam.device)
    panel.apply_virtualcam()
    with qtbot.waitSignal(panel.checked, timeout=10000) as checked:
        panel.virtualcam.setChecked(True)  # switching it on checks it
    assert checked.args == [True], panel.vcam_status.text()
    assert "available" in panel.vcam_status.text()
    record = tmp_path / "take.mp4"
    panel.record_path.setText(str(record))
    panel.record.setChecked(True)
    panel.overwrite.setChecked(True)
    panel.rate.setCurrentIndex(1)
    panel.rate.activated.emit(1)  # what a user's pick sends
    out = UiSettings().config.output
    assert out.sinks == ("virtualcam", str(record)) and out.overwrite and out.fps == 30.0
    assert (out.virtualcam_backend, out.virtualcam_device) == (vcam.name, vcam.device)
    assert not panel.preview_only.isChecked()

    again = OutputPanel(StreamController(UiSettings().config), UiSettings())
    qtbot.addWidget(again)
    assert again.virtualcam.isChecked() and again.record.isChecked()
    assert again.record_path.text() == str(record) and again.device.text() == vcam.device
    assert again.backend.currentData() == vcam.name and again.rate.currentIndex() == 1

    # preview only and recording are independent; the chosen file stays until cleared
    panel.preview_only.setChecked(True)
    assert UiSettings().config.output.sinks == (str(record),)
    assert not panel.virtualcam.isChecked() and panel.record.isChecked()
    panel.record.setChecked(False)
    assert UiSettings().config.output.sinks == ("null",)
    assert panel.preview_only.isChecked() and panel.record_path.text() == str(record)
    panel.record.setChecked(True)  # a click on Record records to the kept file again
    assert UiSettings().config.output.sinks == (str(record),)
    assert panel.preview_only.isChecked()
    panel.record.setChecked(False)
    kept = OutputPanel(StreamController(UiSettings().config), UiSettings())
    qtbot.addWidget(kept)  # a new panel (a restart) still offers the file
    assert kept.record_path.text() == str(record) and not kept.record.isChecked()
    panel.preview_only.setChecked(False)
    assert UiSettings().config.output.sinks == ("virtualcam",) and panel.virtualcam.isChecked()
    panel.preview_only.setChecked(True)

    # the on-output label: off by default, on with the default text, a chosen corner
    assert not panel.label_on.isChecked() and UiSettings().config.output.label is None
    panel.label_position.setCurrentText("top-left")
    panel.label_on.setChecked(True)
    out = UiSettings().config.output
    assert (out.label, out.label_position) == ("AI-modified", "top-left")
    panel.label_text.setText("Face swapped live")
    panel.label_text.editingFinished.emit()
    assert UiSettings().config.output.label == "Face swapped live"
    shown = OutputPanel(StreamController(UiSettings().config), UiSettings())
    qtbot.addWidget(shown)
    assert shown.label_on.isChecked() and shown.label_text.text() == "Face swapped live"
    assert shown.label_position.currentText() == "top-left"


def test_the_virtual_camera_gets_frames_and_a_failure_shows_the_fix(
    qtbot: QtBot, settings: UiSettings, vcam: RecordingStore
) -> None:
    stream = StreamController(small_config())
    panel = OutputPanel(stream, settings)
    qtbot.addWidget(panel)
    panel.backend.setCurrentIndex(panel.backend.findData(vcam.name))
    panel.apply_virtualcam()
    with qtbot.waitSignal(panel.checked, timeout=10000):
        panel.virtualcam.setChecked(True)
    assert stream.config.output.sinks == ("virtualcam",)
    stream.start()
    try:
        qtbot.waitUntil(lambda: len(vcam.frames) >= 3, timeout=5000)
        assert vcam.frames[-1].frame.shape[:2] == (240, 320)
    finally:
        stream.stop()
    panel.device.setText("/dev/video-missing")  # a device no backend has
    with qtbot.waitSignal(panel.checked, timeout=10000) as checked:
        panel.check_button.click()
    assert checked.args == [False]
    text = panel.vcam_status.text()
    assert text.startswith("No virtual camera:") and "/dev/video-missing" in text
    assert text.endswith("fix: " + " ".join(virtualcam_fix().split()))  # this OS's fix


def test_mirror_flips_the_captured_frames(qtbot: QtBot, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), image)
    seen = {}
    for mirror in (False, True):
        cfg = Config.from_dict(
            {"source": {"spec": str(still), "mirror": mirror}, "output": {"sinks": ["null"]}}
        )
        stream = StreamController(cfg)
        frames: list[np.ndarray] = []
        stream.frame.connect(frames.append)
        stream.start()
        try:
            qtbot.waitUntil(lambda: bool(frames), timeout=5000)  # noqa: B023
        finally:
            stream.stop()
        seen[mirror] = frames[-1]
    assert np.array_equal(seen[False], image)
    assert np.array_equal(seen[True], image[:, ::-1])


def test_the_output_panel_shows_both_marks_and_the_ai_mark_is_on_in_the_panel_config(
    qtbot: QtBot, settings: UiSettings
) -> None:
    assert UiSettings().config.output.watermark, "the panel's config marks by default"
    panel = OutputPanel(StreamController(UiSettings().config), settings)
    qtbot.addWidget(panel)
    assert panel.marking.text().startswith("Visible label: off.\nInvisible AI mark: on.")
    panel.label_on.setChecked(True)  # the visible label's state follows its checkbox
    assert 'Visible label: on ("AI-modified", bottom-right)' in panel.marking.text()
    assert "Invisible AI mark: on" in panel.marking.text()

    off = UiSettings().config.with_section("output", watermark=False)  # the config file's
    shown = OutputPanel(StreamController(off), settings)
    qtbot.addWidget(shown)
    assert "Invisible AI mark: OFF" in shown.marking.text()
    assert "Article 50" in shown.marking.text() and shown.marking.styleSheet() == ERROR_STYLE


def test_the_output_panel_verifies_a_file(
    qtbot: QtBot, settings: UiSettings, testdata: Path, tmp_path: Path
) -> None:
    from livecam.stream.watermark import Watermarker, new_session_payload

    photo = cv2.imread(str(testdata / "faces" / "obama_official_portrait_2012.jpg"))
    assert photo is not None
    marked = tmp_path / "screenshot.png"  # a marked frame, saved without any manifest
    cv2.imwrite(str(marked), Watermarker(new_session_payload()).embed(np.asarray(photo, np.uint8)))
    panel = OutputPanel(StreamController(UiSettings().config), settings)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.verified, timeout=60000) as done:
        panel.verify_file(str(marked))
    assert done.args == [0], panel.verify_report.text()
    assert "invisible mark: FOUND in 1 of 1 frames" in panel.verify_report.text()
    assert "verdict: MARKED" in panel.verify_report.text()
    with qtbot.waitSignal(panel.verified, timeout=60000) as done:
        panel.verify_file(str(testdata / "faces" / "obama_official_portrait_2012.jpg"))
    assert done.args == [1] and "NOT marked" in panel.verify_report.text()
    with qtbot.waitSignal(panel.verified, timeout=60000) as done:
        panel.verify_file(str(tmp_path / "missing.mp4"))
    assert done.args == [2] and "no such file" in panel.verify_report.text()
    assert panel.verify_button.isEnabled()
