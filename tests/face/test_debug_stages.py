"""The stages that need no download: pass-through and the YuNet face-box overlay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fakes import FailingSink

from livecam.app import App
from livecam.config.schema import Config
from livecam.errors import ModelError, StartupError
from livecam.face.debug_stages import FaceBoxStage
from livecam.sinks.null import NullSink
from livecam.telemetry.hub import Telemetry
from livecam.types import Event, Frame, FramePacket
from livecam.userfiles.images import load_image_bgr


def test_facebox_draws_boxes_on_a_copy_with_real_yunet(testdata: Path) -> None:
    stage = FaceBoxStage(str(testdata / "models" / "face_detection_yunet_2023mar.onnx"))
    two = load_image_bgr(testdata / "faces" / "obama_biden_two_people.jpg")
    stage.warmup(two.shape[1], two.shape[0])
    packet = FramePacket(two, 0, 0)
    stage.process([packet])
    assert packet.frame is not two and np.array_equal(
        two, load_image_bgr(testdata / "faces" / "obama_biden_two_people.jpg")
    ), "the input frame is not drawn on"
    green = (
        (packet.frame[..., 1] == 255) & (packet.frame[..., 0] == 0) & (packet.frame[..., 2] == 0)
    )
    ys, xs = np.nonzero(green)
    assert xs.min() < two.shape[1] / 2 < xs.max(), "a box around each of the two faces"


def test_facebox_without_a_model_uses_the_bundled_yunet(testdata: Path) -> None:
    two = load_image_bgr(testdata / "faces" / "obama_biden_two_people.jpg")
    stage = FaceBoxStage(None)
    stage.warmup(two.shape[1], two.shape[0])
    packet = FramePacket(two, 0, 0)
    stage.process([packet])
    green = (
        (packet.frame[..., 1] == 255) & (packet.frame[..., 0] == 0) & (packet.frame[..., 2] == 0)
    )
    _, xs = np.nonzero(green)
    assert xs.min() < two.shape[1] / 2 < xs.max(), "a box around each of the two faces"
    blank = np.zeros((32, 32, 3), np.uint8)
    assert stage.process([FramePacket(blank, 0, 0)])[0].frame is blank, "no face: no copy"


def test_facebox_bad_model_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        FaceBoxStage(str(tmp_path / "nope.onnx"))
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not a model")
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240]},
            "output": {"sinks": ["null"]},
            "pipeline": {"stages": ["facebox"], "yunet_model": str(corrupt)},
        }
    )
    with pytest.raises(StartupError, match="could not be loaded"):
        App(cfg).start()


def test_a_failing_sink_is_turned_off_and_the_others_go_on() -> None:
    events: list[Event] = []
    telemetry = Telemetry()
    telemetry.add_listener(events.append)
    # a virtual camera that went away on its third frame, and one that works
    bad, good = FailingSink(RuntimeError("device vanished"), name="exploding"), NullSink()
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [320, 240], "fps": 200},
            "buffer": {"lossless": True},
            "run": {"frames": 30},
        }
    )
    app = App(cfg, sinks=[bad, good], telemetry=telemetry)
    app.start()
    assert app.wait(10)
    assert app.stop() == []
    assert bad.frames == 3 and good.frames == 30
    assert any(e.origin == "sink exploding" and "device vanished" in e.message for e in events)


class ClosableWindow(NullSink):
    """A window the user closes after five frames."""

    name = "window"
    wants_repeats = True

    def send(self, frame: Frame, t_capture_ns: int | None = None, swapped: bool = False) -> None:
        super().send(frame, t_capture_ns)
        self.closed = self.frames >= 5


def test_stream_ends_when_the_user_closes_the_only_window() -> None:
    window = ClosableWindow()
    cfg = Config.from_dict({"source": {"spec": "synthetic", "size": [320, 240], "fps": 60}})
    app = App(cfg, sinks=[window])
    app.start()
    assert app.wait(5), "closing the last output ends the stream"
    assert app.stop() == []
    assert window.frames == 5
