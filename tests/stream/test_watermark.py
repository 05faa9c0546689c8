"""The invisible mark on real frames: through a real H.264 encode at 1 Mbit/s, a JPEG at
quality 70 and a 10 % crop it is found with its payload; unmarked test-data frames and
photos are never found; the marked frame keeps its size and dtype and stays close."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from codec_roundtrip import crop, encode_decode, jpeg

from livecam.stream.watermark import (
    THRESHOLD,
    Detector,
    Payload,
    Watermarker,
    detect_frames,
    new_session_payload,
)


def clip(path: Path, count: int, step: int = 1) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(path))
    frames: list[np.ndarray] = []
    index = 0
    while len(frames) < count:
        ok, frame = cap.read()
        if not ok:
            break
        if index % step == 0:
            frames.append(frame)
        index += 1
    cap.release()
    assert frames, f"{path} gave no frames"
    return frames


@pytest.fixture(scope="module")
def talking_head(testdata: Path) -> list[np.ndarray]:
    """30 frames of a 1280x720 talking-head clip."""
    frames = clip(testdata / "video" / "liveportrait_s18.mp4", 30)
    assert frames[0].shape == (720, 1280, 3)
    return frames


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b) ** 2))
    return 10 * math.log10(255.0**2 / mse)


def test_h264_1mbit_round_trip_reads_the_payload(talking_head: list[np.ndarray]) -> None:
    payload = new_session_payload()
    marker = Watermarker(payload)
    sent = encode_decode([marker.embed(f) for f in talking_head], 1_000_000)
    assert len(sent) == len(talking_head)
    result = detect_frames(sent, window=15)
    assert result.frames_total == 30 and result.windows_total == 2
    assert result.frames_marked >= 27  # >= 90 % of single frames
    assert result.windows_marked == 2 and result.marked
    assert result.payload == payload
    # the same encode of the unmarked frames is not marked
    plain = detect_frames(encode_decode(talking_head, 1_000_000), window=15)
    assert plain.frames_marked == 0 and not plain.marked and plain.payload is None


def test_unmarked_clips_and_photos_are_never_detected(testdata: Path) -> None:
    detector = Detector()
    frames = []
    for path in sorted((testdata / "video").iterdir()):
        frames += clip(path, 4, step=25)
    photos = [cv2.imread(str(p)) for p in sorted((testdata / "faces").iterdir())]
    frames += [p for p in photos if p is not None]
    assert len(frames) >= 40
    scores = []
    for frame in frames:
        result = detector.frame(frame)
        assert not result.marked and result.payload is None, result
        scores.append(result.score)
    assert max(scores) < THRESHOLD


def test_jpeg70_and_a_10_percent_crop_keep_the_mark(talking_head: list[np.ndarray]) -> None:
    payload = new_session_payload()
    marked = Watermarker(payload).embed(talking_head[0])
    photo = Detector().frame(jpeg(marked, 70))
    assert photo.marked and photo.payload == payload
    cut = crop(marked)
    assert cut.shape == (648, 1152, 3)
    cropped = Detector().frame(cut)
    assert cropped.marked and cropped.payload == payload
    assert cropped.scale == pytest.approx(1 / 0.9, rel=0.01)  # the period, found again
    assert not Detector().frame(crop(talking_head[0])).marked


@pytest.mark.parametrize("size", [(320, 240), (641, 359), (1280, 720), (1920, 1080)])
def test_marked_frame_keeps_size_and_dtype_and_stays_close(
    talking_head: list[np.ndarray], size: tuple[int, int]
) -> None:
    frame = np.asarray(cv2.resize(talking_head[5], size, interpolation=cv2.INTER_AREA), np.uint8)
    before = frame.copy()
    marker = Watermarker(new_session_payload())
    marked = marker.embed(frame)
    assert marked.shape == frame.shape and marked.dtype == np.uint8
    assert marked.flags.c_contiguous
    assert np.array_equal(frame, before)  # the input is not changed
    assert psnr(marked, frame) >= 42.0
    # a pure luma change: B, G and R move together (up to clipping at 0 and 255)
    delta = marked.astype(np.int16) - frame
    inside = ((frame > 8) & (frame < 247)).all(axis=2)
    assert (delta[inside, 0] == delta[inside, 1]).all()
    assert Detector().frame(marked).marked


def test_payload_bits_and_check(talking_head: list[np.ndarray]) -> None:
    payload = Payload(session_id=0xDEADBEEF)
    assert Payload.from_symbols(payload.symbols()) == payload
    corrupted = list(payload.symbols())
    corrupted[1] ^= 1
    assert Payload.from_symbols(corrupted) != payload
    with pytest.raises(ValueError):
        Payload(session_id=1 << 32)
    with pytest.raises(ValueError):
        Payload(session_id=1, tag=0x1234)
    assert new_session_payload() != new_session_payload()
    assert Detector().frame(Watermarker(payload).embed(talking_head[0])).payload == payload


def test_windows_are_marked_by_majority(talking_head: list[np.ndarray]) -> None:
    """Pass-through frames stay unmarked: a window is marked when most of its frames are."""
    marker = Watermarker(new_session_payload())
    frames = [marker.embed(f) for f in talking_head[:4]] + talking_head[4:10]
    whole = detect_frames(frames, window=10)
    assert (whole.frames_marked, whole.windows_total, whole.windows_marked) == (4, 1, 0)
    assert not whole.marked
    parts = detect_frames(frames, window=4)  # windows of 4, 4 and 2 frames
    assert (parts.windows_total, parts.windows_marked) == (3, 1)
    assert parts.marked and parts.payload == marker.payload
