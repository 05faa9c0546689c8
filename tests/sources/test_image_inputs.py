"""Image files of every kind become contract frames with the right values."""

from __future__ import annotations

import logging
import struct
import zlib
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from livecam.config.schema import SourceConfig
from livecam.errors import FrameFormatError, SourceError
from livecam.sources.base import Source
from livecam.sources.image import ImageSource
from livecam.sources.synthetic.pattern import SyntheticSource
from livecam.types import validate_frame
from livecam.userfiles.images import fit_frame, load_image_bgr, make_even, to_bgr8


def _imread(path: Path, flags: int = cv2.IMREAD_COLOR) -> npt.NDArray[Any]:
    """cv2.imread that fails loudly (the reference decoder for expected values)."""
    img = cv2.imread(str(path), flags)
    assert img is not None, path
    return np.asarray(img)


def _faces(testdata: Path) -> list[Path]:
    return sorted((testdata / "faces").iterdir())


def test_every_test_face_loads_at_native_size(testdata: Path) -> None:
    files = _faces(testdata)
    assert len(files) >= 12
    for path in files:
        frame = load_image_bgr(path)
        validate_frame(frame, path.name)
        raw = _imread(path, cv2.IMREAD_UNCHANGED)
        assert frame.shape[:2] == raw.shape[:2], path.name


def test_grayscale_group_photo_gives_three_equal_channels(testdata: Path) -> None:
    path = testdata / "faces" / "group_solvay_conference_1927.png"
    gray = _imread(path, cv2.IMREAD_UNCHANGED)
    assert gray.ndim == 2
    frame = load_image_bgr(path)
    assert frame.shape == (2171, 3000, 3)
    for c in range(3):
        np.testing.assert_array_equal(frame[:, :, c], gray)


def test_rgba_png_keeps_channel_order(testdata: Path) -> None:
    rgba = load_image_bgr(testdata / "faces" / "obama_speech_rgba.png")
    jpeg = load_image_bgr(testdata / "faces" / "obama_speech_2009.jpg")
    assert rgba.shape == jpeg.shape == (1200, 626, 3)
    # same picture: channels line up (a swapped R/B would differ by far more)
    diff = np.abs(rgba.astype(np.int16) - jpeg.astype(np.int16)).mean()
    swapped = np.abs(rgba[:, :, ::-1].astype(np.int16) - jpeg.astype(np.int16)).mean()
    assert diff < 8 < swapped


def test_rgba_alpha_is_composited_over_black(testdata: Path, tmp_path: Path) -> None:
    bgra = _imread(testdata / "faces" / "codait_bryan.png", cv2.IMREAD_UNCHANGED)
    assert bgra.shape == (115, 115, 4)
    alpha = np.tile(np.linspace(0, 255, 115).round().astype(np.uint8), (115, 1))
    bgra[:, :, 3] = alpha
    path = tmp_path / "faded.png"
    assert cv2.imwrite(str(path), bgra)
    frame = load_image_bgr(path)
    expected = np.rint(bgra[:, :, :3].astype(np.float64) * alpha[:, :, None] / 255.0)
    assert np.abs(frame.astype(np.float64) - expected).max() <= 1
    assert not frame[:, 0].any()  # fully transparent column -> black
    np.testing.assert_array_equal(frame[:, -1], bgra[:, -1, :3])  # opaque column unchanged


def test_small_rgba_and_odd_sizes_become_even(testdata: Path) -> None:
    cases = {
        "codait_bryan.png": (114, 114, 3),  # 115x115 RGBA
        "obama_official_portrait_2012.jpg": (1136, 910, 3),  # 910x1137
        "obama_partial_face.jpg": (1136, 490, 3),  # 491x1137
    }
    for name, shape in cases.items():
        src = ImageSource(testdata / "faces" / name)
        src.open()
        frame = src.read()
        validate_frame(frame, name)
        assert frame.shape == shape, name
        full = load_image_bgr(testdata / "faces" / name)
        np.testing.assert_array_equal(frame, full[: shape[0], : shape[1]])  # cropped, not resampled


def test_image_source_fits_requested_size(testdata: Path) -> None:
    src = ImageSource(
        testdata / "faces" / "obama_small_320x240.jpg", SourceConfig(spec="x", size=(640, 360))
    )
    src.open()
    assert src.read().shape == (360, 640, 3)


