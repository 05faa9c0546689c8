"""File, window, null and auto sinks, and the sink factory."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
from media import read_video
from recording_backend import (
    RecordingStore,
    register_failing_backend,
    register_recording_backend,
    unregister,
)

from livecam.config import OutputConfig
from livecam.errors import SinkError
from livecam.sinks import (
    AutoSink,
    ImageWriterSink,
    NullSink,
    PreviewWindowSink,
    RecorderSink,
    VirtualCamSink,
    make_sinks,
)

REPO = Path(__file__).resolve().parents[1]


def smooth_frames(n: int, w: int = 160, h: int = 120) -> list[np.ndarray]:
    """Smooth, distinct frames: colour gradients with a soft blob that moves each frame."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    frames = []
    for i in range(n):
        cx, cy = 30 + 3 * i, 40 + 1.5 * i
        blob = 120 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 18.0**2))
        b = 40 + 150 * xx / w + blob
        g = 60 + 120 * yy / h
        r = 200 - 120 * xx / w + 0.5 * blob
        frames.append(np.clip(np.dstack([b, g, r]), 0, 255).astype(np.uint8))
    return frames


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def imread(path: Path) -> np.ndarray:
    image = cv2.imread(str(path))
    assert image is not None, f"{path} is not readable"
    return image


@pytest.mark.parametrize(
    ("name", "codec"), [("clip.mp4", "mp4v"), ("clip.avi", "MJPG"), ("clip.mkv", "mp4v")]
)
def test_recorder_writes_a_playable_file(tmp_path: Path, name: str, codec: str) -> None:
    path = tmp_path / "sub" / name  # the folder is created
    sent = smooth_frames(24)
    sink = RecorderSink(path)
    assert sink.wants_repeats is False
    sink.open(160, 120, 25.0)
    assert sink.fourcc == codec
    for f in sent:
        sink.send(f)
    sink.close()
    sink.close()
    assert sink.frames_written == len(sent)
    got, fps = read_video(path)
    assert len(got) == len(sent)
    assert fps == pytest.approx(25.0, abs=0.01)
    for g, s in zip(got, sent, strict=True):
        assert g.shape == s.shape
        assert psnr(g, s) > 30.0
    # frames stay in order: each read-back frame is closest to the one sent at its index
    for i in (0, len(sent) // 2, len(sent) - 1):
        assert int(np.argmax([psnr(got[i], s) for s in sent])) == i


def test_recorder_rejects_a_size_change(tmp_path: Path) -> None:
    sink = RecorderSink(tmp_path / "a.mp4")
    sink.open(160, 120, 30.0)
    with pytest.raises(SinkError, match="80x60"):
        sink.send(np.zeros((60, 80, 3), np.uint8))
    sink.close()


def test_recorder_error_names_file_and_codec(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    sink = RecorderSink(blocker / "x.avi")
    with pytest.raises(SinkError) as info:
        sink.open(160, 120, 30.0)
    assert str(blocker) in info.value.message


def test_image_writer_keeps_the_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "last.png"
    sink = ImageWriterSink(path, interval_s=3600)
    assert sink.wants_repeats is False
    sink.open(160, 120, 30.0)
    frames = smooth_frames(5)
    for f in frames:
        sink.send(f)
    assert not path.exists()  # no periodic write within the interval
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
    for f in frames:
        sink.send(f)
    assert sink.frames == 4 and sink.size == (160, 120) and sink.last_frame is frames[-1]


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


@pytest.mark.parametrize("spec", ["virtualcamera", "out.gif", "", "screen"])
def test_unknown_sink_spec(spec: str) -> None:
    with pytest.raises(SinkError) as info:
        make_sinks((spec,), OutputConfig())
    assert repr(spec) in info.value.message
    for form in ("virtualcam", "window", "auto", "null", ".mp4", ".avi", ".png"):
        assert form in info.value.hint


@pytest.fixture
def recording() -> Iterator[RecordingStore]:
    store = register_recording_backend()
    yield store
    unregister(store.name)


def test_auto_uses_the_virtual_camera_when_it_opens(recording: RecordingStore) -> None:
    sink = make_sinks(("auto",), OutputConfig(virtualcam_backend=recording.name))[0]
    assert isinstance(sink, AutoSink)
    sink.open(160, 120, 30.0)
    assert isinstance(sink.chosen, VirtualCamSink) and sink.wants_repeats is True
    frames = smooth_frames(3)
    for f in frames:
        sink.send(f)
    sink.close()
    assert len(recording.frames) == 3
    np.testing.assert_array_equal(recording.frames[-1].frame, frames[-1])


def test_auto_falls_back_to_null_with_a_loud_fix(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    name = register_failing_backend()
    try:
        sink = AutoSink(backend=name)
        with caplog.at_level(logging.WARNING, logger="livecam.sinks"):
            sink.open(160, 120, 30.0)
    finally:
        unregister(name)
    assert isinstance(sink.chosen, NullSink) and sink.wants_repeats is False
    sink.send(smooth_frames(1)[0])
    assert sink.chosen.frames == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert "NO VIRTUAL CAMERA" in text and "null sink" in text
    assert "simulated driver failure" in text and "fix:" in text
    if sys.platform == "linux":
        assert "sudo modprobe v4l2loopback" in text
    sink.close()
