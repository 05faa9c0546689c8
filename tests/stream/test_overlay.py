"""The on-output label and the face opacity: the label is drawn on a copy in the configured
corner, and a real stream carries it in the virtual camera's frames and in the recorded
file, blank frames included; opacity 0 leaves the camera frame, 0.5 lies half-way."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from fakes import KeepingSink
from recording_backend import RecordingStore
from waiting import poll

from livecam.app import App
from livecam.config.schema import Config
from livecam.errors import ConfigError
from livecam.stream.label import draw_label, label_box
from livecam.types import Frame

ASSETS = Path(__file__).resolve().parents[2] / "assets"
W, H = 320, 240


def _box_has_label(frame: Frame, box: tuple[int, int, int, int], dark: int = 70) -> bool:
    """White strokes on a dark box: most pixels dark, some near white."""
    x0, y0, x1, y1 = box
    gray = cv2.cvtColor(np.ascontiguousarray(frame[y0:y1, x0:x1]), cv2.COLOR_BGR2GRAY)
    return bool(np.mean(gray <= dark) > 0.5 and np.sum(gray >= 180) >= 10)


def test_draw_label_on_a_copy_in_each_corner() -> None:
    frame = np.full((H, W, 3), 200, np.uint8)
    for position in ("top-left", "top-right", "bottom-left", "bottom-right"):
        out = draw_label(frame, "AI-modified", position, 0.08)
        assert (frame == 200).all()  # the input is never drawn on
        box = label_box(frame.shape, "AI-modified", position, 0.08)
        x0, y0, x1, y1 = box
        assert (x0 < W / 2) == position.endswith("left") and (y0 < H / 2) == position.startswith(
            "top"
        )
        assert _box_has_label(out, box)
        outside = np.ones((H, W), bool)
        outside[y0:y1, x0:x1] = False
        assert (out[outside] == 200).all()  # nothing drawn outside the box
    # the text scales with the frame height
    small = label_box((240, 320, 3), "AI", "top-left", 0.05)
    big = label_box((480, 640, 3), "AI", "top-left", 0.05)
    assert big[3] - big[1] > 1.6 * (small[3] - small[1])


def test_label_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="output.label_size"):
        Config().with_section("output", label_size=0.9)
    with pytest.raises(ConfigError, match="output.label"):
        Config().with_section("output", label="   ")
    with pytest.raises(ConfigError, match="output.label_position"):
        Config.from_dict({"output": {"label_position": "middle"}})
    with pytest.raises(ConfigError, match="swap.masks.opacity"):
        Config().with_section("swap", opacity=1.5)


def test_virtual_camera_and_recording_both_carry_the_label_blank_frames_too(
    vcam: RecordingStore, tmp_path: Path
) -> None:
    recording = tmp_path / "out.mp4"
    cfg = Config.from_dict(
        {
            "source": {"spec": "synthetic", "size": [W, H], "fps": 30},
            "output": {
                "sinks": ["virtualcam", str(recording)],
                "virtualcam_backend": vcam.name,
                "label": "AI-modified",
                "label_position": "top-right",
                "label_size": 0.08,
            },
        }
    )
    box = label_box((H, W, 3), "AI-modified", "top-right", 0.08)
    app = App(cfg)
    app.start()
    try:
        assert poll(lambda: len(vcam.frames) >= 10), "frames before the blank"
        app.controls.set_blank(True).wait(10)
        seen = len(vcam.frames)
        assert poll(lambda: len(vcam.frames) >= seen + 10), "frames after the blank"
    finally:
        assert app.stop() == []
    frames = [r.frame for r in vcam.frames]
    assert len(frames) >= seen + 10
    assert all(_box_has_label(f, box) for f in frames)
    blank = frames[-1]
    x0, y0, x1, y1 = box
    rest = blank.copy()
    rest[y0:y1, x0:x1] = 0
    assert not rest.any() and _box_has_label(blank, box)  # black, with the label on it
    # the recorded file carries it too (read back and decoded)
    capture = cv2.VideoCapture(str(recording))
    decoded: list[Frame] = []
    while True:
        ok, image = capture.read()
        if not ok:
            break
        decoded.append(np.asarray(image, np.uint8))
    capture.release()
    assert len(decoded) >= 10
    assert all(_box_has_label(f, box, dark=90) for f in decoded)
    other = label_box((H, W, 3), "AI-modified", "bottom-left", 0.08)
    assert not _box_has_label(decoded[len(decoded) // 3], other, dark=90)


def _run(frames: int, **swap: object) -> list[Frame]:
    cfg = Config.from_dict(
        {
            "source": {
                "spec": "synthetic",
                "size": [W, H],
                "face_motion": str(ASSETS / "astronaut.png"),
                "unpaced": True,
            },
            "buffer": {"lossless": True},
            # pixels are compared with the camera's: without the invisible mark, which the
            # swapped frames carry by default (tests/stream/test_output_mark.py covers it)
            "output": {"sinks": ["null"], "watermark": False},
            "pipeline": {"stages": ["swap"] if swap else ["passthrough"]},
            "swap": {"face": str(ASSETS / "grace_hopper.jpg"), **swap} if swap else {},
            "run": {"frames": frames},
        }
    )
    sink = KeepingSink()  # a lossless run sends each frame once, in order
    app = App(cfg, sinks=[sink])
    app.start()
    try:
        assert app.wait(120)
    finally:
        app.stop()
    return sink.kept


def test_opacity_zero_leaves_the_camera_frame_and_half_lies_half_way() -> None:
    n = 8
    still = {"smoothing": 0.0}  # landmark smoothing follows capture times: not repeatable
    camera = _run(n)
    full = _run(n, opacity=1.0, **still)
    none = _run(n, opacity=0.0, **still)
    half = _run(n, opacity=0.5, **still)
    assert len(camera) == len(full) == len(none) == len(half) == n
    changed = [np.abs(f.astype(int) - c).max() > 40 for f, c in zip(full, camera, strict=True)]
    assert sum(changed) >= n // 2  # the swap really changed the face in most frames
    for c, f, z, h in zip(camera, full, none, half, strict=True):
        assert np.abs(z.astype(int) - c).max() <= 1  # opacity 0: the camera frame
        mid = (c.astype(float) + f) / 2
        assert np.abs(h - mid).max() <= 0.5  # opacity 0.5: half-way, within rounding