@pytest.mark.parametrize("kind", ["image", "face-motion"])
def test_a_huge_still_is_scaled_down_once_with_a_warning(
    testdata: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """Without --size, a 3000x2171 group photo becomes a 1920 px stream (scaled at open,
    not per frame); with --size it is fitted to that size as before."""
    photo = testdata / "faces" / "group_solvay_conference_1927.png"
    src: Source = (
        ImageSource(photo)
        if kind == "image"
        else SyntheticSource(SourceConfig(spec="synthetic", face_motion=str(photo)))
    )
    with caplog.at_level(logging.WARNING, logger="livecam.userfiles.images"):
        src.open()
        frames = [src.read() for _ in range(3)]
    src.close()
    assert all(f.shape == (1388, 1920, 3) for f in frames)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "3000x2171" in warnings[0] and "--size" in warnings[0]
    assert photo.name in warnings[0]
    sized = ImageSource(photo, SourceConfig(spec=str(photo), size=(640, 480)))
    sized.open()
    assert sized.read().shape == (480, 640, 3)


def test_sixteen_bit_pngs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    gray16 = rng.integers(0, 65536, (40, 60), dtype=np.uint16)
    gray16[0, :4] = [0, 128, 65535, 257 * 100]
    bgr16 = rng.integers(0, 65536, (40, 60, 3), dtype=np.uint16)
    bgra16 = np.dstack([bgr16, np.full((40, 60), 65535, np.uint16)])
    for name, img in {"g.png": gray16, "c.png": bgr16, "a.png": bgra16}.items():
        path = tmp_path / name
        assert cv2.imwrite(str(path), img)
        assert _imread(path, cv2.IMREAD_UNCHANGED).dtype == np.uint16
        frame = load_image_bgr(path)
        validate_frame(frame, name)
        colour = np.repeat(img[:, :, None], 3, axis=2) if img.ndim == 2 else img[:, :, :3]
        expected = np.rint(colour.astype(np.float64) / 257.0)
        np.testing.assert_array_equal(frame, expected.astype(np.uint8))
    assert load_image_bgr(tmp_path / "g.png")[0, :4, 0].tolist() == [0, 0, 255, 100]


def _write_palette_png(path: Path, index_rows: list[bytes], palette: bytes, trns: bytes) -> None:
    """A real 8-bit palette PNG (colour type 3), written byte by byte."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    h, w = len(index_rows), len(index_rows[0])
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)) + chunk(b"PLTE", palette)
    if trns:
        body += chunk(b"tRNS", trns)
    pixels = zlib.compress(b"".join(b"\x00" + row for row in index_rows))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))


def test_palette_png_with_and_without_transparency(tmp_path: Path) -> None:
    palette = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255])  # RGB red, green, blue
    rows = [bytes((x + y) % 3 for x in range(6)) for y in range(4)]
    opaque, clear = tmp_path / "p.png", tmp_path / "pt.png"
    _write_palette_png(opaque, rows, palette, b"")
    _write_palette_png(clear, rows, palette, bytes([0, 128, 255]))  # red clear, green half
    frame = load_image_bgr(opaque)
    assert frame.shape == (4, 6, 3)
    assert frame[0, :3].tolist() == [[0, 0, 255], [0, 255, 0], [255, 0, 0]]
    frame = load_image_bgr(clear)
    assert frame[0, :3].tolist() == [[0, 0, 0], [0, 128, 0], [255, 0, 0]]


def _exif_orientation_segment(orientation: int) -> bytes:
    """An APP1 Exif segment holding only the Orientation tag (little-endian TIFF)."""
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff = b"II*\x00" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0)
    payload = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload


def test_jpeg_exif_orientation_is_applied(testdata: Path, tmp_path: Path) -> None:
    src = _imread(testdata / "faces" / "obama_small_320x240.jpg")
    ok, jpeg = cv2.imencode(".jpg", src, [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    data = jpeg.tobytes()
    path = tmp_path / "phone.jpg"
    path.write_bytes(data[:2] + _exif_orientation_segment(6) + data[2:])  # 6: rotate 90 CW
    frame = load_image_bgr(path)
    plain = np.asarray(cv2.imdecode(jpeg, cv2.IMREAD_COLOR))
    assert frame.shape == (320, 240, 3)
    np.testing.assert_array_equal(frame, cv2.rotate(plain, cv2.ROTATE_90_CLOCKWISE))


def test_unreadable_images_raise_naming_the_file(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10)
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    text = tmp_path / "notes.jpg"
    text.write_text("not a picture")
    for path in (corrupt, empty, text):
        with pytest.raises(SourceError) as err:
            load_image_bgr(path)
        assert path.name in err.value.message
        assert "PNG" in err.value.hint and "JPEG" in err.value.hint
    with pytest.raises(SourceError) as err:
        load_image_bgr(tmp_path / "missing.png")
    assert "does not exist" in err.value.message
    with pytest.raises(SourceError):
        ImageSource(corrupt).open()


def test_to_bgr8_array_kinds() -> None:
    f = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    out = to_bgr8(f)
    validate_frame(out, "float")
    assert out[0, 0].tolist() == [0, 0, 0] and out[2, 3].tolist() == [255, 255, 255]
    big = np.array([[-5.0, 300.0], [128.4, 12.6]])
    assert to_bgr8(big)[:, :, 1].tolist() == [[0, 255], [128, 13]]
    assert to_bgr8(np.array([[True, False], [False, True]]))[:, :, 2].tolist() == [
        [255, 0],
        [0, 255],
    ]
    one = np.arange(16, dtype=np.uint8).reshape(4, 4, 1)
    np.testing.assert_array_equal(to_bgr8(one)[:, :, 0], one[:, :, 0])
    view = np.zeros((10, 10, 3), np.uint8)[:, ::2]  # not contiguous
    assert to_bgr8(view).flags.c_contiguous
    rgba = np.full((4, 4, 4), 200, np.uint8)
    before = rgba.copy()
    to_bgr8(rgba)
    np.testing.assert_array_equal(rgba, before)  # the input is never modified
    for bad in (np.zeros((4, 4, 2), np.uint8), np.zeros(5, np.uint8), np.zeros((1, 4), np.uint8)):
        with pytest.raises(FrameFormatError):
            to_bgr8(bad)


def test_fit_frame_cover_and_contain(testdata: Path) -> None:
    portrait = load_image_bgr(testdata / "faces" / "obama_speech_2009.jpg")  # 626x1200
    cover = fit_frame(portrait, (320, 240))
    assert cover.shape == (240, 320, 3)
    # cover: width scaled to 320 exactly, the middle rows kept
    scaled = cv2.resize(portrait, (320, round(1200 * 320 / 626)), interpolation=cv2.INTER_AREA)
    y0 = (scaled.shape[0] - 240) // 2
    np.testing.assert_array_equal(cover, scaled[y0 : y0 + 240])
    contain = fit_frame(portrait, (640, 360), "contain")
    assert contain.shape == (360, 640, 3)
    inner = cv2.resize(portrait, (188, 360), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(contain[:, 226:414], inner)  # whole picture, centred
    assert make_even(np.zeros((5, 7, 3), np.uint8)).shape == (4, 6, 3)
