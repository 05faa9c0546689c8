"""Messages that say what really happened: a huge image is refused with its size (or, a
JPEG, decoded reduced) instead of "no frame within 10 s"; an absurd PNG header is one
clean line, not an OpenCV assertion; a corrupt model is called corrupt (with the command
that fixes it) and not downloaded over; a huge bad value is echoed cut, not whole.

Real files: PNGs written byte by byte (valid files: a 1-bit 20000x20000 image compresses
to about 50 kB), a real JPEG, the real SCRFD model from testdata with one byte changed.
"""

from __future__ import annotations

import re
import shutil
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from cli_output import one_line_error

from livecam.cli.main import main
from livecam.errors import ModelError
from livecam.models.store import ModelStore
from livecam.userfiles.images import MAX_DECODE_PIXELS, load_image_bgr

SMALL = [
    "run",
    "--source",
    "synthetic",
    "--size",
    "160x120",
    "--frames",
    "2",
    "-q",
    "--sink",
    "null",
]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def black_png(path: Path, width: int, height: int, rows: bool = True) -> Path:
    """A valid 1-bit grayscale PNG of ``width`` x ``height`` (``rows`` False: no pixel
    data, only the header's claim)."""
    packer = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)
    data = b"".join(packer.compress(row) for _ in range(height if rows else 0)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", data)
    path.write_bytes(png + _chunk(b"IEND", b""))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main([*SMALL, *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("as_what", ["--source", "--face"])
def test_a_huge_png_is_refused_with_its_size(
    tmp_path: Path, as_what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    big = black_png(tmp_path / "big.png", 20000, 20000)
    args = ["--source", str(big)] if as_what == "--source" else ["--face", str(big)]
    code, err = run(capsys, *args, *(["--source", "synthetic"] if as_what == "--face" else []))
    line = one_line_error(err)
    assert code == 2 and "20000x20000" in line and "too large to decode" in line
    assert "no frame" not in err


def test_an_absurd_png_header_is_one_clean_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for w, h in ((3_000_000, 3_000_000), (2_000_000_000, 1)):
        absurd = black_png(tmp_path / "absurd.png", w, h, rows=False)
        code, err = run(capsys, "--source", str(absurd))
        assert code == 2 and f"{w}x{h}" in one_line_error(err)
        assert "cv2.error" not in err and "Assertion" not in err and "OpenCV" not in err


def test_a_png_opencv_refuses_is_one_clean_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A header our reader does not parse (the IHDR chunk renamed) reaches the decoder."""
    png = black_png(tmp_path / "odd.png", 64, 64).read_bytes()
    (tmp_path / "odd.png").write_bytes(png[:12] + b"IHDQ" + png[16:])
    code, err = run(capsys, "--source", str(tmp_path / "odd.png"))
    assert code == 2 and "odd.png" in one_line_error(err)
    assert "Assertion" not in err


def test_a_huge_jpeg_is_decoded_reduced(tmp_path: Path) -> None:
    side = int((MAX_DECODE_PIXELS * 1.2) ** 0.5) // 8 * 8
    gray = np.full((side, side), 128, np.uint8)
    gray[: side // 2] = 30  # a top half darker: the picture survives the reduction
    path = tmp_path / "big.jpg"
    ok, data = cv2.imencode(".jpg", gray)
    assert ok
    path.write_bytes(data.tobytes())
    del gray, data
    frame = load_image_bgr(path)
    assert frame.shape == (side // 2, side // 2, 3)
    assert frame[: side // 8].mean() < 60 and frame[-side // 8 :].mean() > 100


def test_a_corrupt_model_is_called_corrupt_and_not_downloaded(
    tmp_path: Path, testdata: Path
) -> None:
    """What a run starting or changing its preset asks (``replace_bad=False``)."""
    models = tmp_path / "models"
    models.mkdir()
    bad = Path(shutil.copy(testdata / "models" / "scrfd_500m_kps.onnx", models))
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF  # bit rot: same size, other bytes
    bad.write_bytes(bytes(data))
    store = ModelStore(models_dir=models, data_dir=tmp_path / "data")
    with pytest.raises(ModelError) as caught:
        store.require(["scrfd-500m"], download=True, accept_licence=True, replace_bad=False)
    error = caught.value
    assert "corrupt" in error.message and "could not be downloaded" not in error.message
    assert "livecam models fetch scrfd-500m" in error.hint and "models verify" in error.hint
    assert bad.read_bytes() == bytes(data), "the file is left for the user to look at"
    assert sorted(p.name for p in models.iterdir()) == [bad.name], "no download started"


@pytest.mark.parametrize(
    "field",
    [
        '[source]\nfps = "{v}"',
        '[source]\nspec = "{v}"',
        '[source]\nspec = "synthetic"\n[output]\nsinks = ["{v}"]',
    ],
)
def test_a_huge_bad_value_is_echoed_cut(
    tmp_path: Path, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = "b" * 900_000
    # the huge value is the only problem: the null sink (the auto sink finds no virtual
    # camera and no window here, a second cause of its own)
    null = "" if "[output]" in field else '\n[output]\nsinks = ["null"]'
    (tmp_path / "c.toml").write_text(field.replace("{v}", huge) + null + "\n")
    code = main(["run", "--frames", "2", "-q", "--config", str(tmp_path / "c.toml")])
    err = capsys.readouterr().err
    line = one_line_error(err)
    assert code == 2 and re.search(r"\.\.\. \(9000\d\d characters\)", line), line[:300]
    assert len(err) < 1500


def test_a_long_option_value_is_echoed_cut(capsys: pytest.CaptureFixture[str]) -> None:
    for option in ("--fps", "--sink", "--source", "--label"):
        code, err = run(capsys, option, "a" * 100_000)
        assert code == 2 and len(one_line_error(err)) < 800, (option, err[:300])
