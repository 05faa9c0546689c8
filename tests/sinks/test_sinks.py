"""File, window, null and auto sinks, and the sink factory."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from framegen import psnr, smooth_frames
from recording_backend import RecordingStore, register_failing_backend, unregister

from livecam.app import App
from livecam.config.schema import Config, OutputConfig
from livecam.config.specs import SINK_NAMES
from livecam.errors import SinkError, StartupError, VirtualCameraUnavailable
from livecam.sinks import (
    SINKS,
    AutoSink,
    ImageWriterSink,
    NullSink,
    PreviewWindowSink,
    RecorderSink,
    VirtualCamSink,
    make_sinks,
)
from livecam.sinks.recording.image import IMAGE_SUFFIXES
from livecam.sinks.recording.video import VIDEO_CODECS

REPO = Path(__file__).resolve().parents[2]


def imread(path: Path) -> np.ndarray:
    image = cv2.imread(str(path))
    assert image is not None, f"{path} is not readable"
    return image


def test_image_writer_keeps_the_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "last.png"
    sink = ImageWriterSink(path, interval_s=3600)
    assert sink.wants_repeats is False
    sink.open(160, 120, 30.0)
    frames = smooth_frames(5)
    for f in frames:
        sink.send(f)
    assert path.stat().st_size == 0  # the name is claimed; no write within the interval
    sink.close()
    np.testing.assert_array_equal(cv2.imread(str(path)), frames[-1])  # PNG is lossless
    assert [p.name for p in tmp_path.iterdir()] == ["last.png"]  # no temp file left


def test_image_writer_writes_periodically(tmp_path: Path) -> None:
    path = tmp_path / "live.jpg"
    sink = ImageWriterSink(path, interval_s=0.0)
    sink.open(160, 120, 30.0)
    frames = smooth_frames(3)
    sink.send(frames[0])
    assert path.exists()
    assert psnr(imread(path), frames[0]) > 30
    sink.send(frames[2])
    assert psnr(imread(path), frames[2]) > 30
    assert sink.writes == 2
    sink.close()


def test_image_writer_keeps_an_existing_file_unless_overwrite(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "shot.png"
    own = cv2.imencode(".png", np.full((8, 8, 3), 200, np.uint8))[1].tobytes()
    path.write_bytes(own)  # the user's own picture (a PNG: --overwrite may replace it)
    frames = smooth_frames(2)
    sink = ImageWriterSink(path, interval_s=3600)
    with caplog.at_level(logging.WARNING, logger="livecam.userfiles"):
        sink.open(160, 120, 30.0)
    sink.send(frames[0])
    sink.close()
    assert path.read_bytes() == own
    assert sink.target != path and sink.target.parent == tmp_path
    assert sink.target.name.startswith("shot-") and sink.target.suffix == ".png"
    np.testing.assert_array_equal(imread(sink.target), frames[0])
    assert "ALREADY EXISTS" in caplog.text and str(sink.target) in caplog.text

    replacing = ImageWriterSink(path, interval_s=3600, overwrite=True)
    replacing.open(160, 120, 30.0)
    replacing.send(frames[1])
    replacing.close()
    assert replacing.target == path
    np.testing.assert_array_equal(imread(path), frames[1])


def test_image_writer_without_frames_writes_nothing(tmp_path: Path) -> None:
    sink = ImageWriterSink(tmp_path / "none.bmp")
    sink.open(16, 16, 30.0)
    sink.close()
    assert list(tmp_path.iterdir()) == []


def test_null_sink_counts_unique_frames() -> None:
    sink = NullSink()
    assert sink.wants_repeats is False
    sink.open(160, 120, 30.0)
    frames = smooth_frames(4)
    for i, f in enumerate(frames):
        sink.send(f, t_capture_ns=1000 + i)
    assert sink.frames == 4 and sink.size == (160, 120) and sink.last_frame is frames[-1]
    assert sink.last_t_capture_ns == 1003


def test_make_sinks_builds_each_kind(tmp_path: Path) -> None:
    cfg = OutputConfig(virtualcam_backend="be", virtualcam_device="/dev/video10")
    specs = ("virtualcam", "window", "null", "auto", str(tmp_path / "a.MP4"), "b.mkv", "c.jpeg")
    sinks = make_sinks(specs, cfg)
    kinds = [type(s) for s in sinks]
    assert kinds == [
        VirtualCamSink,
        PreviewWindowSink,
        NullSink,
        AutoSink,
        RecorderSink,
        RecorderSink,
        ImageWriterSink,
    ]
    assert sinks[0]._want_backend == "be" and sinks[0]._want_device == "/dev/video10"  # type: ignore[attr-defined]
    assert [s.overwrite for s in sinks[4:]] == [False, False, False]  # type: ignore[attr-defined]
    replacing = make_sinks(("a.mp4", "c.png"), OutputConfig(overwrite=True))
    assert [s.overwrite for s in replacing] == [True, True]  # type: ignore[attr-defined]


def test_every_sink_name_and_file_suffix_is_registered() -> None:
    """The registry has a factory for every name the config accepts and every recording
    and image suffix, and nothing else: a sink the config lets through can be made."""
    assert set(SINKS) == set(SINK_NAMES) | set(VIDEO_CODECS) | set(IMAGE_SUFFIXES)


@pytest.mark.parametrize("spec", ["virtualcamera", "out.gif", "", "screen"])
def test_unknown_sink_spec(spec: str) -> None:
    with pytest.raises(SinkError) as info:
        make_sinks((spec,), OutputConfig())
    assert repr(spec) in info.value.message
    for form in ("virtualcam", "window", "auto", "null", ".mp4", ".avi", ".png"):
        assert form in info.value.hint


def test_auto_uses_the_virtual_camera_when_it_opens(vcam: RecordingStore) -> None:
    sink = make_sinks(("auto",), OutputConfig(virtualcam_backend=vcam.name))[0]
    assert isinstance(sink, AutoSink)
    sink.open(160, 120, 30.0)
    assert isinstance(sink.chosen, VirtualCamSink) and sink.wants_repeats is True
    frames = smooth_frames(3)
    for f in frames:
        sink.send(f)
    sink.close()
    assert len(vcam.frames) == 3
    np.testing.assert_array_equal(vcam.frames[-1].frame, frames[-1])


def test_auto_without_camera_or_display_is_an_error_with_both_fixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    name = register_failing_backend()
    try:
        sink = AutoSink(backend=name)
        with pytest.raises(VirtualCameraUnavailable) as info:
            sink.open(160, 120, 30.0)
    finally:
        unregister(name)
    assert sink.chosen is None, "frames are never thrown away unseen by a null fallback"
    text = str(info.value)
    assert "no virtual camera" in text and "simulated driver failure" in text
    assert "no preview window" in text
    assert "display exists" in info.value.hint and "--sink out.mp4" in info.value.hint
    if sys.platform == "linux":
        assert "sudo modprobe v4l2loopback" in info.value.hint


def test_a_start_without_camera_display_or_virtual_camera_lists_every_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``DISPLAY= livecam run`` with no camera: the auto sink's problem is found by its
    check (nothing opened) and listed beside the camera's, not only the camera."""
    for variable in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(variable, raising=False)
    name = register_failing_backend()
    try:
        with pytest.raises(VirtualCameraUnavailable) as checked:
            AutoSink(backend=name).check()
        cfg = Config.from_dict(
            {
                "source": {"spec": "camera:97"},
                "output": {"sinks": ["auto"], "virtualcam_backend": name},
            }
        )
        with pytest.raises(StartupError) as caught:
            App(cfg).start()
    finally:
        unregister(name)
    assert "no virtual camera" in checked.value.message and "DISPLAY" in checked.value.message
    messages = [c.message for c in caught.value.causes]
    assert messages[0] == "cannot open camera 97", messages
    assert [m for m in messages if m.startswith("sink 'auto' has nowhere")] == [
        checked.value.message
    ], messages
